#include "server/web_page.h"

#include <cstddef>
#include <cstdio>
#include <random>
#include <string>

#include "server/base64.h"

// generated/web_page_data.cpp, from web/index.html.
extern const unsigned char kWebPageHtml[];
extern const std::size_t kWebPageHtml_size;

namespace moss {
namespace {

// A fresh nonce per answer (CSP level 2): 128 bits from the system's random source.
std::string fresh_nonce() {
  std::random_device source;
  std::string bytes;
  for (int i = 0; i < 4; ++i) {
    const unsigned v = source();
    for (int k = 0; k < 4; ++k) bytes += char((v >> (8 * k)) & 255);
  }
  return base64_encode(bytes);
}

// `page` with `nonce` on its <script> and <style> elements (the page has one of each, and no
// inline event handlers or style attributes: the policy would refuse them).
std::string page_with_nonce(std::string page, const std::string& nonce) {
  for (const std::string tag : {"<script>", "<style>"}) {
    const size_t at = page.find(tag);
    if (at != std::string::npos)
      page.replace(at, tag.size(), tag.substr(0, tag.size() - 1) + " nonce=\"" + nonce + "\">");
  }
  return page;
}

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
    const std::string nonce = fresh_nonce();
    res.set_content(page_with_nonce(page, nonce), "text/html; charset=utf-8");
    // The page loads nothing from anywhere: its script and style are its own, allowed by this
    // answer's nonce (an injected inline script or handler has none, so it does not run), its
    // images data of this server's answers (blob: URLs made by the page, which its download link
    // and a reader of the page may fetch). No site may frame it (a click on a hidden frame of it
    // would start or interrupt a generation). The policy says so to the browser, which then
    // refuses anything else.
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'nonce-" + nonce + "'; style-src 'nonce-" + nonce +
                       "'; img-src blob: data:; connect-src 'self' blob:; form-action 'none'; base-uri 'none'; "
                       "frame-ancestors 'none'");
    res.set_header("X-Frame-Options", "DENY");  // frame-ancestors for browsers older than CSP 2
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Cache-Control", "no-store");  // a nonce is good for one answer only
  });
}

}  // namespace moss
