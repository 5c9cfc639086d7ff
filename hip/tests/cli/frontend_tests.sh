#!/usr/bin/env bash
# Records and many images per load (issue 18), on the host backend with the tiny model: the
# record keeps requested and run steps; an image remade from its PNG (--from-png) is the same
# image byte for byte; --batch-count, --prompt-file / --negative-file, --jobs and --progress
# json; and their bad inputs. Usage: frontend_tests.sh BINARY MODEL_DIR
source "$(dirname "$0")/script_setup.sh" "$@"
export MOSSINFER_BACKEND=host
# check NAME COMMAND...: passes when the command succeeds.
check() {
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name" "$*"; fi
}
run() { (cd "$WORK" && "$BIN" --model "$MODEL" "$@"); }
small=(--size 32x32 --skip-layers 2)
pixels_equal() { python3 "$HERE/png_tool.py" same-pixels "$WORK/$1" "$WORK/$2"; }
text_chunk() { python3 "$HERE/png_tool.py" text "$WORK/$1" "$2"; }

# expect_refusal NAME STATUS PATTERN ARGS...: the run fails with STATUS, says PATTERN, writes nothing.
expect_refusal() {
  local name=$1 status=$2 pattern=$3
  shift 3
  rm -rf "$WORK/refused" && mkdir -p "$WORK/refused"
  local out rc
  out=$(cd "$WORK/refused" && "$BIN" --model "$MODEL" "$@" 2>&1 </dev/null)
  rc=$?
  if [[ $rc -ne $status ]]; then bad "$name" "exit $rc, expected $status: $(head -2 <<<"$out")"
  elif ! grep -qE -- "$pattern" <<<"$out"; then bad "$name" "output does not match /$pattern/: $(head -2 <<<"$out")"
  elif [[ -n $(ls -A "$WORK/refused") ]]; then bad "$name" "left files: $(ls -A "$WORK/refused")"
  else ok "$name"; fi
}

# --- records: requested and run steps -------------------------------------------------------
run --prompt "a red apple" "${small[@]}" --steps 200 --shift 12 --seed 7 -o snapped.png --quiet
params=$(text_chunk snapped.png parameters)
gen=$(text_chunk snapped.png generation)
check record-parameters-requested grep -q 'Steps: 200, Steps run: [0-9]' <<<"$params"
run_steps=$(sed -n 's/.*Steps run: \([0-9]*\).*/\1/p' <<<"$params")
check record-snapped-fewer test "$run_steps" -lt 200
check record-json-steps python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["steps"] == 200 and j["steps_run"] == int(sys.argv[2])' "$gen" "$run_steps"

