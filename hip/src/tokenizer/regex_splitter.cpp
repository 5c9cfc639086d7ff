#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex_splitter.h"

#include <pcre2.h>

#include "tokenizer/onig_compat.h"
#include "util/error.h"

namespace moss {

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

RegexSplitter::RegexSplitter(const std::string& pattern, bool literal, const std::string& origin)
    : impl_(std::make_unique<Impl>()) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (literal) options |= PCRE2_LITERAL;
  const std::string source = literal ? pattern : oniguruma_to_pcre2(pattern);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(), options, &error,
                              &error_offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw failure(origin + ": pre-tokenizer regex does not compile (offset " + std::to_string(error_offset) +
                  " of its PCRE2 form \"" + source + "\"): " + reinterpret_cast<const char*>(message));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() = default;
RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;

bool RegexSplitter::uses_jit() const { return impl_->jit; }

void RegexSplitter::split(std::string_view text, std::vector<PieceSpan>& out) const {
  // Match data is per call so that concurrent encodes never share it.
  struct MatchData {
    pcre2_match_data* p;
    explicit MatchData(const pcre2_code* code) : p(pcre2_match_data_create_from_pattern(code, nullptr)) {
      if (!p) throw std::bad_alloc();
    }
    ~MatchData() { pcre2_match_data_free(p); }
  } md(impl_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md.p);
  size_t pos = 0, gap_start = 0;
  while (pos < text.size()) {
    int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos, 0, md.p, nullptr)
                        : PCRE2_ERROR_JIT_STACKLIMIT;
    // The interpreter keeps its backtracking state on the heap, so it also takes what would
    // overflow the JIT's fixed stack (none of Qwen's alternatives nests deeply enough).
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
      rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md.p, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw failure(std::string("pre-tokenizer regex failed: ") + reinterpret_cast<const char*>(message));
    }
    const size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {
      // An empty match splits nothing; step over one character and search again.
      pos = begin + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xc0) == 0x80) ++pos;
      continue;
    }
    if (begin > gap_start) out.push_back(PieceSpan{gap_start, begin});
    out.push_back(PieceSpan{begin, end});
    gap_start = pos = end;
  }
  if (gap_start < text.size()) out.push_back(PieceSpan{gap_start, text.size()});
}

}  // namespace moss
