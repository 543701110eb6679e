"""How long the test objects take to compile, each alone, two at a time (issue #32.7).

    python3 bench/test_compile_times.py BUILD_DIR [PATH_PART]

Runs the compile command of every translation unit in BUILD_DIR/compile_commands.json whose path
contains PATH_PART (default /tests/), output to /tmp, without a compiler cache (the commands
name the compiler itself), and prints the twelve slowest, then the count, the sum of their wall
times (CPU seconds: each compile is one thread) and the whole run's wall time. A tree must have
been built once (generated headers, and the precompiled header the tests reuse: `cmake --build
BUILD_DIR --target meshrun_test_main`; its own compile is one of the rows). For a tree without
the precompiled header: configure another with -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON.
"""
import concurrent.futures as cf
import json
import os
import shlex
import subprocess
import sys
import time


def main(build, part="/tests/"):
    with open(os.path.join(build, "compile_commands.json")) as f:
        units = [u for u in json.load(f) if part in u["file"]]

    def compile_one(u):
        args = shlex.split(u["command"])
        args[args.index("-o") + 1] = f"/tmp/compile_times_{os.getpid()}_{abs(hash(u['file']))}.o"
        start = time.time()
        r = subprocess.run(args, cwd=u["directory"], capture_output=True)
        os.remove(args[args.index("-o") + 1]) if r.returncode == 0 else None
        return u["file"], time.time() - start, r.returncode

    start = time.time()
    with cf.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(compile_one, units))
    for name, s, rc in sorted(results, key=lambda r: -r[1])[:12]:
        print(f"{s:6.1f} s  exit {rc}  {name}")
    print("TUs", len(results), "sum", round(sum(s for _, s, _ in results), 1), "s, wall",
          round(time.time() - start, 1), "s, failed", sum(rc != 0 for _, _, rc in results))
    return 1 if any(rc != 0 for _, _, rc in results) else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
