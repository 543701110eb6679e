#!/bin/sh
# Issue #31's reading measurement: meshrun reads each file of make_files.sh (the program, then a
# case that does not exist: reading and loading only) under /usr/bin/time, and Python's
# json.loads reads the same bytes, as the yardstick of a linear parse on the same machine at the
# same moment (this 2-core VM is shared: compare ratios, not seconds).
# Usage: measure.sh MESHRUN DIR N...   Prints one row per file:
#   file bytes meshrun_user_s meshrun_wall_s meshrun_max_rss_kb rss/bytes python_json_loads_s
set -eu
meshrun=${1:?usage: measure.sh MESHRUN DIR N...}
dir=${2:?usage: measure.sh MESHRUN DIR N...}
shift 2
here=$(dirname "$0")
ns="$*"
sh "$here/make_files.sh" "$dir" "$@"
printf '%-28s %11s %7s %7s %10s %8s %7s\n' file bytes user_s wall_s max_rss_kb rss/byte py_s
for n in $ns; do
  for kind in empty-objects equations; do
    f="$dir/$kind-$n.json"
    bytes=$(wc -c < "$f")
    /usr/bin/time -f '%U %e %M' -o "$dir/time.txt" "$meshrun" run "$f" "$dir/no-such-case.json" \
      >/dev/null 2>&1 || true
    # shellcheck disable=SC2046
    set -- $(tail -n 1 "$dir/time.txt")  # after time's "Command exited with non-zero status 2"
    user=$1 wall=$2 rss=$3
    py=$(python3 -c 'import json, sys, time; s = open(sys.argv[1]).read(); t = time.process_time(); json.loads(s); print("%.2f" % (time.process_time() - t))' "$f")
    printf '%-28s %11s %7s %7s %10s %8.1f %7s\n' "$kind-$n" "$bytes" "$user" "$wall" "$rss" \
      "$(echo "$rss * 1024 / $bytes" | bc -l)" "$py"
  done
done
