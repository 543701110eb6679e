#!/usr/bin/env bash
# exact_test.sh BUILD_DIR HOSTS: every case of cases/dp-step, cases/tp-mlp and cases/mlp-train
# (--exact; mlp-train also on its other meshes) across HOSTS test hosts (tests/hosts/hosts.sh) over
# TCP only, 2 ranks per host, started by meshrun-mpirun on node1: stdout, stderr and exit code
# byte for byte those of one process. Then a failure on the last host's device, which must be
# meshrun's line and exit code. Nothing may be left running on any host.
source "$(dirname "$0")/common.sh" "$1"
n=${2:?usage: $0 BUILD_DIR HOSTS}
hosts_test_up "$n"
np=$((2 * n))
for dir in cases/dp-step cases/tp-mlp cases/mlp-train; do
  for f in "$dir"/*.json; do
    same_bytes 2 "$np" "$(basename "$dir")" --exact "$f"
  done
done
for mesh in data=1,model=8 data=4,model=2 data=8,model=1; do
  same_bytes 2 "$np" mlp-train --exact --mesh "$mesh" cases/mlp-train/b16-d4-h32-o3.json
done
# A failure on the last host: meshrun's code and line (which names the rank, as on one host).
run_on_hosts 2 "$np" 60 dp-step cases/dp-step/example2.json --inject fail:7@1
want="meshrun: device 7 (rank $((np - 1))) failed at pmean #1 on 'data': injected failure (--inject fail:7@1)"
if [ "$CODE" = 3 ] && [ "$ERR" == "$want" ] && [ -z "$OUT" ]; then
  ok "a failed device on node$n: exit 3, $ERR"
else
  fail "a failed device on node$n: exit $CODE, stdout '$OUT', stderr '$ERR'"
fi
nothing_left "$n hosts"
[ "$FAILED" = 0 ]
