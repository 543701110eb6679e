#!/usr/bin/env bash
# link_down_once.sh BUILD_DIR DELAY meshrun-args... : one run by hand, not a test (issue #34's
# reproduction): the user's command `meshrun-mpirun --hostfile H -np 4 meshrun ARGS` on node1 of 4
# test hosts (hosts.sh), node4's link taken down DELAY seconds after the start, the whole command
# bounded by 120 s (exit 124 when it had to be killed). Prints the exit code and seconds, stdout,
# stderr, and whether anything was left on the hosts. Example:
#   bash tests/hosts/link_down_once.sh build/release 4 bench allreduce --max-bytes 16777216 \
#     --size-budget 30 --timeout 5
source "$(dirname "$0")/common.sh" "$1"
shift
hosts_test_up 4
delay=$1
shift
(run_on_hosts 1 4 120 "$@"; echo "$CODE $SECS" >"$TMP/verdict") &
runner=$!
sleep "$delay"
hosts_link 4 down
wait $runner
echo "exit and seconds: $(cat "$TMP/verdict")"
echo "--- stdout"; cat "$TMP/out"
echo "--- stderr"; cat "$TMP/err"
nothing_left "link down after ${delay}s" 20
hosts_link 4 up
