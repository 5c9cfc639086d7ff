#!/usr/bin/env bash
# Paths, streams, replayed PNGs, option values and signals by class (issue 35). Like
# property_tests.sh, each class generates its cases from lists and every case checks the
# contract of the README: exit status, a message naming the problem (and, for a jobs file, its
# FILE:LINE), no output and no temporary left, nothing written outside the named outputs.
#
#   paths        output paths spelled with ., .., //, links and NUL bytes, from each source (-o,
#                --latent-out, a --batch-count pattern, a jobs line's "output", -o numbering a
#                jobs file): one file under two spellings is refused as one file, a NUL is
#                refused naming the line and field, folders that cannot hold a new file (a
#                deleted working directory, /proc, a file, a dangling link) are refused before
#                any compute, and the valid spellings write where they say.
#   json-nul     a raw NUL byte in a jobs line and in a model config: refused as FILE:LINE.
#   stdin        each reader of stdin (--prompt-file -, --negative-file -, --jobs -) with stdin
#                closed, a directory, /dev/zero and empty; files beyond the size limits.
#   png-header   a replayed PNG whose header claims sizes from 1x1 to 2^31-1 square (the pixels
#                are never decoded), a damaged record, a file cut short, record values the
#                checks refuse (blamed on the record's field).
#   flag-values  every option that takes a value, given a value that looks like an option: it
#                stays a value (never re-read as an option, by --from-png or --progress either).
#   signals      SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGVTALRM, SIGPROF at the stage
#                boundaries and in the writes: 128 + N, the message, nothing left. SIGKILL's
#                leftovers removed by the next run into the folder, a live run's kept.
#   stdout       the printing commands to /dev/full and to a closed stdout: exit 1 with a
#                message; a closed stderr cannot leak progress lines into an output.
# Prints one PASS/FAIL line per case, a count per class, then "N passed, M failed".
# Usage: paths_streams_tests.sh BINARY MODEL_DIR
BIN=$1
MODEL=$2
CASE_TIMEOUT=${CASE_TIMEOUT:-30}
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
PNG_TOOL=$(cd "$(dirname -- "${BASH_SOURCE[0]}")/../cli" && pwd)/png_tool.py

quick=(--size 32x32 --steps 2 --skip-layers 2)
declare -A class_cases=()
count() { class_cases[$1]=$((${class_cases[$1]:-0} + 1)); }

# check_case NAME WHY: PASS when WHY is empty.
check_case() { if [[ -z $2 ]]; then pass "$1"; else fail "$1" "$2" "${OUT:-}"; fi; }

# ran_compute: the run got as far as the text encoder (a refusal must come before it).
ran_compute() { grep -q "^text encoder" <<<"$OUT"; }