# --- --from-png: the same image, byte for byte, for several settings -------------------------
replay_case() {
  local name=$1
  shift
  run --prompt "a lighthouse at dusk" --negative "blurry" "$@" -o "orig-$name.png" --quiet &&
    run --from-png "orig-$name.png" -o "again-$name.png" --quiet
  check "replay-$name" pixels_equal "orig-$name.png" "again-$name.png"
  check "replay-$name-record" python3 "$HERE/png_tool.py" same-record "$WORK/orig-$name.png" "$WORK/again-$name.png"
}
replay_case plain "${small[@]}" --steps 3
replay_case snapped "${small[@]}" --steps 200 --shift 12
replay_case random-seed "${small[@]}" --steps 2 --seed -1
replay_case cfg1 "${small[@]}" --steps 2 --cfg 1 --shift 3.7
replay_case odd-floats --steps 3 --cfg 4.35 --shift 0.3 --size 48x32 --max-seq 40 --skip-layers 1,3
replay_case no-skip --size 32x32 --steps 2 --skip-layers ""
# Samplers that add noise from the seed's stream, and A1111's spellings (issue 48).
replay_case ancestral-beta "${small[@]}" --steps 3 --sampler euler_ancestral --scheduler beta
replay_case dpmpp-sde-karras "${small[@]}" --steps 2 --sampler "DPM++ SDE" --scheduler Karras
# UniPC by its A1111 name: the record names uni_pc, and a replay runs it again.
replay_case unipc-exponential "${small[@]}" --steps 3 --sampler UniPC --scheduler exponential
check record-unipc python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["sampler"] == "uni_pc" and j["scheduler"] == "exponential", j' "$(text_chunk orig-unipc-exponential.png generation)"
# More digits than a float holds: the record's value is the float that ran, read back as it is.
replay_case many-digits "${small[@]}" --steps 2 --cfg 2.718281828459045 --shift 0.000123456789
# Flags on the command line override the record's fields.
run --replay orig-plain.png --seed 99 -o override.png --quiet
check replay-override python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["seed"] == 99 and j["prompt"] == "a lighthouse at dusk"' "$(text_chunk override.png generation)"
run --prompt "a lighthouse at dusk" --negative "blurry" "${small[@]}" --steps 3 --seed 99 -o direct99.png --quiet
check replay-override-image pixels_equal override.png direct99.png
run --from-png orig-plain.png --size 48x48 -o resized.png --quiet
check replay-override-size python3 "$HERE/png_tool.py" size "$WORK/resized.png" 48x48
run "${small[@]}" --prompt x --steps 1 --no-metadata -o nometa.png --quiet
expect_refusal replay-no-record 2 'no generation record' --from-png ../nometa.png -o out.png
expect_refusal replay-missing 2 '--from-png .*nope.png' --from-png ../nope.png -o out.png
echo "not a png" >"$WORK/fake.png"
expect_refusal replay-not-png 2 '--from-png .*fake.png' --from-png ../fake.png -o out.png
expect_refusal replay-twice 2 'given twice' --from-png ../orig-plain.png --replay ../orig-plain.png -o out.png
expect_refusal replay-no-value 2 '--from-png needs a value' -o out.png --from-png

# --- --batch-count: one load, seeds seed, seed+1, ...; numbered outputs ------------------------
run --prompt "a red apple" "${small[@]}" --steps 2 --seed 5 --batch-count 3 -o 'b%03d.png' 2>"$WORK/batch.err"
check batch-files test -f "$WORK/b001.png" -a -f "$WORK/b002.png" -a -f "$WORK/b003.png"
check batch-loads-once test "$(grep -c '^device:' "$WORK/batch.err")" -eq 1
check batch-summary grep -q '^batch: 3 images' "$WORK/batch.err"
run --prompt "a red apple" "${small[@]}" --steps 2 --seed 6 -o single6.png --quiet
check batch-seed-plus-one pixels_equal b002.png single6.png
check batch-own-record python3 -c 'import json,sys; assert json.loads(sys.argv[1])["seed"] == 7' "$(text_chunk b003.png generation)"
run --prompt "a red apple" "${small[@]}" --steps 1 --batch-count 2 -o suffix.png --latent-out suffix.npy --quiet
check batch-suffixes test -f "$WORK/suffix-0001.png" -a -f "$WORK/suffix-0002.png" -a -f "$WORK/suffix-0002.npy"
expect_refusal batch-zero 2 "--batch-count '0'" --prompt x -o out.png --batch-count 0
expect_refusal batch-word 2 "--batch-count 'x'" --prompt x -o out.png --batch-count x
expect_refusal batch-bad-pattern 2 "a % in a file name" --prompt x -o 'out%s.png' --batch-count 2
expect_refusal batch-size-refused 2 '--batch-size: not supported' --prompt x -o out.png --batch-size 2

