#!/usr/bin/env bash
# loss_loop.sh BUILD_DIR N PCT PROBES... : how often a lossy link is taken for a lost host. Four
# test hosts, node4 dropping PCT% of its outgoing packets (nftables, as hosts_impair does for
# loss); for each keepalive probe count, N runs of the faults test's lossy run (mlp-train --exact,
# 2 ranks a host, through meshrun-mpirun), each checked for one process's bytes. Not a ctest
# entry: a measurement (docs/hosts.md, "The keepalive"). As root, e.g.
#   bash tests/hosts/loss_loop.sh build/release 15 30 3 6
if [ $# -lt 4 ]; then
  echo "usage: $0 BUILD_DIR N PCT PROBES..." >&2
  exit 2
fi
source "$(dirname "$0")/common.sh" "$1"
N=$2 PCT=$3
shift 3
hosts_test_up 4
ns=$(_hosts_ns 4)
if ! { ip netns exec "$ns" nft add table inet meshrun_loss &&
       ip netns exec "$ns" nft add chain inet meshrun_loss out \
         '{ type filter hook output priority 0 ; }' &&
       ip netns exec "$ns" nft add rule inet meshrun_loss out oifname eth0 \
         numgen random mod 100 '<' "$PCT" drop; }; then
  echo "FAIL could not make node4's link lossy (nft)"
  exit 1
fi
CASE=cases/mlp-train/b16-d4-h32-o3.json
for probes in "$@"; do
  export OMPI_MCA_oob_tcp_keepalive_probes=$probes
  bad=0
  secs=""
  for _ in $(seq "$N"); do
    FAILED=0
    same_bytes 2 8 mlp-train --exact "$CASE" >"$TMP/last"
    if [ "$FAILED" = 1 ]; then
      bad=$((bad + 1))
      head -c 400 "$TMP/last"
      echo
    fi
    secs="$secs $SECS"
    nothing_left "run" >/dev/null  # a run that lost its daemon must not leave ranks to the next
  done
  echo "loss $PCT%, oob_tcp_keepalive_probes=$probes: $bad of $N runs failed; seconds:$secs"
done
