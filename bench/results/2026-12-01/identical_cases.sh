#!/usr/bin/env bash
# Every case of every program (and cases/npy, invalid cases too: their lines and codes), old binary vs new,
# in one process; then the new binary under mpirun -np R, R = 1 2 4 8, against the new one process.
OLD=$1; NEW=$2; cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --oversubscribe --mca btl self,vader --mca oob_tcp_if_include lo"
prog_of() { case $1 in cases/dp-step/*) echo dp-step;; cases/tp-mlp/*) echo tp-mlp;; cases/mlp-train/*) echo mlp-train;; cases/npy/dp-step*) echo dp-step;; cases/npy/tp-mlp*) echo tp-mlp;; esac; }
n=0; bad=0
for c in cases/dp-step/*.json cases/tp-mlp/*.json cases/mlp-train/*.json cases/npy/*.json; do
  p=$(prog_of $c)
  for flags in "--exact" ""; do
    a=$($OLD $p $flags $c 2>&1; echo "rc=$?"); b=$($NEW $p $flags $c 2>&1; echo "rc=$?")
    n=$((n+1)); [ "$a" == "$b" ] || { bad=$((bad+1)); echo "DIFF old/new $p $flags $c"; }
    for R in 1 2 4 8; do
      m=$(PATH=$(dirname $NEW):$PATH timeout 120 $MPI -np $R $NEW $p $flags $c 2>/dev/null; echo "rc=$?")
      o=$($NEW $p $flags $c 2>/dev/null; echo "rc=$?")
      n=$((n+1)); [ "$m" == "$o" ] || { bad=$((bad+1)); echo "DIFF R=$R $p $flags $c: $(echo "$m" | tail -1) vs $(echo "$o" | tail -1)"; }
    done
  done
done
for c in cases/invalid/*.json; do
  args=$(sed -n 1p ${c%.json}.expect | sed "s|{}|$c|g")
  a=$($OLD $args 2>&1; echo "rc=$?"); b=$($NEW $args 2>&1; echo "rc=$?")
  n=$((n+1)); [ "$a" == "$b" ] || { bad=$((bad+1)); echo "DIFF invalid $c"; }
done
echo "compared $n, differing $bad"
