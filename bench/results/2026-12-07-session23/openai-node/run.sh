#!/bin/bash
# Runs sdk_calls.mjs against two `serve`s on the tiny model and the host backend: one without
# credentials (CASES open) and one with --api-auth (auth-ok, auth-bad). Each server's log is kept.
# Usage: run.sh BINARY MODEL_DIR SDK_MODULE OUT_DIR   (exit status: 1 when any call failed)
set -u
binary=$1 model=$2 sdk=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
status=0

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# serve NAME FLAGS...: starts a server (its log OUT/server-NAME.log), waits until it listens.
serve() {
  local name=$1; shift
  port=$(free_port)
  MOSSINFER_BACKEND=host "$binary" serve --model "$model" --port "$port" --skip-layers 2 --size 32x32 --steps 2 \
    "$@" >"$out/server-$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server $name did not listen" >&2; exit 1
}

# stop: SIGTERM (a drain), the exit status into the log.
stop() { kill -TERM "$pid"; wait "$pid"; echo "[run.sh] server exited with status $?" >>"$out/server-$name.log"; }

calls() {  # calls CASES API_KEY
  echo "## CASES=$1 apiKey=$2 baseURL=http://127.0.0.1:$port/v1" >>"$out/transcript.jsonl"
  node "$here/sdk_calls.mjs" "$sdk" "http://127.0.0.1:$port/v1" "$2" "$1" >>"$out/transcript.jsonl" 2>&1 || status=1
}

: >"$out/transcript.jsonl"
{ echo "# node $(node --version), SDK module $sdk"; } >>"$out/transcript.jsonl"
name=open; serve open
calls open sk-anything
stop
name=auth; serve auth --api-auth alice:s3cret-pass
calls auth-ok s3cret-pass
calls auth-bad wrong-pass
stop
exit $status
