#!/usr/bin/env bash
# faults_test.sh BUILD_DIR: faults across 4 test hosts (tests/hosts/hosts.sh), one rank per host,
# node4 (rank 3, devices 6-7) the victim, for every subcommand that runs across ranks, each the
# user's command `meshrun-mpirun ... meshrun ... --timeout 3` on node1:
#   mlp-train CASE --inject stall:0@1        a program (device 0 stalls at its first collective,
#                                             so every other device waits in one at the fault)
#   run PROG.json CASE --inject stall:0@1     the same program, exported by JAX (program file)
#   bench allreduce (4 B to 1 MiB)            the benchmark, in its timing loop at the fault
# and, for a program file whose rank 0 evaluates a few seconds before its shard_map (programs/
# evaluates_first.py), node4's link down while rank 0 evaluates (the others wait, kept alive by
# rank 0) and while the shard_map runs after it (--inject stall:0@1).
# Each must end within --timeout plus the bound docs/hosts.md gives, with exit 3 and one
# `meshrun:` line naming rank 3 and node4 (and no output but the bench's table):
#   link down      node4's link down mid-run
#   rank killed    SIGKILL of node4's meshrun
#   daemon killed  SIGKILL of node4's orted
# (`check` needs no row: under mpirun of more than one rank it is refused before anything runs.)
# And a slow (netem delay 20ms) and a lossy (netem loss 10%) link on node4 (or the nearest this
# kernel has, hosts_impair) change no byte of any program's output. Nothing may be left running on
# any host after each.
source "$(dirname "$0")/common.sh" "$1"
hosts_test_up 4
TIMEOUT=3
BOUND=15  # seconds past --timeout, docs/hosts.md
CASE=cases/mlp-train/b16-d4-h32-o3.json
FIRST=tests/hosts/programs/evaluates_first.json

# pid of the process named $2 on host $1 ("" when none yet)
pid_on() {
  local p
  for p in $(hosts_pids "$1"); do
    [ "$(ps -o comm= -p "$p" 2>/dev/null)" = "$2" ] && { echo "$p"; return; }
  done
}

