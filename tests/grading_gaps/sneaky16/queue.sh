#!/bin/bash
# queue.sh: grades every submission here one at a time (grade.sh) and runs ../sneaky12/verify.py
# on it (live JAX); writes queue.log.
cd "$(dirname "$0")/../../.."
for f in tests/grading_gaps/sneaky16/*/*.py; do
  EX=$(basename $(dirname $f)); N=$(basename $f .py)
  echo "=== $EX $N"
  tests/grading_gaps/sneaky16/grade.sh $EX $N 2>&1 | grep -E "^(rc=|FAIL|ERROR|EXPORT)|passed" | head -3 | cut -c1-700
  XLA_FLAGS=--xla_force_host_platform_device_count=8 build/jax-venv/bin/python tests/grading_gaps/sneaky12/verify.py $EX $N 2>&1 | tail -1
done
