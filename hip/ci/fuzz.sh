#!/usr/bin/env bash
# libFuzzer runs (issue 9): builds the targets of hip/fuzz with clang (ASan + UBSan + fuzzer
# instrumentation of the host library); replays the inputs of past findings in
# hip/fuzz/regressions/<target>/ once each, then runs each target for a bounded time from its
# seeds in hip/fuzz/corpus/<target>/. Fails on any crash, leak, timeout or out-of-memory;
# prints the executions per target. New inputs go to BUILD_DIR/fuzz-corpus/<target>/ (the seeds in the
# repository are only read); findings to BUILD_DIR/fuzz-findings/.
# Usage: hip/ci/fuzz.sh [BUILD_DIR] [TARGET...]   (default: build-fuzz beside hip/, all targets)
# Environment: FUZZ_SECONDS per target (default 60), JOBS (default 2), CXX (default clang++-19).
set -euo pipefail
HIP=$(cd "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$HIP/../build-fuzz}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(safetensors_header config_json tokenizer_encode tokenizer_json)
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
JOBS=${JOBS:-2}

cmake -S "$HIP" -B "$BUILD" -DHIP_TARGET=host -DMOSSINFER_FUZZ=ON -DMOSSINFER_TESTS=OFF -DMOSSINFER_HIP_TOOLS=OFF \
  -DCMAKE_CXX_COMPILER="${CXX:-clang++-19}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]/#/fuzz_}"

export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
summary=()
status=0
for t in "${TARGETS[@]}"; do
  corpus=$BUILD/fuzz-corpus/$t
  findings=$BUILD/fuzz-findings/$t
  mkdir -p "$corpus" "$findings"
  log=$BUILD/fuzz-findings/$t.log
  failing=()
  for input in "$HIP/fuzz/regressions/$t"/*; do
    [[ -f $input ]] || continue
    "$BUILD/fuzz/fuzz_$t" -timeout=10 -rss_limit_mb=2048 "$input" >"$findings/replay.log" 2>&1 ||
      failing+=("$(basename -- "$input"): $(grep -m1 '^SUMMARY' "$findings/replay.log" || echo crashed)")
  done
  if ((${#failing[@]})); then
    status=1
    summary+=("fuzz_$t: ${#failing[@]} regression input(s) fail:")
    for f in "${failing[@]}"; do summary+=("    $f"); done
  fi
  echo "== fuzz_$t for $FUZZ_SECONDS s"
  rc=0
  "$BUILD/fuzz/fuzz_$t" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$HIP/fuzz/dict/$t.dict" -artifact_prefix="$findings/" "$corpus" "$HIP/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if ((rc == 0)); then
    summary+=("fuzz_$t: ${runs:-?} executions, no crash or leak")
  else
    status=1
    summary+=("fuzz_$t: FAILED (exit $rc) after ${runs:-?} executions; input in $findings/, log $log")
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*finding|.*broken its promise|.*promise|MS: |artifact_prefix|Test unit written)' "$log" | head -20 || true
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
