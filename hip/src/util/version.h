// The engine's version and the git commit it was built from. The values live in one
// generated file (util/version.cpp.in), so a new commit recompiles that file alone.
#pragma once

namespace moss {

const char* engine_semver();  // "0.1.0"
const char* engine_git_hash();

}  // namespace moss
