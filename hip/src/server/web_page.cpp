#include "server/web_page.h"

#include <cstddef>
#include <cstdio>
#include <string>

// generated/web_page_data.cpp, from web/index.html.
extern const unsigned char kWebPageHtml[];
extern const std::size_t kWebPageHtml_size;

namespace moss {

namespace {

// The page with the server's defaults in its fields' placeholders ({{steps}}, {{cfg}}, {{size}},
// {{seed}}): what a field left empty gets, so that a person sees that the default 1024x1024 is
// what an empty size asks for.
std::string page_with_defaults(const GenerationRequest& d) {
  std::string page(reinterpret_cast<const char*>(kWebPageHtml), kWebPageHtml_size);
  char cfg[32];
  std::snprintf(cfg, sizeof cfg, "%g", double(d.cfg));
  const std::pair<std::string, std::string> values[] = {
      {"{{steps}}", std::to_string(d.steps)},
      {"{{cfg}}", cfg},
      {"{{size}}", std::to_string(d.output_width()) + " × " + std::to_string(d.output_height())},
      {"{{seed}}", d.seed_drawn ? "drawn at random" : "server default: " + std::to_string(d.seed)}};
  for (const auto& [token, value] : values)
    for (size_t at = page.find(token); at != std::string::npos; at = page.find(token, at + value.size()))
      page.replace(at, token.size(), value);
  return page;
}

}  // namespace

void install_web_page(GuardedServer& server, const GenerationRequest& defaults) {
  server.Get("/", [page = page_with_defaults(defaults)](const httplib::Request&, httplib::Response& res) {
    res.set_content(page, "text/html; charset=utf-8");
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
