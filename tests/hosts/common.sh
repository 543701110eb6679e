# What tests/hosts/*_test.sh share: the skip rule, the hosts, the launch across them, the checks.
#   source tests/hosts/common.sh BUILD_DIR   (BUILD_DIR holds meshrun and meshrun-mpirun)
# A test prints one line per check ("ok ..." / "FAIL ...") and exits 1 if any failed; where the
# hosts cannot be made (not root, no network namespaces) it prints one "skipped: <reason>" line and
# exits 77 (ctest's SKIP_RETURN_CODE).
set -u
HOSTS_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOURCE_DIR=$(cd "$HOSTS_TESTS/../.." && pwd)
BUILD_DIR=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
MESHRUN=$BUILD_DIR/meshrun
LAUNCH=$BUILD_DIR/meshrun-mpirun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source "$HOSTS_TESTS/hosts.sh"
cd "$SOURCE_DIR" || exit 1

why=$(hosts_unavailable)
if [ -n "$why" ]; then
  echo "skipped: $why"
  exit 77
fi
command -v mpirun >/dev/null || { echo "skipped: no mpirun (openmpi-bin)"; exit 77; }
[ -x "$BUILD_DIR/meshrun-mpi" ] || { echo "skipped: meshrun was built without MPI"; exit 77; }

FAILED=0
ok() { echo "ok $*"; }
fail() { echo "FAIL $*"; FAILED=1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshrun-hosts.XXXXXX")

# After hosts_up: the exit trap removes the hosts and the scratch directory.
hosts_test_up() {
  hosts_up "$1" || { echo "FAIL could not make $1 hosts"; exit 1; }
  trap 'hosts_down; rm -rf "$TMP"' EXIT
}

# run_on_hosts SLOTS NP TIMEOUT meshrun-args... : the user's command on node1, bounded by TIMEOUT
# seconds (then killed: the check fails), with $MPIRUN_EXTRA's words for mpirun if set. Sets OUT
# ERR CODE SECS.
run_on_hosts() {
  local slots=$1 np=$2 bound=$3
  shift 3
  local hf t0
  hf=$(hosts_hostfile "$slots")
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # MPIRUN_EXTRA: more words for mpirun (-x VAR ...), if any
  timeout -k 2 "$bound" $(hosts_enter 1) "$LAUNCH" $(hosts_mpirun_args) ${MPIRUN_EXTRA:-} \
    --hostfile "$hf" -np "$np" "$MESHRUN" "$@" >"$TMP/out" 2>"$TMP/err"
  CODE=$?
  SECS=$(echo "$(date +%s.%N) - $t0" | bc)
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}

# run_here meshrun-args... : one process, on this machine. Sets OUT1 ERR1 CODE1.
run_here() {
  "$MESHRUN" "$@" >"$TMP/out1" 2>"$TMP/err1"
  CODE1=$?
  OUT1=$(cat "$TMP/out1")
  ERR1=$(cat "$TMP/err1")
}

# same_bytes SLOTS NP meshrun-args... : stdout, stderr and exit code as one process's.
same_bytes() {
  local slots=$1 np=$2
  shift 2
  run_here "$@"
  run_on_hosts "$slots" "$np" 120 "$@"
  if [ "$OUT" == "$OUT1" ] && [ "$ERR" == "$ERR1" ] && [ "$CODE" == "$CODE1" ]; then
    ok "$HOSTS_N hosts -np $np: $* (exit $CODE, ${SECS}s)"
  else
    fail "$HOSTS_N hosts -np $np: $*: exit $CODE vs $CODE1; stdout '${OUT:0:200}' vs '${OUT1:0:200}'; stderr '${ERR:0:400}' vs '${ERR1:0:400}'"
  fi
}

# Nothing of the run is left on any host (bounded wait: what was killed may take a moment).
nothing_left() {
  local what=$1 bound=${2:-10} i left
  left=$(hosts_all_pids)
  for i in $(seq $((bound * 10))); do
    [ -z "$left" ] && break
    sleep 0.1
    left=$(hosts_all_pids)
  done
  if [ -z "$left" ]; then
    ok "$what: nothing left on the hosts"
  else
    fail "$what: left on the hosts: $(ps -o pid=,comm= -p $(echo $left | tr ' ' ,) | tr '\n' ';')"
    for i in $left; do kill -9 "$i" 2>/dev/null; done
  fi
  # and nothing of it on this machine outside them
  left=$(pgrep -f "$HOSTS_DIR/agent|meshrun-mpi .*--hostfile $HOSTS_DIR" || true)
  [ -z "$left" ] || fail "$what: left on the machine: $left"
}