# fault WHAT NAME ACTION...: starts the run of subcommand WHAT (a key of RUN), waits until node4's
# meshrun is at work (for the bench, until rank 0 has printed its table's header: past the setup),
# then runs ACTION; checks the verdict and that nothing is left.
declare -A RUN=(
  [program]="mlp-train $CASE --inject stall:0@1"
  [run PROG.json]="run cases/programs/mlp-train.json $CASE --inject stall:0@1"
  [bench allreduce]="bench allreduce --max-bytes 1048576 --size-budget 10"
  [evaluating]="run $FIRST cases/dp-step/example1.json"
  [shard_map after evaluating]="run $FIRST cases/dp-step/example1.json --inject stall:0@1"
)
# cue PID PATTERN STEP: waits (600 polls, STEP s apart) until process PID has a thread whose name
# matches PATTERN (lib/mesh names device threads meshrun-devD; rank 0's keepalive is meshrun-eval
# before the shard_map); fails at once for no PID.
cue() {
  local i
  [ -n "$1" ] || return 1
  for i in $(seq 600); do
    grep -qs "$2" /proc/"$1"/task/*/comm && return 0
    sleep "$3"
  done
  return 1
}
fault() {
  local what=$1 name=$2
  shift 2
  # shellcheck disable=SC2086 # the words of RUN
  (run_on_hosts 1 4 60 ${RUN[$what]} --timeout "$TIMEOUT"
   echo "$CODE $SECS" >"$TMP/verdict") &
  local runner=$! i
  for i in $(seq 100); do [ -n "$(pid_on 4 meshrun-mpi)" ] && break; sleep 0.1; done
  if [ "$what" = "bench allreduce" ]; then
    for i in $(seq 100); do grep -q '^# peer' "$TMP/out" 2>/dev/null && break; sleep 0.1; done
  elif [ "$what" = evaluating ]; then
    # rank 0 keeps the others alive from a thread named meshrun-eval while it evaluates outside
    # its shard_map calls (meshrun-after once its run ended, while it grades)
    local p0=""
    for i in $(seq 100); do p0=$(pid_on 1 meshrun-mpi) && [ -n "$p0" ] && break; sleep 0.1; done
    if ! cue "$p0" '^meshrun-eval' 0.05; then
      fail "$what: $name: rank 0 never began to evaluate (pid '${p0}')"
      wait "$runner"; nothing_left "$what: $name" 20; return
    fi
  elif [ "$what" = "shard_map after evaluating" ]; then
    # node4's rank starts its device threads (named meshrun-devD) when the shard_map starts
    local p
    p=$(pid_on 4 meshrun-mpi)
    if ! cue "$p" '^meshrun-dev' 0.1; then
      fail "$what: $name: node4's devices never started (pid '${p}')"
      wait "$runner"; nothing_left "$what: $name" 20; return
    fi
  fi
  # Then the fault, soon enough to fall in the phase named: rank 0's evaluation takes about a
  # second on a fast machine (AVX-512; several on others), and the stalled shard_map ends at
  # --timeout.
  case $what in
    evaluating) ;;
    "shard_map after evaluating") sleep 0.3 ;;
    *) sleep 1 ;;
  esac
  local struck after
  struck=$(date +%s.%N)
  "$@"
  wait "$runner"
  after=$(echo "$(date +%s.%N) - $struck" | bc)
  read -r CODE SECS <"$TMP/verdict"
  ERR=$(cat "$TMP/err")
  local lines out=ok
  lines=$(grep -c '^meshrun: ' "$TMP/err")
  # and nothing else on stderr (an empty line aside)
  local noise=""
  grep -v '^meshrun: ' "$TMP/err" | grep -q . && noise="stderr beside the line"
  # The bound counts from the start of the command, start-up included -- but from the fault where
  # rank 0 first evaluates (its own work, as long as the program makes it).
  local limit=$((TIMEOUT + BOUND)) took=$SECS
  case $what in *evaluating) took=$after ;; esac
  if [ "$what" = "bench allreduce" ]; then  # the table's lines so far, nothing else
    grep -qv '^#\|^ *[0-9]' "$TMP/out" && out="stdout: $(cat "$TMP/out")"
  else
    [ -z "$(cat "$TMP/out")" ] || out="stdout: $(cat "$TMP/out")"
  fi
  if [ "$CODE" = 3 ] && [ "$lines" = 1 ] && echo "$ERR" | grep -q 'rank 3[ ,].*node4' &&
     [ "$(echo "$took <= $limit" | bc)" = 1 ] && [ "$out" = ok ] && [ -z "$noise" ]; then
    ok "$what: $name: exit 3 in ${SECS}s, ${after}s after the fault (bound ${limit}s): $(grep '^meshrun: ' "$TMP/err")"
  else
    fail "$what: $name: exit $CODE in ${SECS}s, ${after}s after the fault (bound ${limit}s), $lines meshrun lines $noise; stderr: $ERR; $out"
  fi
  # With node4's link still down: what ran there must end by itself (its own --timeout, its
  # daemon's keepalive), not because the link came back.
  nothing_left "$what: $name" 20
  hosts_link 4 up
}

for what in program "run PROG.json" "bench allreduce"; do
  fault "$what" "link down" hosts_link 4 down
  fault "$what" "rank killed" sh -c "ip netns pids $HOSTS_ID-4 | xargs -r ps -o pid=,comm= -p | awk '\$2 == \"meshrun-mpi\" {print \$1}' | xargs -r kill -9"
  fault "$what" "daemon killed" sh -c "ip netns pids $HOSTS_ID-4 | xargs -r ps -o pid=,comm= -p | awk '\$2 == \"orted\" {print \$1}' | xargs -r kill -9"
done
fault evaluating "link down" hosts_link 4 down
fault "shard_map after evaluating" "link down" hosts_link 4 down

# A slow and a lossy link: the same bytes as one process (a case of each program, 2 ranks a host).
for impair in delay loss; do
  if ! how=$(hosts_impair 4 $impair); then
    fail "a $impair link: could not be made (no netem, no tbf or nft)"
    continue
  fi
  echo "# node4's link: $how"
  for c in dp-step:cases/dp-step/n256-d4-k3.json tp-mlp:cases/tp-mlp/b16-d8-h128-o8.json \
           mlp-train:$CASE; do
    same_bytes 2 8 "${c%%:*}" --exact "${c#*:}"
  done
  hosts_impair 4 off
  nothing_left "a $impair link"
done
[ "$FAILED" = 0 ]
