#!/usr/bin/python3
"""meshrun's programs beside numpy + OpenBLAS on the same case files, in one run.

    /usr/bin/python3 bench/programs.py [--meshrun build/release/meshrun] [--rounds 3] [--quick]
                                       [--keep DIR] [--json OUT.json]

1. `meshrun bench programs --json --keep DIR` writes every case (inline JSON and .npy forms) and
   times meshrun on each as a whole process (--timings, best of --rounds).
2. ../shared/peers/programs_numpy.py --timings runs on the very same files, best of --rounds, with
   OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset as the peers' README asks; on a CPU with AVX-512 it
   runs a second time with OPENBLAS_CORETYPE=SkylakeX, since OpenBLAS 0.3.21 does not recognise
   every AVX-512 CPU and then falls back to its SSE3 kernels (the fairer opponent is the faster).
3. Prints one markdown table: per case the whole-process time and compute GFLOP/s of each, and
   meshrun / numpy ratios (a time ratio < 1 and a GFLOP/s ratio > 1 favour meshrun).

Python and numpy are for this comparison only; meshrun itself never needs them.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "..", "shared", "peers", "programs_numpy.py")


def numpy_timings(program, case, rounds, coretype):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    best = None
    for _ in range(rounds):
        done = subprocess.run(["/usr/bin/python3", PEER, program, case, "--timings"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
        t = json.loads(done.stderr.strip().splitlines()[-1])
        if best is None or t["total_s"] < best["total_s"]:
            best = t
    return best


def has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512f" in f.read()
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meshrun", default=os.path.join(HERE, "..", "build", "release", "meshrun"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--keep", default="/tmp/meshrun-bench-programs")
    ap.add_argument("--json", help="also write every row as JSON here")
    a = ap.parse_args()

    cmd = [a.meshrun, "bench", "programs", "--json", "--keep", a.keep, "--rounds", str(a.rounds)]
    if a.quick:
        cmd.append("--quick")
    rows = json.loads(subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True).stdout)
    coretypes = [None] + (["SkylakeX"] if has_avx512() else [])
    for r in rows:
        r["numpy"] = {c or "default": numpy_timings(r["program"], r["case"], a.rounds, c) for c in coretypes}

    print("| program | size | input | meshrun total s | numpy total s (default / SkylakeX) | time ratio "
          "| meshrun compute GFLOP/s | numpy GFLOP/s | GFLOP/s ratio | meshrun read MB/s | numpy read MB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        peers = list(r["numpy"].values())
        best = min(peers, key=lambda t: t["total_s"])
        fastest = max(peers, key=lambda t: t["gflops"])
        print(f"| {r['program']} | {r['size']} | {r['input']} | {r['total_s']:.3f} | "
              + " / ".join(f"{t['total_s']:.3f}" for t in peers)
              + f" | {r['total_s'] / best['total_s']:.2f}x | {r['gflops']:.1f} | "
              + " / ".join(f"{t['gflops']:.1f}" for t in peers)
              + f" | {r['gflops'] / fastest['gflops']:.2f}x | {r['read_MBps']:.0f} | {best['read_MBps']:.0f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
