#!/bin/sh
# mpirun's rsh agent for the test hosts (hosts.sh; --mca plm_rsh_agent): `agent [-x] HOST CMD...`
# runs CMD (the daemon's command line, one shell string) inside HOST's network and UTS namespaces,
# as ssh would on HOST. Copied into the run's directory, which names the namespaces.
dir=$(dirname "$0")
id=$(basename "$dir")
while [ $# -gt 0 ]; do
  case $1 in
    -*) shift ;;  # ssh's flags, if any
    *) break ;;
  esac
done
host=$1
shift
n=${host#node}
[ -e "$dir/$host.uts" ] || { echo "agent: no test host '$host' in $dir" >&2; exit 255; }
exec nsenter --net="/run/netns/$id-$n" --uts="$dir/$host.uts" -- /bin/sh -c "$*"
