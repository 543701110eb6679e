#!/bin/bash
# Issue #32's measured rows on this machine's release build, each beside its peer in the same run:
#   startup.txt     start-up, `meshrun dp-step cases/dp-step/example1.json` against
#                   ../shared/peers/floor_threads.cpp built -static (10 x 30 alternated pairs),
#                   after dropping the page cache (as root)
#   allreduce_ab.txt  64 KiB psum, 8 devices, against threads_f (6 alternated rounds; with
#                   OLD=<another build's meshrun>, that build too, for a before/after), and
#                   after each round a cache line's round trip between the CPUs (line_rtt)
#   peers/          ../shared/peers/run_all.sh with CORE=1 (limits, OpenMPI, threads_e/f, meshrun)
#   gemm_share.txt  tp-mlp B=256 D=1024 H=4096 O=256 (.npy) against peak_fma (6 rounds); the case
#                   is made here once by gen_big_case.py (seed 1) under /tmp/cases/tpmlp
#   errors.txt      runs that fail (a missing case file, exit 2) and --version, with OLD's
#                   beside when given (hyperfine, 300 runs each, after dropping the page cache)
#   log.txt         when each started, with the load average
#
#   bash bench/issue32_rows.sh OUT [ROW...]   ROW: startup allreduce peers gemm errors (default: all)
#
# Needs `make build` and `make peer-deps` (OpenMPI, gloo, hyperfine). Minutes: about 12 in all.
set -u -o pipefail
OUT=${1:?usage: issue32_rows.sh OUT [startup] [allreduce] [peers] [gemm] [errors]}
shift
ROWS=${*:-startup allreduce peers gemm errors}
for row in $ROWS; do
  case $row in startup | allreduce | peers | gemm | errors) ;;
    *) echo "issue32_rows.sh: unknown row '$row'" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ -n "${OLD:-}" ]; then OLD=$(realpath "$OLD") || exit 2; fi
cd "$(dirname "$0")/.."
PEERS=$(cd ../shared/peers && pwd) || { echo "issue32_rows.sh: no ../shared/peers" >&2; exit 2; }
BIN=$PWD/build/release
[ -x "$BIN/meshrun" ] && [ -x "$BIN/alternate" ] && [ -x "$BIN/line_rtt" ] || { echo "issue32_rows.sh: run make build first" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%SZ)] load $(cut -d' ' -f1-3 /proc/loadavg) $*" | tee -a "$OUT/log.txt"; }
echo "main at $(git describe --always --dirty) ($(git log --oneline -1))" >>"$OUT/log.txt"
# Process start-up depends on how the binaries' pages came into the page cache: on this VM one
# file started 10-15% faster or slower depending on whether the linker, cp or a read from disk
# had put it there (bench/README.md, 2026-12-04 22Z). So the rows that time whole processes read
# every binary back from disk alike first. Needs root; it empties the whole machine's page cache,
# which slows whatever else runs.
drop_page_cache() {
  if [ -w /proc/sys/vm/drop_caches ] && sync && echo 1 >/proc/sys/vm/drop_caches; then
    log "$1: page cache dropped"
  else
    log "$1: page cache NOT dropped (not root?): the row may be off by 10-15%"
  fi
}

for row in $ROWS; do
  case $row in
    startup)
      [ -x /tmp/floor_static ] ||
        g++ -O2 -std=c++20 -static "$PEERS/floor_threads.cpp" -o /tmp/floor_static -pthread
      drop_page_cache start-up
      log "start-up: alternate 10 x 30 pairs"
      for s in $(seq 10); do
        "$BIN/alternate" 30 3 -- "$BIN/meshrun" dp-step cases/dp-step/example1.json \
          -- /tmp/floor_static >"$OUT/startup_round$s.json" || log "round $s failed"
      done
      /usr/bin/python3 - "$OUT" <<'PY' | tee "$OUT/startup.txt"
import json, statistics as st, sys
r = [json.load(open(f"{sys.argv[1]}/startup_round{s}.json")) for s in range(1, 11)]
q = [x["ratio"] for x in r]
print("meshrun median ms", round(st.median(x["a_median_ms"] for x in r), 3),
      "floor_static median ms", round(st.median(x["b_median_ms"] for x in r), 3),
      "ratio median", round(st.median(q), 3), "range", round(min(q), 3), round(max(q), 3),
      "failed", sum(x["a_failed"] + x["b_failed"] for x in r))
PY
      ;;
    allreduce)
      F=/tmp/meshrun-peers-build/thread_baselines
      # built as run_all.sh builds it
      [ -x $F ] || { mkdir -p "${F%/*}" && g++ -O2 -std=c++20 -Wall "$PEERS/thread_baselines.cpp" -o $F -pthread; }
      log "64 KiB psum: 6 alternated rounds"
      for i in 1 2 3 4 5 6; do
        for b in ${OLD:+OLD} NEW; do
          bin=$BIN/meshrun
          [ $b = OLD ] && bin=$OLD
          echo "$i $b $("$bin" bench allreduce --min-bytes 65536 --max-bytes 65536 \
            --size-budget 0.7 | tail -1 | awk '{print "median_us", $4, "mean_us", $5}')"
        done
        echo "$i threads_f $($F --only direct --max-elems 16384 --size-budget 0.7 --spin-cap 30 \
          2>&1 | grep -E '^ +65536 ' | awk '{print "median_us", $4, "mean_us", $5}')"
        echo "$i line_rtt_ns $("$BIN/line_rtt")"
      done | tee "$OUT/allreduce_ab.txt"
      ;;
    peers)
      log "peers: run_all.sh CORE=1"
      MESHRUN=$BIN/meshrun CORE=1 RES=$OUT/peers bash "$PEERS/run_all.sh" >"$OUT/peers.txt" 2>&1
      cat "$OUT/peers/summary.txt"
      ;;
    gemm)
      [ -x /tmp/peak_fma ] ||
        g++ -O3 -march=native "$PEERS/peak_fma.cpp" -o /tmp/peak_fma -pthread
      if [ ! -f /tmp/cases/tpmlp/case.json ]; then
        mkdir -p /tmp/cases/tpmlp
        /usr/bin/python3 "$PEERS/gen_big_case.py" tp-mlp /tmp/cases/tpmlp/case.json \
          B=256 D=1024 H=4096 O=256 --npy || exit 1
      fi
      log "GEMM share: 6 rounds"
      /usr/bin/python3 bench/gemm_share.py 6 /tmp/cases/tpmlp/case.json main=build/release \
        >"$OUT/gemm_share.txt" 2>&1
      tail -n 4 "$OUT/gemm_share.txt"
      ;;
    errors)
      drop_page_cache errors
      log "failing runs and --version: hyperfine, 300 runs each"
      cmds=()
      for b in ${OLD:+OLD} NEW; do
        bin=$BIN/meshrun
        [ $b = OLD ] && bin=$OLD
        cmds+=("$bin dp-step /nonexistent/case.json" "$bin --version")
      done
      hyperfine -N -i --style basic --warmup 20 --runs 300 --export-json "$OUT/errors.json" \
        "${cmds[@]}" >"$OUT/hyperfine_errors.txt" 2>&1
      /usr/bin/python3 - "$OUT/errors.json" <<'PY' | tee "$OUT/errors.txt"
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['median'] * 1e3:8.3f} ms median  {r['mean'] * 1e3:8.3f} ms mean  {r['command']}")
PY
      ;;
  esac
done
log done