# --- --prompt-file / --negative-file ---------------------------------------------------------
printf 'a lighthouse at dusk\n' >"$WORK/prompt.txt"
printf 'blurry\n' >"$WORK/negative.txt"
run --prompt-file prompt.txt --negative-file negative.txt "${small[@]}" --steps 3 -o fromfile.png --quiet
check prompt-file-same-image pixels_equal fromfile.png orig-plain.png
printf 'blurry' | (cd "$WORK" && "$BIN" --model "$MODEL" --prompt-file prompt.txt --negative-file - "${small[@]}" --steps 3 -o stdin.png --quiet)
check negative-stdin pixels_equal stdin.png orig-plain.png
expect_refusal prompt-file-missing 2 '--prompt-file nope.txt' --prompt-file nope.txt -o out.png
expect_refusal prompt-and-file 2 '--prompt and --prompt-file given together' --prompt x --prompt-file ../prompt.txt -o out.png
expect_refusal two-stdin 2 'stdin' --prompt-file - --negative-file - -o out.png
printf '\xff\xfe' >"$WORK/badutf.txt"
expect_refusal prompt-file-utf8 2 'UTF-8' --prompt-file ../badutf.txt -o out.png

# --- --jobs FILE.jsonl: the server's fields, one model load -----------------------------------
cat >"$WORK/jobs.jsonl" <<'EOF'
{"prompt": "a lighthouse at dusk", "negative_prompt": "blurry", "steps": 3, "width": 32, "height": 32, "skip_layers": [2], "output": "job-a.png"}

