# Shared by bad_input_tests.sh, interrupt_tests.sh and property_tests.sh (sourced, not run): a scratch folder,
# broken copies of the tiny model folder, safetensors header surgery, and the `expect`
# runner that checks exit status, message and that no output (or temporary) file is left.
#
# The caller sets BIN (the moss-infer-hip binary) and MODEL (the tiny model folder) first.
# The original folder is never written: copies are trees of symlinks (cp -rs), and every
# file that a case changes is first unlinked in the copy and then written anew. A checksum
# of the original, taken at the start and compared at the end, guards that promise.
#
# Environment:
#   CASE_TIMEOUT      seconds per run (default 60)
#   CASE_VMEM_KB      virtual-memory cap per run in KiB (default 2 GiB; 0 = none). An ASan
#                     binary gets 0 (its shadow reserves terabytes of address space) and a
#                     cap on single allocations instead (max_allocation_size_mb, below).
#   KEEP_WORK=1       keep the scratch folder for inspection

set -u
export LC_ALL=C
if [[ ! -x $BIN || ! -d $MODEL ]]; then
  echo "FAIL setup: '$BIN' is not an executable or '$MODEL' is not a folder"
  echo "0 passed, 1 failed"
  exit 1
fi
BIN=$(readlink -f -- "$BIN")
MODEL=$(readlink -f -- "$MODEL")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/moss-bad-input.XXXXXX")
chmod 755 "$WORK"  # the unwritable-directory case runs the binary as another user
if [[ ${KEEP_WORK:-0} == 1 ]]; then echo "scratch folder: $WORK"; else trap 'rm -rf -- "$WORK"' EXIT; fi
CASE_TIMEOUT=${CASE_TIMEOUT:-60}
if grep -qa __asan_init -- "$BIN"; then
  # A runaway allocation (a config with absurd sizes) must end in bad_alloc, as it does
  # under the address-space cap of a plain build, not eat the machine's memory.
  CASE_VMEM_KB=${CASE_VMEM_KB:-0}
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}max_allocation_size_mb=1024:allocator_may_return_null=1"
else
  CASE_VMEM_KB=${CASE_VMEM_KB:-2097152}
fi
passed=0
failed=0

model_checksum() { (cd "$MODEL" && find . -type f -print0 | sort -z | xargs -0 md5sum | md5sum); }
MODEL_SUM=$(model_checksum)

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() {
  failed=$((failed + 1))
  echo "FAIL $1: $2"
  [[ -n ${3:-} ]] && head -c 2000 <<<"$3" | head -8 | sed 's/^/    /'
  return 0
}

# new_case NAME: a fresh folder $WORK/NAME for one case; sets CASE.
new_case() {
  CASE=$WORK/$1
  mkdir -p "$CASE"
}

# copy_model: $CASE/model, a tree of real folders and symlinks to the original files; sets M.
copy_model() {
  M=$CASE/model
  cp -rs "$MODEL" "$M"
}

# own FILE: replaces a symlink of the copy by a private regular copy, so it can be edited.
own() {
  local src
  src=$(readlink -f -- "$1")
  rm -f -- "$1"
  cp -- "$src" "$1"
}

# json_edit FILE SED_EXPR: edits a (text) file of the copy with sed -E.
json_edit() {
  own "$1"
  sed -E -i -e "$2" "$1"
}

# truncate_file FILE BYTES: keeps the first BYTES of a file of the copy ("half": half of it).
truncate_file() {
  local src n=$2
  src=$(readlink -f -- "$1")
  [[ $n == half ]] && n=$(($(stat -c %s -- "$src") / 2))
  head -c "$n" -- "$src" >"$1.new"
  mv -f -- "$1.new" "$1"
}

# replace_file FILE TEXT: FILE of the copy now holds TEXT.
replace_file() {
  rm -f -- "$1"
  printf '%s' "$2" >"$1"
}

# ---- safetensors surgery -------------------------------------------------------------------
# Layout: 8-byte little-endian header length, JSON header, data section.

