#!/usr/bin/env bash
# groups.sh - axis_index_groups (issue #50): psum over groups of K of 8 participants, meshrun's
# in-process engine (`meshrun bench allreduce --groups K`, 8 threads) beside OpenMPI's
# MPI_Allreduce on sub-communicators of K ranks (mpi_allreduce_groups.cpp, 8 ranks), and both
# without groups (K = 8), in one run. Same method and columns (../shared/peers/common.hpp);
# participants and busbw are K's. Each step bounded by `timeout`; loopback only.
#
#   bash bench/mpi/groups.sh BUILD_DIR [K] [RESULTS_DIR]
set -u
BUILD=${1:?usage: groups.sh BUILD_DIR [K] [RESULTS_DIR]}
K=${2:-4}
RES=${3:-$BUILD/bench-groups}
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=$HERE/../../../shared/peers
PEER_BUILD=${PEER_BUILD:-/tmp/meshrun-peers-build}
SB=${SB:-1.5}
MAXB=${MAXB:-67108864}
mkdir -p "$RES" "$PEER_BUILD"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --oversubscribe --mca oob_tcp_if_include lo --mca btl self,vader"

run() {  # NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  echo "== $name"
  timeout --kill-after=10 "$secs" "$@" > "$RES/$name.txt" 2> "$RES/$name.stderr"
  local rc=$?
  [ $rc -ne 0 ] && echo "  # exit status $rc (124 = hit the ${secs}s cap)" >> "$RES/$name.txt"
  [ -s "$RES/$name.stderr" ] || rm -f "$RES/$name.stderr"
  cat "$RES/$name.txt"
}

G=$PEER_BUILD/mpi_allreduce_groups
[ "$HERE/mpi_allreduce_groups.cpp" -nt "$G" ] &&
  mpicxx -O2 -std=c++20 -Wall -I"$PEERS" "$HERE/mpi_allreduce_groups.cpp" -o "$G"
{ date -u +%FT%TZ; nproc; lscpu | grep "Model name"; mpirun --version | head -1; } > "$RES/machine.txt"
run meshrun_groups$K 150 "$BUILD/meshrun" bench allreduce --devices 8 --groups "$K" \
  --size-budget "$SB" --max-bytes "$MAXB"
run openmpi_groups$K 150 $MPIRUN -np 8 "$G" --only "$K" --size-budget "$SB" --total-budget 90 \
  --max-elems $((MAXB / 4))
run meshrun_whole 150 "$BUILD/meshrun" bench allreduce --devices 8 --size-budget "$SB" \
  --max-bytes "$MAXB"
run openmpi_whole 150 $MPIRUN -np 8 "$G" --only 8 --size-budget "$SB" --total-budget 90 \
  --max-elems $((MAXB / 4))
