#!/bin/bash
# usage: tests/grading_gaps/sneaky14/queue.sh  -- grades, one at a time, every EX/NAME line of
# /tmp/sneaky14/queue.txt not yet in /tmp/sneaky14/done.txt (append lines while it runs).
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/sneaky14; touch /tmp/sneaky14/queue.txt /tmp/sneaky14/done.txt
while true; do
  next=$(grep -vxFf /tmp/sneaky14/done.txt /tmp/sneaky14/queue.txt | head -1)
  [ -z "$next" ] && { sleep 5; [ -e /tmp/sneaky14/stop ] && exit 0; continue; }
  EX=${next%% *}; N=${next##* }
  start=$(date +%s)
  res=$(BIN=/tmp/mr-s14-frozen PASS=sneaky14 OUT=/tmp/sneaky14 tests/grading_gaps/sneaky10/run.sh $EX $N 2>&1); rc=$?
  echo "== $EX/$N exit=$rc ($(( $(date +%s) - start ))s)" >> /tmp/sneaky14/results.txt
  echo "$res" | head -4 >> /tmp/sneaky14/results.txt
  echo "$next" >> /tmp/sneaky14/done.txt
done
