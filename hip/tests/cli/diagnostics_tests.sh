#!/usr/bin/env bash
# `moss-infer-hip self-test` and `bench` without a device (the host build, CI): every class of bad
# flag is refused with the flag named and exit 2; with no device both say "no supported device"
# and exit 1; a generation on the host backend never runs the self-test (nothing is written under
# the cache folder). Usage: diagnostics_tests.sh BINARY MODEL_DIR
source "$(dirname "$0")/script_setup.sh" "$@"

# expect NAME STATUS PATTERN -- ARGS...: the exit status and a match of the combined output.
expect() {
  local name=$1 status=$2 pattern=$3
  shift 4
  local out rc
  out=$(cd "$WORK" && XDG_CACHE_HOME=$WORK/cache "$BIN" "$@" 2>&1)
  rc=$?
  verdict "$name" "$(mismatch "$status" "$pattern" "$rc" "$out")" "$out"
}

for sub in self-test bench; do
  expect "$sub help" 0 "usage: moss-infer-hip $sub" -- $sub --help
  expect "$sub unknown flag" 2 "unknown option '--frobnicate'.*|usage: moss-infer-hip $sub" -- $sub --frobnicate
  expect "$sub positional" 2 "unknown option 'extra'" -- $sub extra
  expect "$sub --device without value" 2 "--device: needs a value" -- $sub --device
  for v in x -1 256 1.5 "" " 1" 0x1; do
    expect "$sub --device '$v'" 2 "--device '$v': " -- $sub --device "$v"
  done
done
expect "self-test --full with a value" 2 "--full: takes no value" -- self-test --full=yes
for v in 100x100 1024 0x1024 1024x 4112x16 16x4112 axb 1024x1024x16 -16x16; do
  expect "bench --size '$v'" 2 "--size '$v': " -- bench --size "$v"
done
for v in 0 1 101 x 2.5; do expect "bench --steps '$v'" 2 "--steps '$v': " -- bench --steps "$v"; done
for v in 0 -1 4096.5 x 1e3; do expect "bench --vram-budget '$v'" 2 "--vram-budget '$v': " -- bench --vram-budget "$v"; done
expect "bench --stages-only with a value" 2 "--stages-only: takes no value" -- bench --stages-only=1
expect "bench help names --stages-only" 0 "\[--stages-only\]" -- bench --help
expect "bench --int8 with a value" 2 "--int8: takes no value" -- bench --int8=1
expect "bench help names --int8" 0 "\[--int8\]" -- bench --help
expect "bench --steps=3 --size=1024x1024 --help" 0 "usage: moss-infer-hip bench" -- bench --steps=3 --size=512x512 --help

if "$BIN" --list-devices | grep -qx 'no HIP devices'; then
  for sub in self-test "self-test --full" bench "bench --size 512x512 --steps 2" "bench --stages-only" "bench --int8"; do
    expect "$sub without a device" 1 '^moss-infer-hip: no supported device: ' -- $sub
  done
  expect "self-test --device 0 without a device" 2 '--device 0: no such HIP device' -- self-test --device 0
fi

# The host backend runs no self-test: nothing under the cache folder after a generation.
rm -rf "$WORK/cache"
expect "host-backend run" 0 'done' -- --model "$MODEL" --prompt "a red apple" --size 32x32 --steps 1 --skip-layers "" \
  --latent-out "$WORK/x.npy"
[[ ! -e $WORK/cache/moss-infer-hip ]] && ok "host run wrote no self-test cache" ||
  bad "host run wrote $WORK/cache/moss-infer-hip"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
