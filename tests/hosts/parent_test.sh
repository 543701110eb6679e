#!/usr/bin/env bash
# parent_test.sh BUILD_DIR: a process of a job ends by itself when its parent does (issue 51,
# support/end_with_parent.hpp), independently of MPI and of the watch: on this machine, no hosts,
# no root. Each process is held at a start-up point (MESHRUN_HOOK_*, support/startup_point.hpp:
# it writes DIR/MOMENT with its pid and waits on the fifo DIR/MOMENT.go, which nobody opens); once
# its file is there (the cue, never a sleep), its parent is killed with SIGKILL -- which nobody
# can catch to pass on -- and the held process must be gone within BOUND seconds:
#   1. meshrun as a rank (OMPI_COMM_WORLD_RANK set), before it execs meshrun-mpi ("exec");
#   2. meshrun-mpi, about to call MPI_Init ("init"): the death signal kept across the exec;
#   3. a real mpirun of 2 ranks here, rank 1 held before MPI_Init, rank 0 in it: mpirun killed,
#      both ranks gone (on another host orted is the parent; on mpirun's, mpirun);
#   4. meshrun-watch's command (orted, on a host): the watch killed, its command gone.
# On the old code (no PR_SET_PDEATHSIG) each held process is left running, reparented to init.
set -u
BUILD_DIR=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
SOURCE_DIR=$(cd "$(dirname "$0")/../.." && pwd)
MESHRUN=$BUILD_DIR/meshrun
WATCH=$BUILD_DIR/meshrun-watch
[ -x "$BUILD_DIR/meshrun-mpi" ] && [ -x "$WATCH" ] || {
  echo "skipped: meshrun was built without MPI"
  exit 77
}
case $(uname -s) in Linux) ;; *) echo "skipped: PR_SET_PDEATHSIG is Linux's"; exit 77 ;; esac
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshrun-parent-test.XXXXXX")
FAILED=0
BOUND=5
ok() { echo "ok $*"; }
fail() { echo "FAIL $*"; FAILED=1; }
LEFT=""
cleanup() {
  for p in $LEFT; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
CASE=$SOURCE_DIR/cases/mlp-train/b16-d4-h32-o3.json
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# until_file FILE: polls (bounded: 300 x 0.1 s) for FILE to exist, non-empty.
until_file() {
  for _ in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}
# running PID: the process exists and is not a zombie.
running() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}
# gone_within WHAT PID...: each PID ends within BOUND s (polled; then the check fails).
gone_within() {
  local what=$1 p left t0
  shift
  t0=$(date +%s.%N)
  for _ in $(seq $((BOUND * 20))); do
    left=""
    for p in "$@"; do running "$p" && left="$left $p"; done
    [ -z "$left" ] && break
    sleep 0.05
  done
  if [ -z "$left" ]; then
    ok "$what: gone in $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-4) s"
  else
    LEFT="$LEFT$left"
    fail "$what: still running after ${BOUND} s:$(ps -o pid=,comm= -p $(echo $left | tr ' ' ,) | tr '\n' ';')"
  fi
}

# held MOMENT: meshrun as rank 1 of 2 under a shell that is killed once it is held at MOMENT.
held() {
  local at=$1 dir=$TMP/$1
  mkdir -p "$dir"
  mkfifo "$dir/$at.go"
  OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 MESHRUN_HOOK_DIR=$dir MESHRUN_HOOK_RANK=1 \
    MESHRUN_HOOK_AT=$at sh -c '"$@"; echo ended' sh "$MESHRUN" mlp-train "$CASE" \
    >/dev/null 2>&1 &
  local parent=$!
  if ! until_file "$dir/$at"; then
    fail "$at: meshrun never reached '$at'"
    kill -9 "$parent"
    wait "$parent" 2>/dev/null
    return
  fi
  local pid comm
  pid=$(cat "$dir/$at")
  comm=$(ps -o comm= -p "$pid")
  kill -9 "$parent"
  wait "$parent" 2>/dev/null
  gone_within "held at '$at' ($comm), its parent killed" "$pid"
}
held exec
held init

# 3. mpirun here, 2 ranks.
if command -v mpirun >/dev/null; then
  dir=$TMP/mpirun
  mkdir -p "$dir"
  mkfifo "$dir/init.go"
  MESHRUN_HOOK_DIR=$dir MESHRUN_HOOK_RANK=1 MESHRUN_HOOK_AT=init \
    mpirun --oversubscribe --mca btl self,vader --mca oob_tcp_if_include lo -np 2 \
    -x MESHRUN_HOOK_DIR -x MESHRUN_HOOK_RANK -x MESHRUN_HOOK_AT \
    "$MESHRUN" mlp-train "$CASE" >/dev/null 2>&1 &
  job=$!
  if until_file "$dir/init"; then
    ranks=$(pgrep -P "$job" | tr '\n' ' ')
    kill -9 "$job"
    wait "$job" 2>/dev/null
    if [ "$(echo $ranks | wc -w)" = 2 ]; then
      gone_within "mpirun's 2 ranks (rank 1 before MPI_Init, rank 0 in it), mpirun killed" $ranks
    else
      fail "mpirun's ranks: '$ranks', not 2"
      LEFT="$LEFT $ranks"
    fi
  else
    fail "mpirun: rank 1 never reached 'init'"
    kill -9 "$job"
  fi
  wait "$job" 2>/dev/null
else
  echo "skipped (3.): no mpirun"
fi

# 4. The watch's command.
MESHRUN_WATCH_ID=p1 "$WATCH" serve "$TMP" 30 &
server=$!
if until_file "$TMP/port"; then
  "$WATCH" watch p1 30 "$(cat "$TMP/port")" 127.0.0.1 \
    sh -c 'echo $$ >"$0/cmd"; exec sleep 1000' "$TMP" &
  w=$!
  if until_file "$TMP/cmd"; then
    cmd=$(cat "$TMP/cmd")
    kill -9 "$w"
    wait "$w" 2>/dev/null
    gone_within "the watch's command, the watch killed" "$cmd"
  else
    fail "the watch never ran its command"
  fi
else
  fail "the watch's server wrote no port"
fi
kill "$server" 2>/dev/null
wait 2>/dev/null
[ "$FAILED" = 0 ]
