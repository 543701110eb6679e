#!/usr/bin/env bash
# compare.sh - meshrun across 1, 2 and 4 hosts over TCP (network-namespace hosts, tests/hosts),
# beside raw OpenMPI on the same hosts, in one run (as root):
#   allreduce: mpirun -np 8 meshrun bench allreduce (8 ranks x 1 device) and ../shared/peers'
#              mpi_allreduce (MPI_Allreduce, 8 ranks), 8/H ranks on each of H hosts;
#   programs:  the big cases of `meshrun bench programs` (its --keep files, inline JSON and .npy),
#              meshrun-mpirun -np 8 meshrun PROGRAM --timings CASE, best of ROUNDS, on H hosts.
# Always --mca btl tcp,self on the hosts' own link (TCP even between ranks of one host). Each
# step bounded by `timeout`.
#
#   bash bench/hosts/compare.sh BUILD_DIR [RESULTS_DIR]
set -u
BUILD=$(cd "${1:?usage: compare.sh BUILD_DIR [RESULTS_DIR]}" && pwd)
RES=${2:-$BUILD/bench-hosts}
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=$HERE/../../../shared/peers
PEER_BUILD=${PEER_BUILD:-/tmp/meshrun-peers-build}
SB=${SB:-0.5}
ROUNDS=${ROUNDS:-3}
mkdir -p "$RES" "$PEER_BUILD"
RES=$(cd "$RES" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source "$HERE/../../tests/hosts/hosts.sh"
why=$(hosts_unavailable)
[ -z "$why" ] || { echo "skipped: $why"; exit 0; }
[ -x "$PEER_BUILD/mpi_allreduce" ] ||
  mpicxx -O2 -std=c++20 -Wall "$PEERS/mpi_allreduce.cpp" -o "$PEER_BUILD/mpi_allreduce" || exit 1
hosts_up 4 || exit 1
{ date -u +%FT%TZ; nproc; lscpu | grep "Model name"; mpirun --version | head -1
  echo "hosts: network namespaces on this machine, veth + bridge, btl tcp,self"; } >"$RES/machine.txt"

# on HOSTS NAME SECONDS CMD... : CMD with mpirun's host flags on node1, HOSTS hosts of 8/HOSTS slots.
on() {
  local h=$1 name=$2 secs=$3
  shift 3
  local hf=$HOSTS_DIR/hostfile.h$h i
  : >"$hf"
  for i in $(seq "$h"); do echo "node$i slots=$((8 / h))" >>"$hf"; done
  timeout -k 5 "$secs" $(hosts_enter 1) "$@" $(hosts_mpirun_args) --hostfile "$hf" -np 8 \
    "${PROG[@]}" >"$RES/$name.txt" 2>"$RES/$name.stderr"
  local rc=$?
  [ $rc -ne 0 ] && echo "  # exit status $rc" >>"$RES/$name.txt"
  [ -s "$RES/$name.stderr" ] || rm -f "$RES/$name.stderr"
}

for h in 1 2 4; do
  echo "== allreduce, $h hosts"
  PROG=("$BUILD/meshrun" bench allreduce --size-budget "$SB" --timeout 60)
  on "$h" "allreduce_meshrun_h$h" 200 mpirun
  PROG=("$PEER_BUILD/mpi_allreduce" --size-budget "$SB" --total-budget 60 --variant default)
  on "$h" "allreduce_mpi_h$h" 200 mpirun
done
paste -d'|' <(grep -E '^ +[0-9]' "$RES/allreduce_meshrun_h1.txt" | awk '{print $1, $4}') \
  <(grep -E '^ +[0-9]' "$RES/allreduce_mpi_h1.txt" | awk '{print $4}') \
  <(grep -E '^ +[0-9]' "$RES/allreduce_meshrun_h2.txt" | awk '{print $4}') \
  <(grep -E '^ +[0-9]' "$RES/allreduce_mpi_h2.txt" | awk '{print $4}') \
  <(grep -E '^ +[0-9]' "$RES/allreduce_meshrun_h4.txt" | awk '{print $4}') \
  <(grep -E '^ +[0-9]' "$RES/allreduce_mpi_h4.txt" | awk '{print $4}') |
  awk -F'|' 'BEGIN { printf "# median_us      bytes  meshrun_h1  mpi_h1  meshrun_h2  mpi_h2  meshrun_h4  mpi_h4\n" }
             { split($1, a, " "); printf "%20s %11s %7s %11s %7s %11s %7s\n", a[1], a[2], $2, $3, $4, $5, $6 }' |
  tee "$RES/allreduce_side_by_side.txt"

# The big cases of `bench programs`, written once.
CASES=$RES/cases
rm -rf "$CASES"
timeout 300 "$BUILD/meshrun" bench programs --rounds 1 --keep "$CASES" >"$RES/programs_one_process.txt"
echo "# program size input hosts: best-of-$ROUNDS --timings line" >"$RES/programs_hosts.txt"
for dir in "$CASES"/dp-step-*N=65536 "$CASES"/tp-mlp-*H=4096* "$CASES"/mlp-train-*H=2048*; do
  prog=$(basename "$dir" | sed 's/-[A-Z]=.*//')
  for form in inline.json npy/case.json; do
    for h in 1 2 4; do
      best=""
      for r in $(seq "$ROUNDS"); do
        PROG=("$BUILD/meshrun" "$prog" --timings "$dir/$form" -o /dev/null)
        on "$h" "prog_tmp" 120 "$BUILD/meshrun-mpirun"
        line=$(cat "$RES/prog_tmp.txt" "$RES/prog_tmp.stderr" 2>/dev/null | grep "\"total_s\"" | tail -n 1)
        t=$(echo "$line" | sed -n 's/.*"total_s":\([0-9.e-]*\).*/\1/p')
        [ -n "$t" ] || continue
        if [ -z "$best" ] || [ "$(echo "$t < $bt" | awk '{print ($1 < $3)}')" = 1 ]; then
          best=$line bt=$t
        fi
      done
      echo "$(basename "$dir") ${form%%/*} h$h ${best:-FAILED}" | tee -a "$RES/programs_hosts.txt"
    done
  done
done
rm -f "$RES/prog_tmp.txt" "$RES/prog_tmp.stderr"
rm -rf "$CASES"
