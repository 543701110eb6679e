#!/bin/bash
# usage: [BIN=build/release/meshrun] [OUT=/tmp/PASS] [PASS=sneaky10] tests/grading_gaps/sneaky10/run.sh EX NAME
# Exports tests/grading_gaps/PASS/EX/NAME.py with the make-jax venv and grades it on every case
# (sneaky11/run.sh is this with PASS=sneaky11).
EX=$1; N=$2; PASS=${PASS:-sneaky10}
cd "$(dirname "$0")/../../.."
BIN=${BIN:-build/release/meshrun}; OUT=${OUT:-/tmp/$PASS}; mkdir -p "$OUT/$EX"
MESHES=$(build/jax-venv/bin/python -c "
import json;d=json.load(open('cases/exercises/$EX/exercise.json'))
print(' '.join('--mesh '+','.join(f'{a}={n}' for a,n in m) for m in d['meshes']))")
CASES=$(build/jax-venv/bin/python -c "
import json,os;d=json.load(open('cases/exercises/$EX/exercise.json'))
print(os.path.normpath(os.path.join('cases/exercises/$EX',d['cases'])))")
export XLA_FLAGS=--xla_force_host_platform_device_count=8
PYTHONPATH=python build/jax-venv/bin/python -m meshrun_export tests/grading_gaps/$PASS/$EX/$N.py:make --case $CASES --exercise $EX --name $EX/$N $MESHES -o $OUT/$EX/$N.json > $OUT/$EX/$N.export.log 2>&1 || { echo EXPORT FAILED; tail -5 $OUT/$EX/$N.export.log; exit 9; }
$BIN check --program $OUT/$EX/$N.json $CASES > $OUT/$EX/$N.out 2>$OUT/$EX/$N.err
rc=$?
echo "rc=$rc" | tee $OUT/$EX/$N.rc
grep -E "^(PASS|FAIL|ERROR)" $OUT/$EX/$N.out | grep -v ^PASS | head -2 | cut -c1-400
tail -1 $OUT/$EX/$N.out