le64() {
  local n=$1 i out=''
  for ((i = 0; i < 8; i++)); do out+=$(printf '\\x%02x' $(((n >> (8 * i)) & 255))); done
  printf "$out"
}
st_header_len() { od -An -tu8 -N8 -- "$1" | tr -d ' '; }
st_header() { tail -c +9 -- "$1" | head -c "$(st_header_len "$1")"; }
st_data_size() { echo $(($(stat -c %s -- "$1") - 8 - $(st_header_len "$1"))); }

# st_rewrite FILE SED_EXPR [APPEND_BYTES] [SKEW]: rewrites FILE of the copy with its header
# edited by sed -E (the data section kept as it is) and APPEND_BYTES zero bytes added to the
# end of the data section. The header is padded with spaces to a multiple of 8 bytes, as
# writers do, then SKEW more spaces are added (to misalign the data on purpose).
st_rewrite() {
  local f=$1 expr=$2 append=${3:-0} skew=${4:-0} src n header
  src=$(readlink -f -- "$f")
  n=$(st_header_len "$src")
  header=$(st_header "$src" | sed -E -e 's/ +$//' -e "$expr")
  while ((${#header} % 8)); do header+=' '; done
  for ((; skew > 0; skew--)); do header+=' '; done
  {
    le64 "${#header}"
    printf '%s' "$header"
    tail -c +$((9 + n)) -- "$src"
    ((append > 0)) && head -c "$append" /dev/zero
  } >"$f.new"
  mv -f -- "$f.new" "$f"
}

# st_add FILE NAME DTYPE SHAPE BYTES: a new tensor NAME (zero bytes) at the end of the data.
st_add() {
  local ds
  ds=$(st_data_size "$(readlink -f -- "$1")")
  st_rewrite "$1" "$(add_tensor "$2" "{\"dtype\":\"$3\",\"shape\":[$4],\"data_offsets\":[$ds,$((ds + $5))]}")" "$5"
}

# st_set_header_len FILE N: only the 8-byte length field changes.
st_set_header_len() {
  local src
  src=$(readlink -f -- "$1")
  { le64 "$2"; tail -c +9 -- "$src"; } >"$1.new"
  mv -f -- "$1.new" "$1"
}

# st_entry FILE TENSOR: the tensor's header entry, e.g. {"dtype":"BF16","shape":[128],"data_offsets":[0,256]}.
st_entry() { st_header "$(readlink -f -- "$1")" | grep -oE "\"$(re "$2")\":\\{[^}]*\\}" | sed -E 's/^"[^"]*"://'; }
# st_offsets FILE TENSOR: "BEGIN END".
st_offsets() { st_entry "$1" "$2" | sed -E 's/.*"data_offsets":\[([0-9]+),([0-9]+)\].*/\1 \2/'; }
# Sed expressions for st_rewrite; tensor names are taken literally.
re() { sed -E 's#[]*^$+?(){}|\\.[]#\\&#g' <<<"$1"; }
set_dtype() { echo "s/(\"$(re "$1")\":\\{\"dtype\":\")[^\"]*/\\1$2/"; }
set_shape() { echo "s/(\"$(re "$1")\":\\{[^}]*\"shape\":\\[)[^]]*/\\1$2/"; }
set_offsets() { echo "s/(\"$(re "$1")\":\\{[^}]*\"data_offsets\":\\[)[^]]*/\\1$2/"; }
# st_drop FILE TENSOR: TENSOR taken out of FILE of the copy, its entry and its bytes (the tensors
# after it move down), so that the rest still tiles the data section as the loader requires.
st_drop() {
  python3 - "$(readlink -f -- "$1")" "$1.new" "$2" <<'PY' && mv -f -- "$1.new" "$1"
import json, struct, sys
src, dst, name = sys.argv[1:4]
blob = open(src, "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
header, data = json.loads(blob[8:8 + n]), blob[8 + n:]
begin, end = header.pop(name)["data_offsets"]
for key, entry in header.items():
    if key != "__metadata__" and entry["data_offsets"][0] >= end:
        entry["data_offsets"] = [o - (end - begin) for o in entry["data_offsets"]]
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + data[:begin] + data[end:])
PY
}
# add_tensor NAME ENTRY: inserts a new entry first in the header.
add_tensor() { echo "s/^\\{/{\"$1\":$2,/"; }

# ---- running the binary ------------------------------------------------------------------

# Outputs named by -o / --latent-out in an argument list (one per line).
outputs_of() {
  local prev=''
  for a in "$@"; do
    case $prev in -o | --latent-out) echo "$a" ;; esac
    case $a in --latent-out=*) echo "${a#--latent-out=}" ;; esac
    prev=$a
  done
}

# run_bin ARGS...: runs the binary in $CASE on the host backend, under the time and memory
# caps; sets OUT (stdout and stderr together) and RC. EXPECT_ENV adds environment settings
# (split on blanks); the array EXTRA_ENV adds settings taken literally (values with blanks);
# CASE_FSIZE_KB sets a file-size limit (ulimit -f); RUN_AS runs it through another command
# (e.g. setpriv to drop root).
EXTRA_ENV=()
run_bin() {
  OUT=$(cd "$CASE" && {
    ((CASE_VMEM_KB > 0)) && ulimit -v "$CASE_VMEM_KB"
    [[ -n ${CASE_FSIZE_KB:-} ]] && ulimit -f "$CASE_FSIZE_KB"
    env MOSSINFER_BACKEND=host ${EXPECT_ENV:-} "${EXTRA_ENV[@]}" ${RUN_AS:-} timeout -k 5 "$CASE_TIMEOUT" "$BIN" "$@" 2>&1
  })
  RC=$?
}

# Why a finished run is wrong beyond its status and message (empty when it is fine): a
# sanitizer report, a left-over temporary file, and for each output named in the
# arguments, that it is absent after a failure and a complete file after a success.
run_problems() {
  local status=$1
  shift
  if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|AddressSanitizer|UndefinedBehaviorSanitizer' <<<"$OUT"; then
    echo "sanitizer report"
    return
  fi
  local f dir
  while IFS= read -r f; do
    [[ -z $f ]] && continue
    [[ $f == /* ]] || f=$CASE/$f
    dir=$(dirname -- "$f")
    if [[ -d $dir ]] && ls -a -- "$dir" 2>/dev/null | grep -q '^\.moss-infer-'; then
      echo "left a temporary file in $dir"
      return
    fi
    # A directory in an output's place was there before (the program makes none).
    if ((status != 0)) && [[ -e $f && ! -d $f ]]; then
      echo "left an output file $f"
      return
    fi
    if ((status == 0)); then
      if [[ ! -s $f ]]; then echo "no output file $f"; return; fi
      case $f in
        *.png) [[ $(head -c 8 -- "$f" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || { echo "$f is not a PNG"; return; } ;;
        *.npy) [[ $(head -c 6 -- "$f" | od -An -tx1 | tr -d ' \n') == 934e554d5059 ]] || { echo "$f is not a .npy file"; return; } ;;
      esac
    fi
  done < <(outputs_of "$@")
}

# expect NAME STATUS PATTERN -- ARGS...: runs the binary with ARGS in a new $CASE (unless
# the caller prepared one with the same NAME) and checks the exit status, that the output
# matches PATTERN (grep -E), and run_problems.
expect() {
  local name=$1 status=$2 pattern=$3
  shift 4
  [[ ${CASE:-} == "$WORK/$name" ]] || new_case "$name"
  run_bin "$@"
  local why=""
  if ((RC == 124 || RC == 137)) && ((status != RC)); then
    why="timed out or killed after ${CASE_TIMEOUT} s (exit $RC)"
  elif ((RC != status)); then
    why="exit $RC, expected $status"
  elif ! grep -qE -- "$pattern" <<<"$OUT"; then
    why="output does not match /$pattern/"
  else
    why=$(run_problems "$status" "$@")
  fi
  if [[ -z $why ]]; then pass "$name"; else fail "$name" "$why" "$OUT"; fi
}

# ---- runs in the background (a signal or a file change while the run waits) ------------------
# start_bin SETTINGS... COMMAND...: `env MOSSINFER_BACKEND=host SETTINGS... COMMAND...` (SETTINGS
# are VAR=VALUE, COMMAND usually "$BIN" ARGS...) in $CASE in the background, under the memory cap,
# stdout and stderr in $CASE/log; sets PID and clears WHY (why the case fails, once known).
start_bin() {
  WHY=""
  : >"$CASE/log"
  (
    cd "$CASE" || exit 1
    ((CASE_VMEM_KB > 0)) && ulimit -v "$CASE_VMEM_KB"
    exec env MOSSINFER_BACKEND=host "$@"
  ) >>"$CASE/log" 2>&1 &
  PID=$!
}

# wait_for_line REGEX WHAT LIMIT: polls $CASE/log until a line matches REGEX (grep -E). If the run
# ends first or LIMIT seconds pass, WHY says so (naming WHAT, what the line stands for) and the
# status is 1.
wait_for_line() {
  local regex=$1 what=$2 limit=$3 start=$SECONDS
  until grep -qE -- "$regex" "$CASE/log"; do
    if ! kill -0 "$PID" 2>/dev/null; then WHY="the run ended before $what"; return 1; fi
    if ((SECONDS - start >= limit)); then WHY="no $what after $limit s"; return 1; fi
    sleep 0.05
  done
}

# reap_bin LIMIT WHAT: waits up to LIMIT seconds for the run to end (WHAT: what it should end
# after, for the message); one still running then is killed and, unless WHY is set already, WHY
# says so. Sets RC and OUT (the log).
reap_bin() {
  local limit=$1 what=$2 start=$SECONDS
  while kill -0 "$PID" 2>/dev/null && ((SECONDS - start < limit)); do sleep 0.05; done
  if kill -0 "$PID" 2>/dev/null; then
    kill -9 "$PID"
    [[ -z $WHY ]] && WHY="still running $limit s after $what"
  fi
  wait "$PID"
  RC=$?
  OUT=$(cat "$CASE/log")
}

# judge_bin NAME STATUS MESSAGE MISSING ARGS...: after reap_bin, unless WHY is set already: the
# run must have exited STATUS, printed a line matching MESSAGE (grep) and left what run_problems
# wants for ARGS (MISSING: what to say when the message is absent). PASS or FAIL NAME.
judge_bin() {
  local name=$1 status=$2 message=$3 missing=$4
  shift 4
  if [[ -z $WHY ]]; then
    if ((RC != status)); then
      WHY="exit $RC, expected $status"
    elif ! grep -q -- "$message" <<<"$OUT"; then
      WHY=$missing
    else
      WHY=$(run_problems "$status" "$@")
    fi
  fi
  if [[ -z $WHY ]]; then pass "$name"; else fail "$name" "$WHY" "$(tail -5 <<<"$OUT")"; fi
}

# signal_at NAME POINT SIGNAL STATUS ARGS...: runs with MOSSINFER_TEST_PAUSE=POINT, sends
# SIGNAL once the run says it waits there, and checks status, message and what is left; the
# run must stop within STOP_TIMEOUT seconds (default 30).
signal_at() {
  local name=$1 point=$2 sig=$3 status=$4
  shift 4
  new_case "$name"
  start_bin MOSSINFER_TEST_PAUSE="$point:60" "$BIN" "$@"
  wait_for_line "^pause at $point$" "the pause at $point" "$CASE_TIMEOUT" && kill -s "$sig" "$PID"
  reap_bin "${STOP_TIMEOUT:-30}" "SIG$sig"
  judge_bin "$name" "$status" "^moss-infer-hip: interrupted by SIG$sig$" "no 'interrupted by SIG$sig' message" "$@"
}

# Last check of every suite: the original folder is as it was.
check_model_untouched() {
  if [[ $(model_checksum) == "$MODEL_SUM" ]]; then pass original-model-untouched; else fail original-model-untouched "the tiny model folder changed"; fi
}

finish() {
  check_model_untouched
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
