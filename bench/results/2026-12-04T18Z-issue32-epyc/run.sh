#!/bin/bash
# Issue #32's rows 2-4 on main's release build (796d639; lib and app as a836e57), side by side with
# their peers on a 2-vCPU KVM AMD EPYC with AVX-512 right after that commit's clean-clone .ci/run, nothing else
# running: the start-up against floor_threads -static, the peers' all-reduce table (CORE=1), and
# the GEMM share against peak_fma. The tp-mlp case: gen_big_case.py tp-mlp /tmp/cases/tpmlp/case.json
# B=256 D=1024 H=4096 O=256 --npy (seed 1). OUT: this folder.
set -u
cd /work/main
OUT=$PWD/bench/results/2026-12-04T18Z-issue32-epyc
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
log "done"
