#!/usr/bin/env python3
"""The GEMM row of issue 21: tp-mlp's compute with one device per core as a share of this
machine's float32 FMA ceiling, both measured in the same run, in alternating rounds.

    /usr/bin/python3 bench/gemm_share.py ROUNDS CASE NAME=BUILD_DIR [NAME=BUILD_DIR ...]

CASE is the big tp-mlp case (B=256 D=1024 H=4096 O=256) in .npy form, as `meshrun bench programs
--rounds 1 --keep DIR` leaves it: DIR/tp-mlp-B=256,D=1024,H=4096,O=256/npy/case.json. Each
BUILD_DIR holds a `meshrun` and a `kernels_bench` (build/release, or a copy of an older build to
compare against). PEAK_FMA (default /tmp/peak_fma) is ../shared/peers/peak_fma.cpp built with
`g++ -O3 -march=native peak_fma.cpp -o /tmp/peak_fma -pthread`.

Every round: peak_fma on 2 threads and on 1 (20 ms trials, best of 10, so its windows are as
short as the kernels'), then for each build (their order alternating from round to round):
`meshrun tp-mlp CASE --timings --devices 2 --repeat 20` three times (warm steps: the best of the
three processes' median compute GFLOP/s, flops over the slowest device's compute_s -- the
program's own figure, the row's), `meshrun tp-mlp CASE --timings --devices 2` five times (one cold
run per process: the best), `kernels_bench tp-mlp 256 1024 4096
256 --devices 2 --reps 10` (the two products alone, warm), and `kernels_bench gemm` on the two
per-device products (1 thread, --reps 20); then peak_fma again. Prints one JSON line per round
and a summary: the share of each figure against the best peak of its own round (median and range
over the rounds) and best against best.
"""
import json
import os
import re
import statistics
import subprocess
import sys

PEAK_FMA = os.environ.get('PEAK_FMA', '/tmp/peak_fma')


def run(cmd, stderr=False):
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return p.stderr if stderr else p.stdout


def peak(threads):
    # The machine's widest FMA: AVX-512 where it has it, else AVX2 (CI's machine kind).
    r = json.loads(run([PEAK_FMA, str(threads), '0.02', '10']))
    return r['avx512_gflops'] if r['avx512_gflops'] is not None else r['avx2_gflops']


def kernels_bench(build, *args):
    out = run([f'{build}/kernels_bench', *args])
    m = re.search(r'gflops=([\d.]+) .*gflops_per_cpu_s=([\d.]+)', out)
    return float(m.group(1)), float(m.group(2))


def meshrun_compute(build, case, runs, *flags):
    best = 0.0
    for _ in range(runs):
        err = run([f'{build}/meshrun', 'tp-mlp', case, '--timings', '--devices', '2', *flags],
                  stderr=True)
        best = max(best, json.loads(err.strip().splitlines()[-1])['gflops'])
    return best


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, case = int(sys.argv[1]), sys.argv[2]
    builds = [a.split('=', 1) for a in sys.argv[3:]]
    rows = []
    for r in range(rounds):
        row = {'round': r + 1, 'load': open('/proc/loadavg').read().split()[0],
               'peak2': [peak(2)], 'peak1': [peak(1)]}
        for name, build in (builds if r % 2 == 0 else builds[::-1]):
            row[name] = {
                'meshrun_d2_warm': meshrun_compute(build, case, 3, '--repeat', '20'),
                'meshrun_d2': meshrun_compute(build, case, 5),
                'kb_tpmlp_d2': kernels_bench(build, 'tp-mlp', '256', '1024', '4096', '256',
                                             '--devices', '2', '--reps', '10'),
                'gemm_256x1024x2048': kernels_bench(build, 'gemm', '256', '1024', '2048',
                                                    '--reps', '20'),
                'gemm_256x2048x256': kernels_bench(build, 'gemm', '256', '2048', '256',
                                                   '--reps', '20'),
            }
        row['peak2'].append(peak(2))
        row['peak1'].append(peak(1))
        rows.append(row)
        print(json.dumps(row), flush=True)

    p2 = max(max(r['peak2']) for r in rows)
    p1 = max(max(r['peak1']) for r in rows)
    print(f'# peak_fma, best of the run: 2 threads {p2:.1f}, 1 thread {p1:.1f} GFLOP/s')

    def share(name, key, threads):
        vals = [r[name][key] if key.startswith('meshrun') else r[name][key][0] for r in rows]
        per_round = [v / max(r[f'peak{threads}']) for v, r in zip(vals, rows)]
        best_peak = p2 if threads == 2 else p1
        return (f'best {max(vals):.1f} GFLOP/s = {max(vals) / best_peak:.2f} of the best peak; '
                f'per round {statistics.median(per_round):.2f} '
                f'({min(per_round):.2f}-{max(per_round):.2f})')

    for name, _ in builds:
        cpu = statistics.median(r[name]['kb_tpmlp_d2'][1] for r in rows)
        print(f'# {name}: meshrun tp-mlp --devices 2 --repeat 20, warm compute: '
              f'{share(name, "meshrun_d2_warm", 2)}')
        print(f'# {name}: meshrun tp-mlp --devices 2, one cold run: {share(name, "meshrun_d2", 2)}')
        print(f'# {name}: kernels_bench tp-mlp --devices 2: {share(name, "kb_tpmlp_d2", 2)}; '
              f'median {cpu:.1f} GFLOP/s per CPU second')
        for key in ('gemm_256x1024x2048', 'gemm_256x2048x256'):
            print(f'# {name}: kernels_bench {key[5:]}, 1 thread: {share(name, key, 1)}')


if __name__ == '__main__':
    main()
