#!/usr/bin/env bash
# faults_test.sh BUILD_DIR: faults across 4 test hosts (tests/hosts/hosts.sh), one rank per host,
# node4 (rank 3, devices 6-7) the victim, the user's command `meshrun-mpirun ... meshrun mlp-train
# CASE --inject stall:0@1 --timeout 3` on node1 (device 0 stalls at its first collective, so every
# other device is waiting in one when the fault strikes). Each must end within --timeout plus the
# bound docs/hosts.md gives, with exit 3 and one `meshrun:` line naming rank 3 and node4:
#   link down      node4's link down mid-run
#   rank killed    SIGKILL of node4's meshrun
#   daemon killed  SIGKILL of node4's orted
# and a slow (netem delay 20ms) and a lossy (netem loss 10%) link on node4 (or the nearest this
# kernel has, hosts_impair) change no byte of any program's output. Nothing may be left running on any host after each.
source "$(dirname "$0")/common.sh" "$1"
hosts_test_up 4
TIMEOUT=3
BOUND=15  # seconds past --timeout, docs/hosts.md
CASE=cases/mlp-train/b16-d4-h32-o3.json

# pid of the process named $2 on host $1 ("" when none yet)
pid_on() {
  local p
  for p in $(hosts_pids "$1"); do
    [ "$(ps -o comm= -p "$p" 2>/dev/null)" = "$2" ] && { echo "$p"; return; }
  done
}

# fault NAME ACTION...: starts the run, waits until node4's meshrun is in its collective, then
# runs ACTION; checks the verdict and that nothing is left.
fault() {
  local name=$1
  shift
  (run_on_hosts 1 4 60 mlp-train "$CASE" --inject stall:0@1 --timeout "$TIMEOUT"
   echo "$CODE $SECS" >"$TMP/verdict") &
  local runner=$! i
  for i in $(seq 100); do [ -n "$(pid_on 4 meshrun-mpi)" ] && break; sleep 0.1; done
  sleep 1
  "$@"
  wait "$runner"
  read -r CODE SECS <"$TMP/verdict"
  ERR=$(cat "$TMP/err")
  local lines
  lines=$(grep -c '^meshrun: ' "$TMP/err")
  local limit=$((TIMEOUT + BOUND))
  if [ "$CODE" = 3 ] && [ "$lines" = 1 ] && echo "$ERR" | grep -q 'rank 3[ ,].*node4' &&
     [ "$(echo "$SECS <= $limit" | bc)" = 1 ] && [ -z "$(cat "$TMP/out")" ]; then
    ok "$name: exit 3 in ${SECS}s (bound ${limit}s): $(grep '^meshrun: ' "$TMP/err")"
  else
    fail "$name: exit $CODE in ${SECS}s (bound ${limit}s), $lines meshrun lines; stderr: $ERR"
  fi
  # With node4's link still down: what ran there must end by itself (its own --timeout, its
  # daemon's keepalive), not because the link came back.
  nothing_left "$name" 20
  hosts_link 4 up
}

fault "link down" hosts_link 4 down
fault "rank killed" sh -c "kill -9 $(pid_on 4 meshrun-mpi 2>/dev/null || true) \$(ip netns pids $HOSTS_ID-4 | xargs -r ps -o pid=,comm= -p | awk '\$2 == \"meshrun-mpi\" {print \$1}')"
fault "daemon killed" sh -c "ip netns pids $HOSTS_ID-4 | xargs -r ps -o pid=,comm= -p | awk '\$2 == \"orted\" {print \$1}' | xargs -r kill -9"

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