{"prompt": "a red apple", "steps": 2, "seed": 6, "width": 32, "height": 32, "skip_layers": "2", "sampler_name": "Euler", "enable_hr": false, "styles": []}
{"prompt": "a red apple", "steps": 2, "seed": 5, "width": 32, "height": 32, "skip_layers": [2], "n_iter": 2, "output": "job-c%d.png"}
EOF
run --jobs jobs.jsonl -o 'job-rest-%d.png' 2>"$WORK/jobs.err"
check jobs-loads-once test "$(grep -c '^device:' "$WORK/jobs.err")" -eq 1
check jobs-line-a pixels_equal job-a.png orig-plain.png
check jobs-default-output pixels_equal job-rest-1.png single6.png
check jobs-n-iter pixels_equal job-c2.png single6.png
(cd "$WORK" && "$BIN" --model "$MODEL" --jobs - --quiet) <<<'{"prompt": "a red apple", "steps": 2, "seed": 6, "width": 32, "height": 32, "skip_layers": [2], "output": "job-stdin.png"}'
check jobs-stdin pixels_equal job-stdin.png single6.png
# override_settings.sd_model_checkpoint: the model's title (the record's "model", the server's
# /sd-models title) is accepted as the server accepts it.
title=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["model"])' "$(text_chunk orig-plain.png generation)")
python3 -c 'import json,sys; print(json.dumps({"prompt": "a red apple", "steps": 2, "seed": 6, "width": 32, "height": 32, "skip_layers": [2], "override_settings": {"sd_model_checkpoint": sys.argv[1]}, "output": "job-title.png"}))' "$title" >"$WORK/title.jsonl"
run --jobs title.jsonl --quiet
check jobs-checkpoint-title pixels_equal job-title.png single6.png
jobs_refusal() {
  local name=$1 pattern=$2 line=$3
  printf '%s\n' "$line" >"$WORK/bad.jsonl"
  expect_refusal "jobs-$name" 2 "$pattern" --jobs ../bad.jsonl -o 'out%d.png'
}
jobs_refusal bad-json 'bad.jsonl:1: not valid JSON' '{"prompt": '
jobs_refusal not-object 'bad.jsonl:1: .*JSON object' '[1, 2]'
jobs_refusal no-prompt 'bad.jsonl:1: prompt: required' '{"steps": 3}'
jobs_refusal steps 'bad.jsonl:1: steps .0.: must be between 1 and 1000' '{"prompt": "x", "steps": 0}'
jobs_refusal steps-type 'bad.jsonl:1: steps: expected a number' '{"prompt": "x", "steps": true}'
# Numeric text converts as in A1111 (docs/clients.md); text that is not a number is refused.
jobs_refusal steps-text 'bad.jsonl:1: steps .many.: not an integer' '{"prompt": "x", "steps": "many"}'
jobs_refusal width 'bad.jsonl:1: width .30.: image sides must be multiples of 16' '{"prompt": "x", "width": 30}'
jobs_refusal sampler "sampler_name 'LMS': unknown sampler" '{"prompt": "x", "sampler_name": "LMS"}'
jobs_refusal sampler-index "sampler_index 'PLMS': unknown sampler" '{"prompt": "x", "sampler_index": "PLMS"}'
jobs_refusal scheduler "scheduler 'kl_optimal': unknown scheduler" '{"prompt": "x", "scheduler": "kl_optimal"}'
jobs_refusal hires 'enable_hr: not supported: hires fix' '{"prompt": "x", "enable_hr": true}'
jobs_refusal lora "prompt: unknown LoRA 'style' in <lora:style:1> .no --lora-dir" '{"prompt": "x <lora:style:1>"}'
jobs_refusal lora-weight "prompt: <lora:style:x>: the weight 'x' must be a number" '{"prompt": "x <lora:style:x>"}'
jobs_refusal hypernet 'prompt: not supported: extra networks' '{"prompt": "x <hypernet:h:1>"}'
jobs_refusal skip-beyond 'bad.jsonl:1: skip_layers 9: block 9 does not exist \(the DiT has 4 blocks, 0 to 3\)' '{"prompt": "x", "skip_layers": [9]}'
jobs_refusal too-many 'at most 64 per request' '{"prompt": "x", "batch_size": 8, "n_iter": 9}'
printf '{"prompt": "x", "output": "same.png"}\n{"prompt": "y", "output": "same.png"}\n' >"$WORK/same.jsonl"
expect_refusal jobs-same-file 2 'two images would write same.png' --jobs ../same.jsonl
printf '{"prompt": "x"}\n' >"$WORK/noout.jsonl"
expect_refusal jobs-no-output 2 'noout.jsonl:1: no "output" field' --jobs ../noout.jsonl
: >"$WORK/empty.jsonl"
expect_refusal jobs-empty 2 'no requests' --jobs ../empty.jsonl -o 'out%d.png'
# Like every file the program reads (io/files.h), a jobs file must be a regular file (- is stdin).
expect_refusal jobs-special-file 2 'not a regular file \(a character device\)' --jobs /dev/null -o 'out%d.png'
# Every image's output paths are checked before any compute: a later line's bad folder stops the
# run before the first image is made.
printf '{"prompt": "x", "output": "first.png"}\n{"prompt": "y", "output": "nodir/second.png"}\n' >"$WORK/laterbad.jsonl"
expect_refusal jobs-later-output-checked-first 2 'nodir' --jobs ../laterbad.jsonl "${small[@]}" --steps 1
expect_refusal jobs-and-prompt 2 '--jobs and --prompt given together' --jobs ../jobs.jsonl --prompt x
expect_refusal jobs-and-replay 2 '--jobs and --from-png given together' --jobs ../jobs.jsonl --from-png ../orig-plain.png

