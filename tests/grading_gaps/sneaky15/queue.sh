#!/bin/bash
# queue.sh: grades every sneaky15 submission one at a time with the frozen grader, then runs
# ../sneaky12/verify.py (live JAX, ordinary random inputs, every mesh) on each. Logs in $OUT.
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/sneaky15}; mkdir -p $OUT
for f in tests/grading_gaps/sneaky15/*/*.py; do
  ex=$(basename $(dirname $f)); n=$(basename $f .py)
  [ "$ex" = sneaky15 ] && continue
  BIN=${BIN:-/tmp/mr-s15-frozen} PASS=sneaky15 OUT=$OUT tests/grading_gaps/sneaky10/run.sh $ex $n > $OUT/$ex/$n.grade 2>&1
  XLA_FLAGS=--xla_force_host_platform_device_count=8 build/jax-venv/bin/python tests/grading_gaps/sneaky12/verify.py $ex $n 2>&1 | grep -E "WORST" > $OUT/$ex/$n.verify
  echo "$ex $n $(head -1 $OUT/$ex/$n.grade) $(cat $OUT/$ex/$n.verify)"
done
