#!/usr/bin/env bash
# A real S3-compatible server (versitygw, posix backend) for the objstore tests.
#
#   versitygw.sh build            build once into _output/bin/versitygw-<version>/, print the path
#   versitygw.sh up ADDR DIR      serve DIR/data over S3 on ADDR (like 127.0.0.1:7070), in the background
#   versitygw.sh down DIR         stop the server started by "up" on DIR
#
# The server uses fixed test root credentials: access key "raftsman",
# secret "raftsman-secret". Its PID is in DIR/versitygw.pid, its log in
# DIR/versitygw.log. Buckets are the directories under DIR/data.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
ACCESS_KEY=raftsman
SECRET_KEY=raftsman-secret
bin_dir="$root/_output/bin/versitygw-$VERSITYGW_VERSION"
bin="$bin_dir/versitygw"

usage() {
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

build() {
  if [ ! -x "$bin" ]; then
    echo "building versitygw $VERSITYGW_VERSION" >&2
    local t0=$SECONDS pkg=github.com/versity/versitygw
    mkdir -p "$bin_dir"
    local tmp
    tmp=$(mktemp -d "$bin_dir/.build.XXXXXX")
    # go install pkg@version builds outside of this module, with versitygw's
    # own go.mod and go.sum.
    (cd "$tmp" && GOTOOLCHAIN=local GOFLAGS= GOBIN="$tmp" CGO_ENABLED=0 \
      go install -trimpath \
        -ldflags "-s -w -X main.Version=$VERSITYGW_VERSION -X main.Build=release" \
        "$pkg/cmd/versitygw@$VERSITYGW_VERSION")
    mv "$tmp/versitygw" "$bin"
    rm -rf "$tmp"
    echo "versitygw $VERSITYGW_VERSION built in $((SECONDS - t0))s" >&2
  fi
  echo "$bin"
}

# running PIDFILE: true when the PID in PIDFILE is alive and not a zombie.
running() {
  local pid state
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/stat" ] || return 1
  # The state is the field after the parenthesised command name.
  state=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

up() {
  [ $# -eq 2 ] || usage
  local addr=$1 dir=$2
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  local pidfile="$dir/versitygw.pid" log="$dir/versitygw.log"
  if running "$pidfile"; then
    echo "versitygw already running (pid $(cat "$pidfile")) on $dir" >&2
    return 0
  fi
  build >/dev/null
  # setsid: the server outlives this script and the shell's job control.
  ROOT_ACCESS_KEY_ID=$ACCESS_KEY ROOT_SECRET_ACCESS_KEY=$SECRET_KEY \
    setsid "$bin" --port "$addr" --health /health --quiet \
      posix "$dir/data" >"$log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$pidfile"
  local host=${addr%:*} port=${addr##*:}
  case "$host" in "" | 0.0.0.0) host=127.0.0.1 ;; "[::]") host="[::1]" ;; esac
  local i
  for i in $(seq 1 100); do
    if ! running "$pidfile"; then
      echo "versitygw exited; log $log:" >&2
      tail -n 20 "$log" >&2
      return 1
    fi
    if curl -fsS -o /dev/null "http://$host:$port/health" 2>/dev/null; then
      echo "versitygw $VERSITYGW_VERSION (pid $pid) listening on $addr, data in $dir/data" >&2
      return 0
    fi
    sleep 0.1
  done
  echo "versitygw did not answer on $addr within 10s; log $log" >&2
  return 1
}

down() {
  [ $# -eq 1 ] || usage
  local pidfile="$1/versitygw.pid" pid i
  if ! running "$pidfile"; then
    rm -f "$pidfile"
    return 0
  fi
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    running "$pidfile" || break
    sleep 0.1
  done
  if running "$pidfile"; then
    kill -KILL "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      running "$pidfile" || break
      sleep 0.1
    done
  fi
  rm -f "$pidfile"
}

case "${1:-}" in
  build) shift; [ $# -eq 0 ] || usage; build ;;
  up) shift; up "$@" ;;
  down) shift; down "$@" ;;
  *) usage ;;
esac
