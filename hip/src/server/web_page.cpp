#include "server/web_page.h"

#include <cstddef>

// generated/web_page_data.cpp, from web/index.html.
extern const unsigned char kWebPageHtml[];
extern const std::size_t kWebPageHtml_size;

namespace moss {

void install_web_page(GuardedServer& server) {
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(reinterpret_cast<const char*>(kWebPageHtml), kWebPageHtml_size, "text/html; charset=utf-8");
    // The page loads nothing from anywhere: its script and style are inline, its images data of
    // this server's answers (blob: URLs made by the page, which its download link and a reader of
    // the page may fetch). The policy says so to the browser, which then refuses anything else.
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                   "img-src blob: data:; connect-src 'self' blob:; form-action 'none'; base-uri 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Cache-Control", "no-cache");  // a new binary's page, not the browser's old copy
  });
}

}  // namespace moss