# --- outputs all or none, per image (io/output_files.h) ---------------------------------------
# stop_at_vae NAME PAUSES ARGS...: runs with MOSSINFER_TEST_PAUSE=vae:5 in a fresh folder and sends
# SIGINT once `pause at vae` has been printed PAUSES times; sets rc.
stop_at_vae() {
  local name=$1 pauses=$2
  shift 2
  rm -rf "$WORK/$name" && mkdir -p "$WORK/$name"
  (cd "$WORK/$name" && exec env MOSSINFER_TEST_PAUSE=vae:5 "$BIN" --model "$MODEL" "$@" 2>"$WORK/$name.err") &
  local pid=$! waited=0
  while [[ $(grep -c '^pause at vae' "$WORK/$name.err" 2>/dev/null) -lt $pauses ]] && ((waited < 3000)); do
    sleep 0.05
    waited=$((waited + 1))
  done
  kill -INT "$pid"
  wait "$pid"
  rc=$?
}
# Stopped in the first image's decode: not even its latents (encoded before the decode) are left.
stop_at_vae stop-first 1 --prompt x "${small[@]}" --steps 1 --batch-count 2 -o 'i%d.png' --latent-out 'i%d.npy'
check batch-stopped-first-status test "$rc" -eq 130
check batch-stopped-first-nothing test -z "$(ls -A "$WORK/stop-first")"
# Stopped in the second image's decode: the first image's PNG and latents stay, complete; nothing
# of the second, no temporaries.
stop_at_vae stop-second 2 --prompt x "${small[@]}" --steps 1 --batch-count 2 -o 'i%d.png' --latent-out 'i%d.npy'
check batch-stopped-second-status test "$rc" -eq 130
check batch-stopped-second-keeps-first test "$(ls -A "$WORK/stop-second" | tr '\n' ' ')" = "i1.npy i1.png "
run --prompt x "${small[@]}" --steps 1 --seed 42 -o whole1.png --quiet
check batch-stopped-second-first-complete pixels_equal stop-second/i1.png whole1.png
# The text `done:` line of the finished image names the files it wrote (they stay).
check batch-stopped-second-done-names-files grep -Eq '^done: .*; wrote i1\.npy, i1\.png$' "$WORK/stop-second.err"

# --- the drawn seed: printed once, even with --quiet; a batch prints its first image's seed ----
out=$(run --prompt x "${small[@]}" --steps 1 --seed -1 --batch-count 2 -o 'drawn%d.png' --quiet 2>&1)
seed=$(sed -nE 's/^seed: ([0-9]+) \(drawn at random\)$/\1/p' <<<"$out")
check batch-drawn-seed-printed test "$(grep -c '^seed: ' <<<"$out")" -eq 1 -a -n "$seed"
check batch-drawn-seed-first python3 -c 'import json,sys; assert json.loads(sys.argv[1])["seed"] == int(sys.argv[2])' "$(text_chunk drawn1.png generation)" "$seed"
check batch-drawn-seed-second python3 -c 'import json,sys; assert json.loads(sys.argv[1])["seed"] == int(sys.argv[2]) + 1' "$(text_chunk drawn2.png generation)" "$seed"
printf '{"prompt": "x", "seed": -1, "width": 32, "height": 32, "steps": 1, "skip_layers": [2], "output": "jdrawn.png"}\n' >"$WORK/drawn.jsonl"
out=$(run --jobs drawn.jsonl --quiet 2>&1)
seed=$(sed -nE 's/^seed: ([0-9]+) \(drawn at random; image 1\)$/\1/p' <<<"$out")
check jobs-drawn-seed-printed test -n "$seed"
check jobs-drawn-seed-recorded python3 -c 'import json,sys; assert json.loads(sys.argv[1])["seed"] == int(sys.argv[2])' "$(text_chunk jdrawn.png generation)" "$seed"

# --- --progress json: one JSON object per line on stderr -------------------------------------
run --prompt "a red apple" "${small[@]}" --steps 2 --batch-count 2 -o 'p%d.png' --progress json 2>"$WORK/progress.jsonl"
check progress-json python3 "$HERE/png_tool.py" progress "$WORK/progress.jsonl" 2
(cd "$WORK" && "$BIN" --model "$MODEL" --prompt x --steps 0 -o out.png --progress json 2>"$WORK/progress-error.jsonl")
check progress-json-error python3 -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; assert e[-1]["event"] == "error" and e[-1]["exit_status"] == 2 and "--steps" in e[-1]["message"]' "$WORK/progress-error.jsonl"
expect_refusal progress-bad 2 "--progress 'xml'" --prompt x -o out.png --progress xml

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
