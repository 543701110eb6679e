#!/bin/sh
# Writes the program files of issue #31's reading measurements into DIR (coreutils and awk only):
#   empty-objects-N.json  cases/invalid-programs/valid/double.json with N empty objects in a key
#                         the reader never reads ("unread": [{}, {}, ...]);
#   equations-N.json      a valid program of N equations: x * 2, N times, inside its shard_map.
# Usage: make_files.sh DIR N...   (each N gives both files). bench/program_reader/measure.sh
# reads them under /usr/bin/time; tests/cli/program_limits_test.cpp writes its own.
set -eu
dir=${1:?usage: make_files.sh DIR N...}
shift
mkdir -p "$dir"
for n in "$@"; do
  awk -v n="$n" 'BEGIN {
    printf "{\"format\": \"meshrun-program\", \"version\": 1, \"name\": \"double\", \"unread\": ["
    for (i = 0; i < n; i++) printf "%s{}", (i ? "," : "")
    printf "], \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\"]}], \"outputs\": [{\"name\": \"y\"}], "
    printf "\"exports\": [{\"mesh\": [[\"data\", 8]], \"dims\": [\"M\"], \"jaxpr\": {\"invars\": [{\"id\": 0, \"type\": {\"dtype\": \"f32\", \"shape\": [\"8*M\"]}}], "
    printf "\"eqns\": [{\"primitive\": \"shard_map\", \"params\": {\"mesh\": [[\"data\", 8]], \"in_specs\": [[\"data\"]], \"out_specs\": [[\"data\"]], \"check_vma\": true, "
    printf "\"jaxpr\": {\"invars\": [{\"id\": 0, \"type\": {\"dtype\": \"f32\", \"shape\": [\"M\"]}}], \"eqns\": [{\"primitive\": \"mul\", \"params\": {}, \"in\": [{\"var\": 0}, {\"lit\": 2.0, \"dtype\": \"f32\"}], \"out\": [{\"id\": 1, \"type\": {\"dtype\": \"f32\", \"shape\": [\"M\"]}}]}], \"outvars\": [{\"var\": 1}]}}, "
    printf "\"in\": [{\"var\": 0}], \"out\": [{\"id\": 1, \"type\": {\"dtype\": \"f32\", \"shape\": [\"8*M\"]}}]}], \"outvars\": [{\"var\": 1}]}}]}\n"
  }' > "$dir/empty-objects-$n.json"
  awk -v n="$n" 'BEGIN {
    printf "{\"format\": \"meshrun-program\", \"version\": 1, \"name\": \"double\", "
    printf "\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\"]}], \"outputs\": [{\"name\": \"y\"}], "
    printf "\"exports\": [{\"mesh\": [[\"data\", 8]], \"dims\": [\"M\"], \"jaxpr\": {\"invars\": [{\"id\": 0, \"type\": {\"dtype\": \"f32\", \"shape\": [\"8*M\"]}}], "
    printf "\"eqns\": [{\"primitive\": \"shard_map\", \"params\": {\"mesh\": [[\"data\", 8]], \"in_specs\": [[\"data\"]], \"out_specs\": [[\"data\"]], \"check_vma\": true, "
    printf "\"jaxpr\": {\"invars\": [{\"id\": 0, \"type\": {\"dtype\": \"f32\", \"shape\": [\"M\"]}}], \"eqns\": ["
    for (i = 0; i < n; i++)
      printf "%s\n{\"primitive\": \"mul\", \"params\": {}, \"in\": [{\"var\": %d}, {\"lit\": 2.0, \"dtype\": \"f32\"}], \"out\": [{\"id\": %d, \"type\": {\"dtype\": \"f32\", \"shape\": [\"M\"]}}], \"source\": \"bench.py:%d (f)\"}", (i ? "," : ""), i, i + 1, i + 1
    printf "], \"outvars\": [{\"var\": %d}]}}, ", n
    printf "\"in\": [{\"var\": 0}], \"out\": [{\"id\": 1, \"type\": {\"dtype\": \"f32\", \"shape\": [\"8*M\"]}}]}], \"outvars\": [{\"var\": 1}]}}]}\n"
  }' > "$dir/equations-$n.json"
done