# only_files DIR NAMES...: WHY-text when DIR (not recursively, dot files included) holds
# anything but NAMES.
only_files() {
  local dir=$1 want got
  shift
  want=""
  (($#)) && want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
  got=$(ls -A -- "$dir" | sort | tr '\n' ' ')
  [[ $got == "$want" ]] || echo "files in $dir: '$got', expected '$want'"
}

is_png() { [[ -f $1 && $(head -c 8 -- "$1" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; }

# ---- paths -----------------------------------------------------------------------------------
# Spellings of CASE/D/x.png, relative to CASE (@ABS/: CASE itself); L is a link to D, D/sub a
# subfolder.
same_spellings=(D/./x.png D//x.png ./D/x.png D/sub/../x.png L/x.png D/./sub/..//x.png @ABS/D/x.png @ABS//L/../D/x.png)
paths_case() {
  new_case "$1"
  mkdir -p "$CASE/D/sub"
  ln -s D "$CASE/L"
}
spell() { if [[ $1 == @ABS/* ]]; then printf '%s' "$CASE/${1#@ABS/}"; else printf '%s' "$1"; fi; }
# One file under two spellings, from each source: refused before compute, nothing written.
for spelling in "${same_spellings[@]}"; do
  shown=${spelling//\//_}
  # Two jobs lines.
  name=paths-jobs-same-$shown
  paths_case "$name"
  printf '{"prompt": "a", "output": "D/x.png"}\n{"prompt": "b", "output": "%s"}\n' "$(spell "$spelling")" >"$CASE/jobs.jsonl"
  run_bin --model "$MODEL" "${quick[@]}" --jobs jobs.jsonl
  why=""
  if ((RC != 2)); then why="exit $RC, expected 2"
  elif ! grep -qE "two images would write .*jobs.jsonl:1: output and jobs.jsonl:2: output" <<<"$OUT"; then
    why="no message naming both lines"
  elif ran_compute; then why="refused only after the text encoder ran"
  else why=$(only_files "$CASE/D" sub); fi
  check_case "$name" "$why"
  count paths
  # A jobs line and -o numbering the lines without "output".
  name=paths-jobs-pattern-same-$shown
  paths_case "$name"
  pattern=${spelling/x.png/x%d.png}
  printf '{"prompt": "a", "output": "D/x1.png"}\n{"prompt": "b"}\n' >"$CASE/jobs.jsonl"
  run_bin --model "$MODEL" "${quick[@]}" --jobs jobs.jsonl -o "$(spell "$pattern")"
  why=""
  if ((RC != 2)); then why="exit $RC, expected 2"
  elif ! grep -q "two images would write" <<<"$OUT"; then why="no 'two images would write' message"
  else why=$(only_files "$CASE/D" sub); fi
  check_case "$name" "$why"
  count paths
  # -o and --latent-out cannot meet (.png and .npy); a valid spelling writes D/x.png itself.
  name=paths-cli-valid-$shown
  paths_case "$name"
  run_bin --model "$MODEL" --prompt a "${quick[@]}" -o "$(spell "$spelling")"
  why=""
  if ((RC != 0)); then why="exit $RC, expected 0"
  elif ! is_png "$CASE/D/x.png"; then why="D/x.png was not written"
  else why=$(only_files "$CASE/D" sub x.png); fi
  check_case "$name" "$why"
  count paths
  # A batch pattern spelled the same way writes D/x1.png and D/x2.png.
  name=paths-batch-valid-$shown
  paths_case "$name"
  run_bin --model "$MODEL" --prompt a "${quick[@]}" --batch-count 2 -o "$(spell "$pattern")"
  why=""
  if ((RC != 0)); then why="exit $RC, expected 0"
  else why=$(only_files "$CASE/D" sub x1.png x2.png); fi
  check_case "$name" "$why"
  count paths
done
# A NUL anywhere in a jobs line's output (JSON's \u0000): refused naming the line and the field;
# the file before the NUL is never touched.
nul_outputs=('victim.txt\u0000.png' '\u0000.png' 'D\u0000/x.png' 'D/x\u0000\u0000.png' 'D/x.png\u0000' '\u0000')
for i in "${!nul_outputs[@]}"; do
  name=paths-nul-$i
  paths_case "$name"
  printf 'keep me' >"$CASE/victim.txt"
  printf '{"prompt": "a", "output": "D/ok.png"}\n\n{"prompt": "b", "output": "%s"}\n' "${nul_outputs[$i]}" >"$CASE/jobs.jsonl"
  run_bin --model "$MODEL" "${quick[@]}" --jobs jobs.jsonl
  why=""
  if ((RC != 2)); then why="exit $RC, expected 2"
  elif ! grep -qE "^moss-infer-hip: jobs.jsonl:3: output" <<<"$OUT"; then why="no 'jobs.jsonl:3: output' message"
  elif [[ $(cat "$CASE/victim.txt") != "keep me" ]]; then why="victim.txt was changed"
  else why=$(only_files "$CASE/D" sub); fi
  check_case "$name" "$why"
  count paths
done
# Folders that cannot hold a new file, from each source: refused before any compute, naming
# the source (a jobs line as FILE:LINE: output). /proc is the system folder that refuses new files
# everywhere; /sys is not in the list: in a container /sys may be a plain folder root can write.
bad_folders=(missing/x.png file/x.png dangling/x.png /proc/x.png /proc/self/x.png /dev/null/x.png)
for folder in "${bad_folders[@]}"; do
  shown=${folder//\//_}
  for source in -o --latent-out batch jobs; do
    name=paths-folder-$source$shown
    paths_case "$name"
    : >"$CASE/file"
    ln -s nowhere "$CASE/dangling"
    path=$folder
    case $source in
      -o) args=(--prompt a -o "$path"); pattern="^moss-infer-hip: -o " ;;
      --latent-out) path=${path%.png}.npy; args=(--prompt a --latent-out "$path"); pattern="^moss-infer-hip: --latent-out " ;;
      batch) path=${path%.png}%d.png; args=(--prompt a --batch-count 2 -o "$path"); pattern="^moss-infer-hip: -o \(image 1\) " ;;
      jobs)
        printf '{"prompt": "a", "output": "ok.png"}\n{"prompt": "b", "output": "%s"}\n' "$path" >"$CASE/jobs.jsonl"
        args=(--jobs jobs.jsonl); pattern="^moss-infer-hip: jobs.jsonl:2: output " ;;
    esac
    run_bin --model "$MODEL" "${quick[@]}" "${args[@]}"
    why=""
    if ((RC != 2)); then why="exit $RC, expected 2"
    elif ! grep -qE -- "$pattern" <<<"$OUT"; then why="no message matching /$pattern/"
    elif ran_compute; then why="refused only after the text encoder ran"
    else why=$(only_files "$CASE" D L file dangling $([[ $source == jobs ]] && echo jobs.jsonl)); fi
    check_case "$name" "$why"
    count paths
  done
done
# The working directory deleted under the run: found before any compute.
for source in -o --latent-out; do
  name=paths-deleted-cwd$source
  new_case "$name"
  mkdir "$CASE/gone"
  ext=.png
  [[ $source == --latent-out ]] && ext=.npy
  OUT=$(cd "$CASE/gone" && rmdir "$CASE/gone" &&
    env MOSSINFER_BACKEND=host timeout -k 5 "$CASE_TIMEOUT" "$BIN" --model "$MODEL" --prompt a "${quick[@]}" \
      "$source" "x$ext" 2>&1)
  RC=$?
  why=""
  if ((RC != 2)); then why="exit $RC, expected 2"
  elif ! grep -q "has been deleted" <<<"$OUT"; then why="no 'has been deleted' message"
  elif ran_compute; then why="refused only after the text encoder ran"; fi
  check_case "$name" "$why"
  count paths
done
# A link in the output's place is replaced, its target kept: the run writes only what it names.
name=paths-link-target-kept
paths_case "$name"
printf 'keep me' >"$CASE/victim.txt"
ln -s ../victim.txt "$CASE/D/x.png"
run_bin --model "$MODEL" --prompt a "${quick[@]}" -o D/x.png
why=""
if ((RC != 0)); then why="exit $RC, expected 0"
elif [[ $(cat "$CASE/victim.txt") != "keep me" ]]; then why="the link's target was written"
elif [[ -L $CASE/D/x.png ]] || ! is_png "$CASE/D/x.png"; then why="D/x.png is not the new PNG"; fi
check_case "$name" "$why"
count paths
# A jobs line's folder problem is named by FILE:LINE.
name=paths-jobs-line-named
paths_case "$name"
printf '{"prompt": "a", "output": "D/a.png"}\n{"prompt": "b", "output": "nodir/b.png"}\n' >"$CASE/j.jsonl"
run_bin --model "$MODEL" "${quick[@]}" --jobs j.jsonl
check_case "$name" "$( ((RC == 2)) || echo "exit $RC"; grep -q '^moss-infer-hip: j.jsonl:2: output nodir/b.png: directory nodir does not exist$' <<<"$OUT" || echo "message")"
count paths

# ---- NUL bytes in JSON input -----------------------------------------------------------------
# A raw NUL would end the JSON parser's input: what follows it must not be ignored silently.
nul_lines=('{"prompt": "a", "output": "D/a.png"}\0{"output": "../victim.txt"}' '{"prompt": "a\0", "output": "D/a.png"}'
           '\0{"prompt": "a", "output": "D/a.png"}' '{"prompt": "a", "output": "D/a.png"}\0')
for i in "${!nul_lines[@]}"; do
  name=json-nul-jobs-$i
  paths_case "$name"
  printf 'keep me' >"$CASE/victim.txt"
  { printf '{"prompt": "z", "output": "D/z.png"}\n'; printf "${nul_lines[$i]}\n"; } >"$CASE/jobs.jsonl"
  run_bin --model "$MODEL" "${quick[@]}" --jobs jobs.jsonl
  why=""
  if ((RC != 2)); then why="exit $RC, expected 2"
  elif ! grep -qE "^moss-infer-hip: jobs.jsonl:2: a NUL byte at column [0-9]+ \(not valid in JSON\)$" <<<"$OUT"; then
    why="no 'jobs.jsonl:2: a NUL byte' message"
  else why=$(only_files "$CASE/D" sub); fi
  check_case "$name" "$why"
  count json-nul
done
for file in model_index.json transformer/config.json text_encoder/config.json vae/config.json \
            scheduler/scheduler_config.json; do
  name=json-nul-config-${file//\//-}
  new_case "$name"
  copy_model
  own "$M/$file"
  lines=$(wc -l <"$M/$file")
  printf '\0{"garbage": ' >>"$M/$file"
  expect "$name" 1 "$(re "$file"):$((lines + 1)): a NUL byte at column [0-9]+ \(not valid in JSON\)" \
    -- --model "$M" --prompt a "${quick[@]}" -o out.png
  count json-nul
done

# ---- stdin -----------------------------------------------------------------------------------
# stdin_run STATE ARGS...: the binary with stdin in STATE (closed, directory, zero, empty).
stdin_run() {
  local state=$1
  shift
  OUT=$(cd "$CASE" && {
    ((CASE_VMEM_KB > 0)) && ulimit -v "$CASE_VMEM_KB"
    case $state in
      closed) env MOSSINFER_BACKEND=host timeout -k 5 "$CASE_TIMEOUT" "$BIN" "$@" 2>&1 <&- ;;
      directory) env MOSSINFER_BACKEND=host timeout -k 5 "$CASE_TIMEOUT" "$BIN" "$@" 2>&1 <"$CASE" ;;
      zero) env MOSSINFER_BACKEND=host timeout -k 5 "$CASE_TIMEOUT" "$BIN" "$@" 2>&1 </dev/zero ;;
      empty) env MOSSINFER_BACKEND=host timeout -k 5 "$CASE_TIMEOUT" "$BIN" "$@" 2>&1 </dev/null ;;
    esac
  })
  RC=$?
}
declare -A stdin_status=([closed]=1 [directory]=1 [zero]=2)
declare -A stdin_message=([closed]="stdin is closed" [directory]="cannot read stdin \(Is a directory\)"
                          [zero]="stdin holds more than [0-9]+ MiB, the limit")
for reader in --prompt-file --negative-file --jobs; do
  for state in closed directory zero empty; do
    name=stdin$reader-$state
    new_case "$name"
    case $reader in
      --jobs) args=(--jobs - -o 'out%d.png') ;;
      --prompt-file) args=(--prompt-file - -o out.png) ;;
      --negative-file) args=(--prompt a --negative-file - -o out.png) ;;
    esac
    stdin_run "$state" --model "$MODEL" "${quick[@]}" "${args[@]}"
    why=""
    if [[ $state == empty ]]; then
      # An empty prompt or negative file is the empty text (as --prompt ""); an empty jobs
      # file holds no requests.
      if [[ $reader == --jobs ]]; then
        ((RC == 2)) && grep -q -- "--jobs -: no requests" <<<"$OUT" || why="exit $RC, expected 2 'no requests'"
      else
        ((RC == 0)) && is_png "$CASE/out.png" || why="exit $RC, expected 0 and out.png"
      fi
    elif ((RC != ${stdin_status[$state]})); then why="exit $RC, expected ${stdin_status[$state]}"
    elif ! grep -qE -- "^moss-infer-hip: $reader -: ${stdin_message[$state]}" <<<"$OUT"; then
      why="no '$reader -: ${stdin_message[$state]}' message"
    elif ran_compute; then why="refused only after the text encoder ran"
    else why=$(only_files "$CASE"); fi
    check_case "$name" "$why"
    count stdin
  done
done
# The limits on files: one byte beyond is refused before anything is read.
for t in "--prompt-file 1048577" "--negative-file 1048577" "--jobs 67108865"; do
  read -r reader size <<<"$t"
  name=limit$reader
  new_case "$name"
  truncate -s "$size" "$CASE/big"
  case $reader in
    --negative-file) args=(--prompt a "$reader" big -o out.png) ;;
    --jobs) args=(--jobs big -o 'out%d.png') ;;
    *) args=("$reader" big -o out.png) ;;
  esac
  expect "$name" 2 "^moss-infer-hip: $reader big: big: $size bytes, more than the limit of (1|64) MiB" \
    -- --model "$MODEL" "${quick[@]}" "${args[@]}"
  count stdin
done
# At the limit a prompt file is read (1 MiB of text; --max-seq keeps the run small).
name=limit-prompt-file-at-limit
new_case "$name"
head -c 1048576 /dev/zero | tr '\0' 'a' >"$CASE/p.txt"
expect "$name" 0 "done:" -- --model "$MODEL" "${quick[@]}" --max-seq 64 --prompt-file p.txt -o out.png
count stdin

# ---- replayed PNGs: header sizes, damaged records, refused record values -----------------------
new_case png-source
run_bin --model "$MODEL" --prompt "a lighthouse" "${quick[@]}" --seed 7 -o rec.png --quiet
REC=$CASE/rec.png
if ((RC != 0)) || ! is_png "$REC"; then fail png-source "could not make the record PNG" "$OUT"; fi
# A tight memory cap: decoding 20000x20000 pixels takes 1.2 GB, reading the record nothing. (A
# sanitized binary runs uncapped, lib.sh; its 1 GiB cap on one allocation plays that part.)
tight_vmem=$((CASE_VMEM_KB > 0 ? 1048576 : 0))
sizes=(1x1 32x32 20000x20000 65535x65535 1000000x1000000 2147483647x2147483647 0x0)
for size in "${sizes[@]}"; do
  name=png-header-$size
  new_case "$name"
  python3 "$PNG_TOOL" set-size "$REC" "$CASE/claims.png" "${size%x*}" "${size#*x}"
  CASE_VMEM_KB=$tight_vmem expect "$name" 0 "done:" -- --model "$MODEL" --from-png claims.png -o again.png
  [[ $RC == 0 ]] && ! python3 "$PNG_TOOL" same-pixels "$REC" "$CASE/again.png" 2>/dev/null &&
    fail "$name-same-image" "the replay is not the recorded image"
  count png-header
done
# Broken records and files: each called what it is.
png_refusal() {
  local name=$1 pattern=$2
  shift 2
  new_case "$name"
  python3 "$PNG_TOOL" "$1" "$REC" "$CASE/in.png" "${@:2}"
  expect "$name" 2 "^moss-infer-hip: --from-png in.png: $pattern" -- --model "$MODEL" --from-png in.png -o out.png
  count png-header
}
png_refusal png-damaged-record "its generation record is damaged: its (tEXt|iTXt) chunk at byte [0-9]+ fails its CRC check" damage-record
png_refusal png-cut-in-header ".*the PNG file is cut short \(its IHDR chunk at byte 8 runs past the end" cut IHDR
png_refusal png-cut-in-record ".*the PNG file is cut short \(its (tEXt|iTXt) chunk at byte [0-9]+ runs past the end" cut generation
png_refusal png-record-not-object "its generation record is not a JSON object" set-record '[1, 2]'
# Record values the checks refuse: blamed on the record's field, never on a flag not typed.
declare -A record_values=([steps]=0 [cfg]=500 [shift]=0 [width]=30 [height]=8192 [seed]='"x"'
                          [max_seq]=0 [tier]='"turbo"' [skip_layers]='[99]')
for field in steps cfg shift width height seed max_seq tier skip_layers; do
  png_refusal "png-record-$field" "the record's $field" set-field "$field" "${record_values[$field]}"
done
for t in "steps [3]" "cfg {}" "prompt true" "seed 1.5"; do
  read -r field value <<<"$t"
  png_refusal "png-record-type-$field-$value" "the record's $field" set-field "$field" "$value"
done
# A value given on the command line wins over the record's bad one.
new_case png-record-overridden
python3 "$PNG_TOOL" set-field "$REC" "$CASE/in.png" steps 0
expect png-record-overridden 0 "done:" -- --model "$MODEL" --from-png in.png --steps 2 -o out.png
count png-header

# ---- option values that look like options --------------------------------------------------------
flag_like=(--seed --steps --from-png -o --help --version --quiet -h -- - --seed=9 --progress=json --list-devices)
# The texts: the value is the text, the record's seed stays.
# Every flag-like value for --prompt; --negative shares the code path, so it takes the two that
# once overrode the record (a full run each: kept few for the sanitized build).
for text_flag in --prompt --negative; do
  values=("${flag_like[@]}")
  [[ $text_flag == --negative ]] && values=(--seed --from-png)
  for value in "${values[@]}"; do
    name=flag-value$text_flag-${value//\//_}
    new_case "$name"
    cp "$REC" "$CASE/rec.png"
    run_bin --model "$MODEL" --from-png rec.png "$text_flag" "$value" -o out.png --quiet
    why=""
    if ((RC != 0)); then why="exit $RC, expected 0"
    else
      field=${text_flag#--}
      why=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); \
assert r["seed"] == 7, "seed %s, recorded 7" % r["seed"]; \
assert r[sys.argv[2]] == sys.argv[3], "%s %r" % (sys.argv[2], r[sys.argv[2]])' \
        "$(python3 "$PNG_TOOL" text "$CASE/out.png" generation)" "$field" "$value" 2>&1 | tail -1)
    fi
    check_case "$name" "$why"
    count flag-values
  done
done
# Every other option that takes a value: the flag-like value is that option's value, refused
# (or used) as such, and named by that option, never "given twice" or taken as an action.
valued=(--model -o --latent-out --size --width --height --steps --cfg --shift --seed --skip-layers --max-seq
        --tier --vram-budget --device --batch-count --prompt-file --negative-file --jobs --progress --from-png)
for flag in "${valued[@]}"; do
  for value in --seed --version --from-png --help; do
    name=flag-value$flag-$value
    new_case "$name"
    cp "$REC" "$CASE/rec.png"
    args=(--model "$MODEL" --prompt a "${quick[@]}" -o out.png)
    [[ $flag == --from-png ]] && args=(--model "$MODEL" -o out.png)
    [[ $flag == --model ]] && args=(--prompt a "${quick[@]}" -o out.png)
    [[ $flag == -o ]] && args=(--model "$MODEL" --prompt a "${quick[@]}")
    [[ $flag == --prompt-file || $flag == --jobs ]] && args=(--model "$MODEL" "${quick[@]}" -o out.png)
    run_bin "${args[@]}" "$flag" "$value"
    why=""
    if ((RC != 2)); then why="exit $RC, expected 2"
    elif ! grep -qE -- "^moss-infer-hip: $flag[ :']" <<<"$OUT"; then why="the message does not name $flag"
    elif grep -qE "usage: |^architectures:" <<<"$OUT"; then why="the value was taken as an action"; fi
    check_case "$name" "$why"
    count flag-values
  done
done

# ---- signals ---------------------------------------------------------------------------------
declare -A more_signals=([QUIT]=131 [ALRM]=142 [USR1]=138 [USR2]=140 [XCPU]=152 [VTALRM]=154 [PROF]=155)
for sig in QUIT ALRM USR1 USR2 XCPU VTALRM PROF; do
  # Inside a stage (the denoise) and with the temporaries written (the commit's rename); the
  # four signals of property_tests.sh cover every other boundary.
  for point in denoise rename; do
    signal_at "signal-$point-$sig" "$point" "$sig" "${more_signals[$sig]}" \
      --model "$MODEL" --prompt a "${quick[@]}" -o out.png --latent-out out.npy
    count signals
  done
done
# SIGKILL in the writes leaves temporaries (nothing can catch it); the next run into the folder
# removes them once stale, and keeps a live run's.
new_case signal-kill-leftovers
start_bin MOSSINFER_TEST_PAUSE=rename:60 "$BIN" --model "$MODEL" --prompt a "${quick[@]}" -o out.png --latent-out out.npy
wait_for_line "^pause at rename$" "the pause at rename" "$CASE_TIMEOUT" && kill -KILL "$PID"
reap_bin 10 "SIGKILL"
left=$(ls -A "$CASE" | grep -c '^\.moss-infer-')
why=""
((left == 2)) || why="SIGKILL left $left temporaries, expected 2 (the case proves nothing)"
# Fresh ones (a minute has not passed) stay: their writer may live in another pid namespace.
run_bin --model "$MODEL" --prompt a "${quick[@]}" -o second.png
[[ -z $why && $(ls -A "$CASE" | grep -c '^\.moss-infer-') != 2 ]] && why="fresh temporaries of a dead writer were removed"
touch -d '-2 minutes' "$CASE"/.moss-infer-*
run_bin --model "$MODEL" --prompt a "${quick[@]}" -o third.png
[[ -z $why ]] && ((RC != 0)) && why="exit $RC"
[[ -z $why ]] && why=$(only_files "$CASE" log second.png third.png)
check_case signal-kill-leftovers "$why"
count signals
new_case signal-live-writer-kept
# The paused run's temporary is a minute "old" but its writer lives: the second run keeps it.
start_bin MOSSINFER_TEST_PAUSE=rename:8 "$BIN" --model "$MODEL" --prompt a "${quick[@]}" -o first.png
why=""
wait_for_line "^pause at rename$" "the pause at rename" "$CASE_TIMEOUT" || why=$WHY
touch -d '-2 minutes' "$CASE"/.moss-infer-* 2>/dev/null
run_bin --model "$MODEL" --prompt b "${quick[@]}" -o second.png
[[ -z $why ]] && ((RC != 0)) && why="the second run failed (exit $RC)"
[[ -z $why ]] && ! kill -0 "$PID" 2>/dev/null && why="the paused run ended before the second run's sweep (the case proves nothing)"
reap_bin "$CASE_TIMEOUT" "the pause"
[[ -z $why ]] && ((RC != 0)) && why="the paused run failed (exit $RC): its temporary was removed"
[[ -z $why ]] && why=$(only_files "$CASE" log first.png second.png)
check_case signal-live-writer-kept "$why"
count signals

# ---- stdout and stderr -------------------------------------------------------------------------
for cmd in --version --help --list-devices; do
  new_case "stdout-full$cmd"
  OUT=$(env MOSSINFER_BACKEND=host "$BIN" "$cmd" 2>&1 >/dev/full)
  RC=$?
  check_case "stdout-full$cmd" "$( ((RC == 1)) || echo "exit $RC, expected 1"; grep -q "^moss-infer-hip: cannot write the output to stdout (No space left on device)$" <<<"$OUT" || echo "no message")"
  count stdout
  new_case "stdout-closed$cmd"
  OUT=$(env MOSSINFER_BACKEND=host "$BIN" "$cmd" 2>&1 >&-)
  RC=$?
  check_case "stdout-closed$cmd" "$( ((RC == 1)) || echo "exit $RC, expected 1"; grep -q "stdout is closed" <<<"$OUT" || echo "no message")"
  count stdout
done
# With stderr closed, the progress lines must not land in a file the run opens in its place.
new_case stderr-closed
(cd "$CASE" && MOSSINFER_BACKEND=host "$BIN" --model "$MODEL" --prompt a "${quick[@]}" --seed 3 -o closed.png 2>&-)
RC=$?
(cd "$CASE" && MOSSINFER_BACKEND=host "$BIN" --model "$MODEL" --prompt a "${quick[@]}" --seed 3 -o open.png 2>/dev/null)
why=""
((RC == 0)) || why="exit $RC"
[[ -z $why ]] && ! python3 "$PNG_TOOL" same-pixels "$CASE/closed.png" "$CASE/open.png" >/dev/null 2>&1 &&
  why="closed.png is not the image made with stderr open"
OUT=""
check_case stderr-closed "$why"
count stdout

for c in "${!class_cases[@]}"; do echo "class $c: ${class_cases[$c]} cases"; done | sort
finish
