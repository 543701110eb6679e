"""The interpreted rows of `meshrun bench programs --json` beside the hand-written ones: one table
row per program and size, whole-process total_s of the .npy case (hand-written) and of `meshrun
run cases/programs/<p>.json` on it (interpreted), one column pair per JSON file given, and the
speed hand / run (above 1: the interpreter is faster).

    python3 bench/programs_run_table.py ROWS.json [ROWS2.json ...]
"""
import json, sys
rows = [json.load(open(f)) for f in sys.argv[1:]]
keys = sorted({(x['program'], x['size']) for x in rows[0]})
for prog, size in keys:
    cells = []
    for r in rows:
        t = {x['input']: x['total_s'] for x in r if x['program'] == prog and x['size'] == size}
        cells.append((t['npy'], t['run']))
    hand = " / ".join(f"{a*1e3:.2f}" for a, _ in cells)
    run = " / ".join(f"{b*1e3:.2f}" for _, b in cells)
    speed = " / ".join(f"{a/b:.2f}x" for a, b in cells)
    print(f"| {prog} {size} | {hand} ms | {run} ms | {speed} |")
