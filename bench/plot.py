#!/usr/bin/python3
"""Plots all-reduce benchmarks: latency vs size and busbw vs size, log-log.

    /usr/bin/python3 bench/plot.py FILE... -o OUT.png [--title TEXT]

Each FILE is one of
  * a table in the ../shared/peers format (what `meshrun bench allreduce` prints and what
    run_all.sh writes to results/*.txt): "# peer=..." header, then rows
    bytes elems iters median_us mean_us p90_us algbw_GB/s busbw_GB/s [wrong path];
  * the JSON document of `meshrun bench allreduce --json`;
  * a limits table (limits.txt): its section (c) gives the machine's floor (bound_us) and
    bandwidth ceiling (busbw_max), drawn as dashed black lines;
  * a directory: every *.txt and *.json in it (summary.txt and machine.txt hold no table and are
    skipped).
Each series is labelled by its file name.

    /usr/bin/python3 bench/plot.py --programs ROWS.json -o OUT.png

draws `bench/programs.py --json ROWS.json` instead: per case, meshrun's time per phase (read,
shard, compute, collectives, write) stacked beside numpy's (read, compute, write), in seconds. Only this optional step needs Python (Debian's
python3-matplotlib); meshrun itself never does.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


class PlotError(Exception):
    pass


def parse_table(text):
    """Rows (bytes, median_us, busbw) of a peers-format table; [] when it holds none."""
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or line.lstrip().startswith("#") or len(fields) < 8:
            continue
        try:
            nums = [float(f) for f in fields[:8]]
        except ValueError:
            continue
        rows.append((nums[0], nums[3], nums[7]))
    return rows


def parse_limits(text):
    """Rows (bytes, bound_us, busbw_max) of section (c) of a limits table."""
    rows, in_c = [], False
    for line in text.splitlines():
        if line.startswith("## (c)"):
            in_c = True
            continue
        if line.startswith("## "):
            in_c = False
        fields = line.split()
        # bytes elems B t_25S_us t_16S_us t_futex_us bound_us busbw_max
        if not in_c or line.lstrip().startswith("#") or len(fields) != 8:
            continue
        try:
            rows.append((float(fields[0]), float(fields[6]), float(fields[7])))
        except ValueError:
            continue
    return rows


def parse_json(text, path):
    try:
        doc = json.loads(text)
        return [(float(r["bytes"]), float(r["median_us"]), float(r["busbw_GBps"])) for r in doc["rows"]]
    except (ValueError, KeyError, TypeError) as e:
        raise PlotError(f"{path}: not the JSON of `meshrun bench allreduce --json` ({e})")


def expand(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith((".txt", ".json")))
        else:
            files.append(p)
    return files


def load(paths):
    """(series, limits): series is [(label, rows)], limits [(label, rows)]."""
    series, limits = [], []
    files = expand(paths)
    # Tables from several runs (directories) side by side: each label says which run it is from.
    several_runs = len({os.path.dirname(os.path.abspath(f)) for f in files}) > 1
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            raise PlotError(f"{path}: {e.strerror}")
        label = os.path.splitext(os.path.basename(path))[0]
        if several_runs:
            label += " [" + os.path.basename(os.path.dirname(os.path.abspath(path))) + "]"
        if path.endswith(".json"):
            series.append((label + " (json)", parse_json(text, path)))
        elif "## (c) lower bound" in text:
            limits.append((label, parse_limits(text)))
        elif rows := parse_table(text):
            series.append((label, rows))
        # anything else (summary.txt, machine.txt, ddp_step.txt) holds no all-reduce table
    if not series and not limits:
        raise PlotError("no benchmark table in " + " ".join(paths))
    return series, limits


def style(label):
    """Colour and line by family, so meshrun stands out beside its peers."""
    l = label.lower()
    if "meshrun" in l:
        return dict(color="tab:red", linewidth=2.6, marker="o", zorder=5)
    if "mpi" in l:
        return dict(color="tab:blue", linewidth=1.4, marker="s")
    if "torch" in l:
        return dict(color="tab:purple", linewidth=1.2, marker="v")
    if "gloo" in l:
        return dict(color="tab:green", linewidth=1.2, marker="^")
    if "thread" in l:
        return dict(color="tab:orange", linewidth=1.2, marker="d")
    return dict(color="tab:gray", linewidth=1.0, marker=".")


def size_label(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b / scale:g} {unit}"
    return f"{b:g} B"


def positive(rows, column):
    """(sizes, values) of the rows whose value in `column` is > 0."""
    kept = [(r[0], r[column]) for r in rows if r[column] > 0]
    return [k[0] for k in kept], [k[1] for k in kept]


def plot(series, limits, out, title):
    fig, (lat, bw) = plt.subplots(1, 2, figsize=(15, 6.5))
    # Same family, several runs: vary the line style so the runs can be told apart.
    seen = {}
    for label, rows in series:
        s = style(label)
        n = seen.get(s["color"], 0)
        seen[s["color"]] = n + 1
        s["linestyle"] = ["-", "--", ":", "-."][n % 4]
        # A busbw printed as 0.0000 (too small for the table's 4 decimals) has no place on a log
        # axis: such points are left out rather than drawn at the bottom edge.
        lat.plot(*positive(rows, 1), label=label, markersize=4, **s)
        bw.plot(*positive(rows, 2), label=label, markersize=4, **s)
    for i, (label, rows) in enumerate(limits):
        ls = "--" if i == 0 else ":"
        lat.plot(*positive(rows, 1), color="black", linestyle=ls, linewidth=1.5,
                 label=f"machine floor / ceiling ({label}: max(25 S / B, 4 context switches))")
        bw.plot(*positive(rows, 2), color="black", linestyle=ls, linewidth=1.5)
    all_sizes = sorted({r[0] for _, rows in series + limits for r in rows})
    for ax, ylabel in ((lat, "median latency per call (us)"), (bw, "busbw (GB/s) = bytes/median x 2(n-1)/n")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(all_sizes)
        ax.set_xticklabels([size_label(b) for b in all_sizes], rotation=45, ha="right")
        ax.minorticks_off()
        ax.set_xlabel("bytes per participant")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", alpha=0.3)
    lat.set_title("latency vs size (lower is better)")
    bw.set_title("bus bandwidth vs size (higher is better)")
    handles, labels = lat.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.05 + 0.035 * ((len(labels) + 2) // 3), 1, 0.96))
    fig.savefig(out, dpi=110)


PHASES = [("read_s", "read"), ("shard_s", "shard"), ("compute_s", "compute"),
          ("collectives_s", "collectives"), ("write_s", "write")]


def plot_programs(path, out):
    with open(path) as f:
        rows = json.load(f)
    if not isinstance(rows, list) or not rows or "program" not in rows[0]:
        raise PlotError(f"{path}: not the JSON of bench/programs.py --json")
    fig, ax = plt.subplots(figsize=(11, 5))
    labels, x = [], 0
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for r in rows:
        peer = min(r["numpy"].values(), key=lambda t: t["total_s"])
        for who, t, dx in (("meshrun", r, 0.0), ("numpy", peer, 0.4)):
            bottom = 0.0
            for i, (key, name) in enumerate(PHASES):
                v = t.get(key, 0.0)
                ax.bar(x + dx, v, 0.38, bottom=bottom, color=colors[i], hatch="" if who == "meshrun" else "//",
                       label=name if x == 0 and who == "meshrun" else None, edgecolor="black", linewidth=0.3)
                bottom += v
        labels.append(f"{r['program']}\n{r['size']}\n{r['input']}")
        x += 1
    ax.set_xticks([i + 0.2 for i in range(len(rows))], labels, fontsize=7)
    ax.set_ylabel("seconds (left bar meshrun, hatched bar numpy)")
    ax.set_title("programs: time per phase, meshrun beside numpy + OpenBLAS on the same files")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", metavar="ROWS.json", help="draw bench/programs.py --json instead")
    ap.add_argument("files", nargs="*", metavar="FILE")
    ap.add_argument("-o", "--output", required=True, metavar="OUT.png")
    ap.add_argument("--title", default="all-reduce, 8 participants")
    args = ap.parse_args(argv)
    try:
        if args.programs:
            plot_programs(args.programs, args.output)
            return 0
        series, limits = load(args.files)
        plot(series, limits, args.output, args.title)
    except (PlotError, OSError) as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
