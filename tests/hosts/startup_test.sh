#!/usr/bin/env bash
# startup_test.sh BUILD_DIR: a host lost while its rank is still starting (issue 51), across 4 test
# hosts (hosts.sh), one rank per host, node4 (rank 3) the victim, the user's command
# `meshrun-mpirun ... meshrun mlp-train CASE --timeout 3` on node1. Each moment is cued by the rank
# itself, never by a sleep: under MESHRUN_HOOK_DIR/_RANK/_AT (exported with -x), rank 3 writes
# DIR/MOMENT when it reaches MOMENT and waits there until the test has opened and closed the fifo
# DIR/MOMENT.go (lib/support/startup_point.hpp). The moments:
#   exec     meshrun started by node4's daemon, before it execs meshrun-mpi (no MPI yet)
#   init     meshrun-mpi about to call MPI_Init (the others are in it, waiting for rank 3)
#   groups   about to create the mesh's groups (a collective: the others are in it)
#   after    the groups just created, before the program's first collective
# At each, node4's link goes down and rank 3 is let go. The command must end within --timeout plus
# the bound docs/hosts.md gives (BOUND), with exit 3, one `meshrun:` line naming rank 3 and node4
# and nothing else on stderr, no output, and nothing of the job left on any host, node4 included
# with its link still down: there, its processes end by themselves (the watch, meshrun-watch).
# And node4 unreachable from the start (its link down before the command), and two faults with the
# link up:
#   never    rank 3 held before exec and never let go: a rank that never reaches MPI_Init
#   daemon   node4's daemon (orted) killed while rank 3 waits before MPI_Init
# Each checks the same, and prints its time, exit code and what was left on each host. First, the
# placement the launcher computes (meshrun-watch map, which names rank 3 for the unreachable host)
# against mpirun's own on these hosts.
source "$(dirname "$0")/common.sh" "$1"
hosts_test_up 4
TIMEOUT=3
BOUND=15  # seconds past --timeout, docs/hosts.md
CASE=cases/mlp-train/b16-d4-h32-o3.json
export MESHRUN_HOOK_RANK=3
MPIRUN_EXTRA="-x MESHRUN_HOOK_DIR -x MESHRUN_HOOK_RANK -x MESHRUN_HOOK_AT"

# left_per_host: "node1 0, node2 0, ..." -- the processes on each host now.
left_per_host() {
  local i s=""
  for i in $(seq "$HOSTS_N"); do s="$s${s:+, }node$i $(hosts_pids "$i" | wc -w)"; done
  echo "$s"
}

# moment NAME AT ACTION: the run, rank 3 held at AT; once it is there, ACTION (a command); then
# rank 3 let go unless NAME is "never".
moment() {
  local name=$1 at=$2
  shift 2
  export MESHRUN_HOOK_AT=$at MESHRUN_HOOK_DIR=$TMP/hook-$name
  mkdir -p "$MESHRUN_HOOK_DIR"
  mkfifo "$MESHRUN_HOOK_DIR/$at.go"
  rm -f "$TMP/verdict"
  (run_on_hosts 1 4 60 mlp-train "$CASE" --timeout "$TIMEOUT"
   echo "$CODE $SECS" >"$TMP/verdict") &
  local runner=$! i
  # The cue: rank 3's own file (600 polls of 0.1 s: a bound on the wait, not a delay).
  for i in $(seq 600); do
    [ -e "$MESHRUN_HOOK_DIR/$at" ] && break
    [ -e "$TMP/verdict" ] && break
    sleep 0.1
  done
  if [ ! -e "$MESHRUN_HOOK_DIR/$at" ]; then
    fail "$name: rank 3 never reached '$at' (no start-up hook?)"
    wait "$runner"  # bounded by run_on_hosts
    nothing_left "$name" 20
    hosts_link 4 up
    return
  fi
  "$@"
  # Let go (bounded: a rank already killed reads the fifo no more).
  [ "$name" = never ] || timeout 5 sh -c "echo >'$MESHRUN_HOOK_DIR/$at.go'"
  wait "$runner"
  local left
  left=$(left_per_host)
  read -r CODE SECS <"$TMP/verdict"
  ERR=$(cat "$TMP/err")
  local lines noise="" out=""
  lines=$(grep -c '^meshrun: ' "$TMP/err")
  grep -v '^meshrun: ' "$TMP/err" | grep -q . && noise=" (stderr beside the line)"
  [ -z "$(cat "$TMP/out")" ] || out=" stdout: $(cat "$TMP/out")"
  local limit=$((TIMEOUT + BOUND))
  if [ "$CODE" = 3 ] && [ "$lines" = 1 ] && echo "$ERR" | grep -q 'rank 3[ ,].*node4' &&
     [ "$(echo "$SECS <= $limit" | bc)" = 1 ] && [ -z "$out" ] && [ -z "$noise" ]; then
    ok "$name: exit 3 in ${SECS}s (bound ${limit}s), left at exit: $left: $(grep '^meshrun: ' "$TMP/err")"
  else
    fail "$name: exit $CODE in ${SECS}s (bound ${limit}s), $lines meshrun lines$noise$out; left at exit: $left; stderr: $ERR"
  fi
  # node4's link still down: what ran there ends by itself, within the bound.
  local rest
  rest=$(echo "$limit - $SECS + 1" | bc | cut -d. -f1)
  [ "${rest:-0}" -ge 0 ] 2>/dev/null || rest=0
  nothing_left "$name" "$rest"
  hosts_link 4 up
}

