// Patterns of dotted tensor names ("layers.#.proj.qkv.weight"), matched whole by plain character
// comparison: the one matcher the weight-name mappers (model/weight_names.cpp) and the
// other-model detection (pipeline/model_files.cpp) use. A model file holds hundreds to thousands
// of names and every load classifies each of them against several tables; std::regex took
// milliseconds for that, this takes microseconds.
//
// A pattern is literal characters and these, each capturing what it matched ($1, $2, ... in
// order; $0 is the whole name):
//   #        one or more ASCII digits
//   ?        one lowercase part of the name: one or more of a-z, 0-9 and '_'
//   *        any characters but line breaks (none too)
//   {a|b|c}  one of the literal alternatives
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace moss {

class NamePattern {
 public:
  explicit NamePattern(std::string pattern);
  // `name` matched whole; `captures` (when given) gets $0, $1, ... as views into `name`.
  bool match(std::string_view name, std::vector<std::string_view>* captures = nullptr) const;
  // The pattern matches `name` from its start or from just after any of its dots (with no line
  // break before it): a part of a longer path ("visual.*" matches "model.visual.blocks.0.norm1.weight").
  bool match_any_part(std::string_view name) const;
  const std::string& text() const { return pattern_; }

 private:
  std::string pattern_;
};

// `format` with $0..$9 replaced by the captures; throws std::logic_error for a $N not captured.
std::string expand_captures(const std::string& format, const std::vector<std::string_view>& captures);

}  // namespace moss
