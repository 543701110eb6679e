#!/bin/bash
# Alternates the 64 KiB psum of the meshrun builds given (each 0.3 s of `bench allreduce`) with
# threads_f (../shared/peers/thread_baselines.cpp, as issue32_rows.sh builds it), then times a
# cache line's round trip between the CPUs (build/release/line_rtt); one line per round:
#   HH:MM:SS  <each build's median us>  threads_f_median_us  line_rtt_ns
#   bash ab_alternate.sh SECONDS BUILD...   (from anywhere; needs make build and issue32_rows.sh's
#                                            thread_baselines in /tmp/meshrun-peers-build)
F=/tmp/meshrun-peers-build/thread_baselines
RTT=$(cd "$(dirname "$0")/../../../.." && pwd)/build/release/line_rtt
end=$(( $(date +%s) + $1 )); shift
while [ $(date +%s) -lt $end ]; do
  line="$(date +%T)"
  for b in "$@"; do
    line="$line $($b bench allreduce --min-bytes 65536 --max-bytes 65536 --size-budget 0.3 | tail -1 | awk '{print $4}')"
  done
  line="$line $($F --only direct --max-elems 16384 --size-budget 0.3 --spin-cap 30 2>&1 | grep -E '^ +65536 ' | awk '{print $4}') $("$RTT")"
  echo "$line"
done