kill_orted4() {
  ip netns pids "$HOSTS_ID-4" | xargs -r ps -o pid=,comm= -p | awk '$2 == "orted" {print $1}' |
    xargs -r kill -9
}

# unreachable: node4's link down before the command starts (a host that never came up, a wrong
# hostfile entry, a firewall): no rank starts there, and the line names rank 3 from the placement
# the launcher computed from the hostfile (meshrun-watch map, checked against mpirun below).
unreachable() {
  hosts_link 4 down
  run_on_hosts 1 4 60 mlp-train "$CASE" --timeout "$TIMEOUT"
  local left limit=$((TIMEOUT + BOUND)) lines
  left=$(left_per_host)
  lines=$(grep -c '^meshrun: ' "$TMP/err")
  if [ "$CODE" = 3 ] && [ "$lines" = 1 ] && [ "$ERR" = "$(grep '^meshrun: ' "$TMP/err")" ] &&
     echo "$ERR" | grep -q 'rank 3 on host node4' && [ -z "$OUT" ] &&
     [ "$(echo "$SECS <= $limit" | bc)" = 1 ]; then
    ok "unreachable: exit 3 in ${SECS}s (bound ${limit}s), left at exit: $left: $ERR"
  else
    fail "unreachable: exit $CODE in ${SECS}s (bound ${limit}s), $lines meshrun lines; left at exit: $left; stdout: $OUT; stderr: $ERR"
  fi
  nothing_left unreachable 10
  hosts_link 4 up
}

# The placement meshrun-watch map computes (what the launcher names the ranks of a host from,
# before any started) against mpirun's own, on these hosts: the test's hostfile (1 slot a host)
# and 2 slots a host with 6 ranks. mpirun's stderr is kept apart: under load its rsh launcher may
# warn there ("plm:rsh: Warning: setpgid(...) failed ... Permission denied"), mid-line of its
# ranks' output when merged (a full ctest here failed so, 2026-12-07).
placement() {
  local slots=$1 np=$2 hf want got
  hf=$(hosts_hostfile "$slots")
  want=$(timeout 60 $(hosts_enter 1) mpirun $(hosts_mpirun_args) --hostfile "$hf" -np "$np" \
           sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' 2>"$TMP/placement.err" |
         sort -n | tr '\n' ';')
  got=$($(hosts_enter 1) "$BUILD_DIR/meshrun-watch" map --hostfile "$hf" -np "$np" "$MESHRUN" |
        tr '\n' ';')
  if [ -n "$got" ] && [ "$got" = "$want" ]; then
    ok "placement, $slots slot(s) a host, -np $np: $got as mpirun's"
  else
    fail "placement, $slots slot(s) a host, -np $np: computed '$got', mpirun's '$want' (stderr: $(head -c 400 "$TMP/placement.err"))"
  fi
}
placement 1 4
placement 2 6

unreachable
moment exec exec hosts_link 4 down
moment init init hosts_link 4 down
moment groups groups hosts_link 4 down
moment after after hosts_link 4 down
moment never exec true
moment daemon init kill_orted4
[ "$FAILED" = 0 ]
