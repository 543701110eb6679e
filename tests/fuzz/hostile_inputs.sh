#!/bin/sh
# Writes the hostile inputs too big to keep in tests/fuzz/corpus into DIR: 100,000-level nesting,
# a ~50 MB case, numbers with a million digits, a megabyte of NUL bytes and of invalid UTF-8.
# `make fuzz` runs the fuzz target once on each (no crash, leak, hang or stack overflow), then
# fuzzes from the small corpus. Needs only coreutils and awk.
set -eu
dir=${1:?usage: hostile_inputs.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
# Program files (issue #31): 10^5 and 10^6 empty objects in a key the reader never reads, and a
# valid program of 10^5 equations (bench/program_reader/make_files.sh); 2^25 + 1 values.
sh "$here/../../bench/program_reader/make_files.sh" "$dir" 100000
sh "$here/../../bench/program_reader/make_files.sh" "$dir" 1000000
rm "$dir/equations-1000000.json"  # 190 MB: the benchmark's, not the sanitizers'
cd "$dir"

# repeat STRING COUNT: STRING written COUNT times, no newline.
repeat() { awk -v s="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'; }

{ repeat '[' 100000; repeat ']' 100000; } > nest-array-100k.json
{ repeat '{"a":' 100000; printf 1; repeat '}' 100000; } > nest-object-100k.json
{ repeat '[{"x":' 50000; } > nest-mixed-unterminated-100k.json
repeat '[' 1000000 > nest-unterminated-1m.json
# Deep nesting where a tensor is expected, inside an otherwise valid case.
{ printf '{"problem":"dp-step","name":"deep","input":{"w":'; repeat '[' 100000; printf '0.5'; repeat ']' 100000
  printf ',"b":[0.0],"x":[[1.0]],"y":[[1.0]],"lr":0.1}}'; } > nest-in-tensor-100k.json

# A ~50 MB dp-step case (N = 1,600,000 rows of x (N, 4) and y (N, 1)): read, validated, and --
# with 8 devices -- accepted.
awk 'BEGIN {
  n = 1600000
  printf "{\"problem\":\"dp-step\",\"name\":\"big\",\"input\":{\"w\":[[0.5],[0.25],[-1.0],[2.0]],\"b\":[0.125],\"x\":["
  for (i = 0; i < n; i++) printf "%s[%d.25,-1.5,0.0625,3.0]", (i ? "," : ""), i % 1000
  printf "],\"y\":["
  for (i = 0; i < n; i++) printf "%s[%d.5]", (i ? "," : ""), i % 100
  printf "],\"lr\":0.01}}"
}' > case-50mb.json
# The same size of numbers in one array, with one bad element at the very end.
awk 'BEGIN {
  printf "{\"problem\":\"tp-mlp\",\"name\":\"big\",\"input\":{\"x\":[["
  for (i = 0; i < 5000000; i++) printf "%s%d.125", (i ? "," : ""), i % 10000
  printf ",\"oops\"]],\"w1\":[[1.0]],\"b1\":[0.0],\"w2\":[[1.0]],\"b2\":[0.0]}}"
}' > array-50mb-bad-last.json

# Numbers with a million digits, and exponents beyond any range.
{ printf '{"problem":"dp-step","name":"n","input":{"w":[[0.0]],"b":[0.0],"x":[[1.0]],"y":[[1.0]],"lr":'
  repeat 9 1000000; printf '}}'; } > number-1m-digit-integer.json
{ printf '{"problem":"dp-step","name":"n","input":{"w":[[0.0]],"b":[0.0],"x":[[1.0]],"y":[[1.0]],"lr":0.'
  repeat 0 1000000; printf '1}}'; } > number-1m-digit-fraction.json
{ printf '{"problem":"dp-step","name":"n","input":{"w":[[0.0]],"b":[0.0],"x":[[1.0]],"y":[[1.0]],"lr":1e'
  repeat 9 100000; printf '}}'; } > number-100k-digit-exponent.json

{ printf '{"format": "meshrun-program", "version": 1, "name": "p", "unread": [0'
  repeat ',0' 33554432; printf ']}'; } > program-values-2-25-plus-1.json

# A megabyte of NUL bytes, of 0xFF, and of a truncated 4-byte UTF-8 sequence inside a string.
head -c 1048576 /dev/zero > nul-1mb.json
head -c 1048576 /dev/zero | tr '\000' '\377' > ff-1mb.json
{ printf '{"problem":"dp-step","name":"'; head -c 1048576 /dev/zero | tr '\000' '\360'; printf '"}'; } > utf8-invalid-1mb-name.json
{ printf '{"problem":"dp-step","name":"'; head -c 1048576 /dev/zero; printf '"}'; } > nul-1mb-in-name.json
