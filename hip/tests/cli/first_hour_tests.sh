#!/usr/bin/env bash
# What a newcomer meets first (issue 51), on the tiny model: the no-device error naming the host
# backend; MOSSINFER_BACKEND, MOSSINFER_KERNELS and MOSSINFER_INT8_QK values refused by name for
# every command on every backend; the default --skip-layers on a model with fewer blocks named as the default,
# with the blocks that exist; a jobs line's refusal by the model named FILE:LINE and field; the
# `done:` lines naming their files; step events naming their device with --device lists.
# Usage: first_hour_tests.sh BINARY MODEL_DIR
source "$(dirname "$0")/script_setup.sh" "$@"

# expect NAME STATUS PATTERN [ENV=V...] -- ARGS...: the exit status and a match of the output.
expect() {
  local name=$1 status=$2 pattern=$3 envs=()
  shift 3
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  local out rc
  out=$(cd "$WORK" && env -u MOSSINFER_BACKEND -u MOSSINFER_KERNELS -u MOSSINFER_INT8_QK XDG_CACHE_HOME="$WORK/cache" "${envs[@]}" \
    "$BIN" "$@" 2>&1)
  rc=$?
  verdict "$name" "$(mismatch "$status" "$pattern" "$rc" "$out")" "$out"
}
HOST=MOSSINFER_BACKEND=host
base=(--model "$MODEL" --prompt "a red apple" --size 32x32)
run=("${base[@]}" --steps 1)

# --- no device: the error says how to run without one ------------------------------------------
if "$BIN" --list-devices | grep -qx 'no HIP devices'; then
  expect no-device 1 '^moss-infer-hip: no supported device: .*MOSSINFER_BACKEND=host runs the host reference backend' \
    -- "${run[@]}" --skip-layers 2 -o out.png
  expect no-device-hip 1 'MOSSINFER_BACKEND=host runs' MOSSINFER_BACKEND=hip -- "${run[@]}" --skip-layers 2 -o out.png
  expect no-device-all 1 '^moss-infer-hip: --device all: no HIP devices found .*MOSSINFER_BACKEND=host' \
    -- "${run[@]}" --skip-layers 2 -o out.png --device all
fi

# --- the backend variables: every command, every backend, a class of bad values ------------------
# (The model's path has no blank: ctest passes the source tree's.)
commands=("run:--model $MODEL --prompt apple --size 32x32 --steps 1 --skip-layers 2 -o out.png"
  "serve:serve --model $MODEL --port 1" "self-test:self-test" "bench:bench --stages-only")
for c in "${commands[@]}"; do
  name=${c%%:*}
  read -r -a args <<<"${c#*:}"
  for v in cpu HOST " host" "host " gpu cuda rocm 1; do
    expect "$name MOSSINFER_BACKEND='$v'" 2 "MOSSINFER_BACKEND=$v: expected 'hip' or 'host'" "MOSSINFER_BACKEND=$v" -- "${args[@]}"
  done
  for backend in host hip; do
    for v in foo Native portable2 " native" fast; do
      expect "$name MOSSINFER_KERNELS='$v' ($backend)" 2 "MOSSINFER_KERNELS=$v: expected 'native' or 'portable'" \
        "MOSSINFER_BACKEND=$backend" "MOSSINFER_KERNELS=$v" -- "${args[@]}"
    done
  done
  for v in yes 2 " 1" on true; do
    expect "$name MOSSINFER_INT8_QK='$v'" 2 "MOSSINFER_INT8_QK=$v: expected '0' or '1'" $HOST "MOSSINFER_INT8_QK=$v" \
      -- "${args[@]}"
  done
done
# The accepted values still run (the host backend ignores the kernel path it is given).
for v in native portable ""; do
  expect "run MOSSINFER_KERNELS='$v' on the host" 0 '^done: ' $HOST "MOSSINFER_KERNELS=$v" -- "${run[@]}" --skip-layers 2 -o ok.png
done
# MOSSINFER_INT8_QK's values run too (a bf16 DiT's attention is never int8: docs/attention_int8_qk.md).
for v in 0 1 ""; do
  expect "run MOSSINFER_INT8_QK='$v' on the host" 0 '^done: ' $HOST "MOSSINFER_INT8_QK=$v" -- "${run[@]}" --skip-layers 2 -o ok.png
done

# --- the default --skip-layers on a model without block 22 ------------------------------------
# Named as the default with the blocks that exist; never as a --skip-layers the user typed.
expect skip-default 2 '^moss-infer-hip: the default --skip-layers "22" skips block 22, which this model does not have \(the DiT has 4 blocks, 0 to 3\): give --skip-layers with blocks from 0 to 3, or --skip-layers "" to skip none$' \
  $HOST -- "${run[@]}" -o out.png
