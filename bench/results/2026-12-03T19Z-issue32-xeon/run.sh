#!/bin/bash
# issue #32's figures on a 2-vCPU Intel Xeon with AVX-512, measured side by side with their peers,
# on main's release build (build/release), nothing else of ours running. OUT: this folder.
# BEFORE: a release meshrun of ff61de4 (before the identity rename), for the interpreted A/B.
set -u
cd /work/main
OUT=$PWD/bench/results/2026-12-03T19Z-issue32-xeon
BEFORE=${BEFORE:-/work/ci1/build/release/meshrun}
log() { echo "[$(date -u +%H:%M:%SZ)] load $(cut -d' ' -f1-3 /proc/loadavg) $*"; }
[ -x /tmp/peak_fma ] || g++ -O3 -march=native ../shared/peers/peak_fma.cpp -o /tmp/peak_fma -pthread
[ -x /tmp/floor_static ] || g++ -O2 -std=c++20 -static ../shared/peers/floor_threads.cpp -o /tmp/floor_static -pthread
log "start-up: alternate 10 x 30 pairs"
for s in $(seq 10); do build/release/alternate 30 3 -- build/release/meshrun dp-step cases/dp-step/example1.json -- /tmp/floor_static > /tmp/startup_a$s.json || true; done
/usr/bin/python3 - <<'PY' > $OUT/startup.txt
import json, statistics as st
r=[json.load(open(f"/tmp/startup_a{s}.json")) for s in range(1,11)]
q=[x["ratio"] for x in r]
print("meshrun median ms", round(st.median(x["a_median_ms"] for x in r),3), "floor_static median ms", round(st.median(x["b_median_ms"] for x in r),3), "ratio median", round(st.median(q),3), "range", round(min(q),3), round(max(q),3), "failed", sum(x["a_failed"]+x["b_failed"] for x in r))
PY
cat $OUT/startup.txt
log "peers run_all CORE=1"
MESHRUN=$PWD/build/release/meshrun CORE=1 RES=$OUT/peers bash ../shared/peers/run_all.sh > $OUT/peers.txt 2>&1
log "gemm_share 6 rounds"
/usr/bin/python3 bench/gemm_share.py 6 /tmp/cases/tpmlp/case.json main=build/release > $OUT/gemm_share.txt 2>&1
log "jax warm"
build/jax-venv/bin/python bench/jax/warm.py build/release/meshrun /tmp/jax-warm > $OUT/jax_warm.txt 2>&1  # (its .npy cases stay in /tmp)
log "interpreted mlp-train, before/after the identity rename, alternating, 5 rounds"
for r in 1 2 3 4 5; do
  for b in "$BEFORE" build/release/meshrun; do
    echo "$b $($b run cases/programs/mlp-train.json /tmp/jax-warm/mlp-train.json --repeat 21 --timings -o /dev/null 2>&1 | tail -1)"
  done
done > $OUT/interp_ab.txt
log "done"
