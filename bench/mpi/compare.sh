#!/usr/bin/env bash
# compare.sh - the MPI backend beside the single-process engine and raw OpenMPI, in one run:
#   R = 1 (meshrun bench allreduce, 8 threads), R = 2 x 4 threads, R = 8 x 1 thread
#   (mpirun -np R meshrun bench allreduce), and ../shared/peers' mpi_allreduce (MPI_Allreduce over 8 ranks).
# Every table is psum of float32 over 8 participants, 4 B to 64 MiB each, same method and
# columns. Each step is bounded by `timeout`; loopback only.
#
#   bash bench/mpi/compare.sh BUILD_DIR [RESULTS_DIR]
set -u
BUILD=${1:?usage: compare.sh BUILD_DIR [RESULTS_DIR]}
RES=${2:-$BUILD/bench-mpi}
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=$HERE/../../../shared/peers
PEER_BUILD=${PEER_BUILD:-/tmp/meshrun-peers-build}
SB=${SB:-1.5}
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

[ -x "$PEER_BUILD/mpi_allreduce" ] || mpicxx -O2 -std=c++20 -Wall "$PEERS/mpi_allreduce.cpp" -o "$PEER_BUILD/mpi_allreduce"
{ date -u +%FT%TZ; nproc; lscpu | grep "Model name"; mpirun --version | head -1; } > "$RES/machine.txt"
run r1_threads8 150 "$BUILD/meshrun" bench allreduce --devices 8 --size-budget "$SB"
run r2x4 150 $MPIRUN -np 2 "$BUILD/meshrun" bench allreduce --size-budget "$SB"
run r8x1 150 $MPIRUN -np 8 "$BUILD/meshrun" bench allreduce --size-budget "$SB"
run mpi_allreduce_r8 150 $MPIRUN -np 8 "$PEER_BUILD/mpi_allreduce" --size-budget "$SB" --total-budget 90 --variant default
