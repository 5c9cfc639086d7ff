#!/usr/bin/env bash
# amd_bench.sh [BIN_DIR] [OUT_DIR]: a thin wrapper over the program's own diagnostics (README
# "Self-test and benchmark"), kept for the docs and scripts that name it. It runs, from BIN_DIR
# (default build; a release's bin/ works too):
#   moss-infer-hip self-test --full               every kernel against its host replay, real shapes
#   moss-infer-hip bench --size 512x512 / 1024x1024  kernel rates and the DiT step on random weights
# and writes OUT_DIR/amd-bench-<date>.txt (the bench summary blocks, the file to send back) beside
# the logs. Default OUT_DIR amd-bench-results. Exit status: 0 when every step passed.
set -uo pipefail
bin=${1:-build}
out=${2:-amd-bench-results}
[[ -x $bin/moss-infer-hip ]] || { echo "amd_bench: $bin/moss-infer-hip not found" >&2; exit 2; }
mkdir -p "$out"
summary=$out/amd-bench-$(date +%Y%m%d-%H%M).txt
status=0
"$bin/moss-infer-hip" self-test --full >"$out/self-test.log" 2>&1 || status=1
sed -n '/^self-test summary/,$p' "$out/self-test.log" | tee "$summary"
for size in 512x512 1024x1024; do
  "$bin/moss-infer-hip" bench --size "$size" >"$out/bench-$size.log" 2>&1 || status=1
  sed -n '/^```$/,/^```$/p' "$out/bench-$size.log" | tee -a "$summary"
done
echo "summary: $summary (logs beside it); exit $status"
exit $status