expect skip-default-batch 2 '^moss-infer-hip: the default --skip-layers "22"' $HOST -- "${run[@]}" -o 'b%d.png' --batch-count 2
for v in 4 22 "1,9" "0,3,4" 1023; do
  last=${v##*,}
  expect "skip-given '$v'" 2 "^moss-infer-hip: --skip-layers $v: block $last does not exist \(the DiT has 4 blocks, 0 to 3\)$" \
    $HOST -- "${run[@]}" -o out.png --skip-layers "$v"
done
[[ ! -e $WORK/out.png && ! -e $WORK/b1.png ]] && ok "skip refusals wrote nothing" ||
  bad "a skip refusal wrote an image"

# serve: a --skip-layers given that the model lacks stops it before it listens (exit 2); the
# default on the tiny model is a warning naming the blocks, and the server runs.
# A build without the server (no cpp-httplib: the AMD build's root) says so for `serve`; these
# cases are then skipped (ctest server_unavailable_message checks that message).
if "$BIN" serve --help >/dev/null 2>&1; then
  out=$(cd "$WORK" && MOSSINFER_BACKEND=host timeout 30 "$BIN" serve --model "$MODEL" --skip-layers 9 --port 1 2>&1)
  rc=$?
  [[ $rc -eq 2 ]] && grep -q '^moss-infer-hip: --skip-layers 9: block 9 does not exist (the DiT has 4 blocks, 0 to 3)$' <<<"$out" &&
    ok "serve --skip-layers 9 refused" || bad "serve --skip-layers 9" "$rc $out"
  # (Stopped with SIGTERM once it listens; at most 60 s.)
  (cd "$WORK" && MOSSINFER_BACKEND=host exec timeout -s TERM 60 "$BIN" serve --model "$MODEL" --port $((20000 + RANDOM % 20000)) \
    2>"$WORK/serve.err") &
  serve_pid=$!
  for _ in $(seq 600); do grep -q '^listening on' "$WORK/serve.err" 2>/dev/null && break; sleep 0.1; done
  kill -TERM "$serve_pid" 2>/dev/null
  wait "$serve_pid"
  out=$(cat "$WORK/serve.err")
  grep -q 'warning: the default --skip-layers "22" skips block 22, which this model does not have (the DiT has 4 blocks, 0 to 3).*requests without "skip_layers" are refused (422)' <<<"$out" &&
    grep -q '^listening on' <<<"$out" && ok "serve warns of the default" ||
    bad "serve default warning" "$out"
else
  echo "SKIP serve cases: this build has no server"
fi

# --- a jobs line the model refuses: FILE:LINE and the field, never a flag --------------------
printf '%s\n' '{"prompt": "a", "skip_layers": [2], "width": 32, "height": 32, "steps": 1, "output": "j1.png"}' \
  '' '{"prompt": "b", "skip_layers": [7], "output": "j2.png"}' >"$WORK/skip.jsonl"
expect jobs-skip-line 2 '^moss-infer-hip: skip.jsonl:3: skip_layers 7: block 7 does not exist \(the DiT has 4 blocks, 0 to 3\)$' \
  $HOST -- --model "$MODEL" --jobs skip.jsonl
# The README's own example line: skip_layers [22] on the tiny model.
printf '%s\n' '{"prompt": "a cat", "n_iter": 4, "seed": 10, "skip_layers": [22], "output": "cat-%d.png"}' >"$WORK/readme.jsonl"
expect jobs-readme-line 2 '^moss-infer-hip: readme.jsonl:1: skip_layers 22: block 22 does not exist' $HOST -- --model "$MODEL" --jobs readme.jsonl
# A line without skip_layers takes the default: named as the line's skip_layers, never as --skip-layers.
printf '%s\n' '{"prompt": "a", "output": "j3.png"}' >"$WORK/default.jsonl"
expect jobs-default-skip 2 '^moss-infer-hip: default.jsonl:1: skip_layers 22: block 22 does not exist' $HOST -- --model "$MODEL" --jobs default.jsonl
out=$(cd "$WORK" && MOSSINFER_BACKEND=host "$BIN" --model "$MODEL" --jobs default.jsonl 2>&1)
grep -q -- '--skip-layers' <<<"$out" && bad "jobs refusal names --skip-layers" "$out" ||
  ok "jobs refusal names no flag"
[[ ! -e $WORK/j1.png ]] && ok "jobs refusal wrote nothing" ||
  bad "jobs refusal wrote j1.png"

# --- done: lines name the files; step events name the device with several engines ------------
expect done-names-files 0 '^done: .*; wrote d\.npy, d\.png$' $HOST -- "${run[@]}" --skip-layers 2 -o d.png --latent-out d.npy
out=$(cd "$WORK" && MOSSINFER_BACKEND=host "$BIN" "${base[@]}" --skip-layers 2 --steps 2 --batch-count 2 -o 'n%d.png' 2>&1)
for i in 1 2; do
  grep -Eq "^done: .*; wrote n$i\.png$" <<<"$out" && ok "batch done line $i names n$i.png" ||
    bad "batch done line $i" "$out"
done
(cd "$WORK" && MOSSINFER_BACKEND=host "$BIN" "${base[@]}" --skip-layers 2 --steps 2 --batch-count 2 -o 'm%d.png' \
  --device 0,1 --progress json 2>"$WORK/devices.jsonl")
if python3 - "$WORK/devices.jsonl" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
steps = [e for e in events if e["event"] == "step"]
assert len(steps) == 4, steps
assert all(e.get("device") in ("0", "1") for e in steps), steps
# Each image's steps carry the device its image event names.
PY
then ok "step events carry the device"; else bad "step events"; fi
out=$(cd "$WORK" && MOSSINFER_BACKEND=host "$BIN" "${base[@]}" --skip-layers 2 --steps 2 --batch-count 2 -o 'k%d.png' --device 0,1 2>&1)
[[ $(grep -Ec '^denoise [12]/2 [0-9.]+ \(device [01]\)$' <<<"$out") -eq 4 ]] &&
  ok "text step lines name the device" || bad "text steps" "$out"
(cd "$WORK" && MOSSINFER_BACKEND=host "$BIN" "${base[@]}" --skip-layers 2 --steps 2 -o one.png --progress json 2>"$WORK/one.jsonl")
python3 -c 'import json,sys; s=[json.loads(l) for l in open(sys.argv[1])]; assert all("device" not in e for e in s if e["event"] == "step") and any(e["event"] == "step" for e in s)' "$WORK/one.jsonl" &&
  ok "one engine: no device in steps" || bad "one engine's steps"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
