#!/usr/bin/env bash
# Issue 9's table, every row in one run, meshrun and its peer alternating within each round so
# that the ratios come from the same moments of a shared, noisy machine:
#
#   1. compute GFLOP/s of tp-mlp B=256 D=1024 H=4096 O=256 (kernels_bench) vs numpy's sgemm of
#      the first product's shape (programs_numpy.py gemm 256 1024 4096)
#   2. whole process, the 39 MB JSON dp-step case (N=65536 D=64 K=16) vs programs_numpy.py
#   3. whole process, tp-mlp of row 1 with .npy inputs vs programs_numpy.py
#   4. peak RSS of row 2 (/usr/bin/time -f %M)
#   5. the first documented example as a whole process vs floor_threads.cpp built -static
#      (bench/alternate.cpp: 10 rounds of 30 pairs, each pair the two commands back to back, their
#      order alternating: the median of the 10 rounds' ratios of medians, and their range. With
#      hyperfine, even in slices of 30 runs of each command, the slices' ratios spread from 0.4 to
#      3.9 on this VM, whose speed changes several-fold from one second to the next.)
#
# numpy runs as ../shared/peers/README.md asks (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset) and
# again with OPENBLAS_CORETYPE=SkylakeX: OpenBLAS 0.3.21 does not recognise every AVX-512 CPU
# and falls back to SSE3 kernels; the faster of the two is the peer.
#
#   bash bench/programs_table.sh [ROUNDS]      (needs make build, python3-numpy, bc)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
M=${MESHRUN:-build/release/meshrun}
K=${KERNELS_BENCH:-build/release/kernels_bench}
ALT=${ALTERNATE:-build/release/alternate}
PEERS=${PEERS:-../shared/peers}
DIR=${CASES:-/tmp/meshrun-programs-table}
PY=/usr/bin/python3
mkdir -p "$DIR"
[ -f "$DIR/dp.json" ] || $PY "$PEERS/gen_big_case.py" dp-step "$DIR/dp.json" N=65536 D=64 K=16 >/dev/null
[ -f "$DIR/tpn.json" ] || $PY "$PEERS/gen_big_case.py" tp-mlp "$DIR/tpn.json" B=256 D=1024 H=4096 O=256 --npy >/dev/null
[ -x "$DIR/floor_static" ] || g++ -O2 -std=c++20 -static "$PEERS/floor_threads.cpp" -o "$DIR/floor_static"

secs() {  # wall seconds of one run of "$@", output discarded
  local s e
  s=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  e=$(date +%s.%N)
  echo "$e - $s" | bc
}
numpy() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $PY "$PEERS/programs_numpy.py" "$@"; }
numpy_skx() { env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=SkylakeX $PY "$PEERS/programs_numpy.py" "$@"; }
kernels_gflops() { grep -oE 'gflops=[0-9.]+' | head -1 | cut -d= -f2; }
numpy_gflops() { $PY -c 'import json, sys; print(round(json.load(sys.stdin)["gflops"], 1))'; }
min() { echo "if ($1 < $2) $1 else $2" | bc -l; }
max() { echo "if ($1 > $2) $1 else $2" | bc -l; }
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }

echo "| round | row | meshrun | numpy (prescribed) | numpy (SkylakeX) | meshrun / best peer |"
echo "|---|---|---|---|---|---|"
for r in $(seq "$ROUNDS"); do
  k=$($K tp-mlp 256 1024 4096 256 | kernels_gflops)
  a=$(numpy gemm 256 1024 4096 | numpy_gflops)
  b=$(numpy_skx gemm 256 1024 4096 | numpy_gflops)
  echo "| $r | 1. compute GFLOP/s | $k | $a | $b | $(ratio "$k" "$(max "$a" "$b")") (higher is better) |"
  for c in "dp-step $DIR/dp.json 2" "tp-mlp $DIR/tpn.json 3"; do
    set -- $c
    m=$(secs "$M" "$1" "$2")
    a=$(secs numpy "$1" "$2")
    b=$(secs numpy_skx "$1" "$2")
    echo "| $r | $3. whole process $1 (s) | $m | $a | $b | $(ratio "$m" "$(min "$a" "$b")") |"
  done
  rss=$( { /usr/bin/time -f %M "$M" dp-step "$DIR/dp.json" >/dev/null; } 2>&1 | tail -1)
  echo "| $r | 4. peak RSS dp-step (MB) | $(echo "scale=1; $rss / 1024" | bc) | | | |"
  # Row 5: bench/alternate.cpp, 10 rounds of 30 pairs (meshrun and the floor back to back, the
  # order alternating): the median and range of the rounds' ratios of medians. A run that failed
  # is counted in the row (alternate exits 1 then; the rounds' figures still stand).
  for slice in $(seq 10); do
    "$ALT" 30 3 -- "$M" dp-step cases/dp-step/example1.json -- "$DIR/floor_static" \
      >"$DIR/a$slice.json" || true
  done
  read -r mm fm q lo hi failed < <($PY - "$DIR" <<'PY'
import json, statistics as st, sys
rounds = [json.load(open(f"{sys.argv[1]}/a{s}.json")) for s in range(1, 11)]
ratios = [r["ratio"] for r in rounds]
failed = sum(r["a_failed"] + r["b_failed"] for r in rounds)
print(round(st.median(r["a_median_ms"] for r in rounds), 3),
      round(st.median(r["b_median_ms"] for r in rounds), 3),
      f"{st.median(ratios):.2f}", f"{min(ratios):.2f}", f"{max(ratios):.2f}", failed)
PY
)
  echo "| $r | 5. first example, median of 10 rounds' medians of 30 pairs (ms) | $mm | floor_threads -static: $fm | | $q (rounds $lo-$hi; failed runs: $failed) |"
done
