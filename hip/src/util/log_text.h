// The one escaping of text on its way to the log (pipeline/reporter.h prints every text line
// through it): a log line is one line of the terminal or file it goes to, whatever a client put
// in a prompt, a sampler name or a header. Control characters (C0, DEL, and the C1 range U+0080
// to U+009F, which some terminals take as escape sequences) become visible escapes (\n, \r, \t,
// \e, \xNN); bytes that are not UTF-8 become \xNN. Everything else, backslashes included, is
// left as it is: a literal "\n" typed by a client stays two characters on the same line.
#pragma once
#include <string>

namespace moss {

std::string log_escape(const std::string& text);

}  // namespace moss
