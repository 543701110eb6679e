#!/usr/bin/env bash
# Test hosts on one machine: N network namespaces, each with its own hostname (a UTS namespace
# kept by a bind mount) and one veth link to a bridge that lives in a namespace of its own (the
# "switch"), so nothing is added to the machine's own network: the addresses (10.77.0.0/24) exist
# inside the namespaces only. Every name carries the id of the run (hosts_up's $HOSTS_ID, by default
# mrh<pid>), so a stale run never gets in the way of the next, and hosts_up first removes the
# namespaces of runs whose process is gone.
#
#   source tests/hosts/hosts.sh
#   hosts_up 4            # node1..node4; sets HOSTS_ID, HOSTS_DIR (hostfile, agent), traps exit
#   hosts_run 1 CMD...    # CMD on node1 (its network and hostname), e.g. mpirun with the agent
#   $(hosts_enter 1) CMD  # the same, where a function cannot go (timeout ...)
#   hosts_link 3 down     # node3's link (its end of the veth) down / up
#   hosts_impair 3 delay | loss | off   # netem delay 20ms / loss 10% (or the nearest, below)
#   hosts_pids 3          # processes on node3
#   hosts_down            # kills what runs on the hosts, removes them (also from the trap)
#
# mpirun reaches node2..N through $HOSTS_DIR/agent (--mca plm_rsh_agent), which enters the named
# host's namespaces and runs the daemon's command there; hosts_mpirun_args prints the flags.
# Needs root, iproute2 (ip, tc) and util-linux (unshare, nsenter), and nftables where the kernel
# has no netem: `hosts_deps` installs the Debian packages that are missing.

HOSTS_ROOT=/run/meshrun-hosts
HOSTS_NET=10.77.0

hosts_deps() {
  local missing=""
  command -v ip >/dev/null && command -v tc >/dev/null || missing="$missing iproute2"
  command -v unshare >/dev/null && command -v nsenter >/dev/null || missing="$missing util-linux"
  command -v nft >/dev/null || missing="$missing nftables"
  [ -z "$missing" ] && return 0
  echo "installing:$missing" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
}

# Why the hosts cannot be made here ("" when they can): not root, or no network namespaces.
hosts_unavailable() {
  [ "$(id -u)" = 0 ] || { echo "not root"; return; }
  command -v ip >/dev/null || { echo "no ip (iproute2)"; return; }
  command -v nsenter >/dev/null || { echo "no nsenter (util-linux)"; return; }
  local probe="mrhprobe$$"
  if ! ip netns add "$probe" 2>/dev/null; then echo "ip netns does not work here"; return; fi
  ip netns del "$probe"
}

_hosts_ns() { echo "$HOSTS_ID-$1"; }

# Removes every trace of run $1 (its namespaces, their processes, its UTS files).
_hosts_remove() {
  local id=$1 ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$id-"); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  done
  # The killed processes leave their namespaces once they are reaped: a bounded wait.
  for _ in $(seq 50); do
    local left=""
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$id-"); do
      left="$left$(ip netns pids "$ns" 2>/dev/null)"
    done
    [ -z "$left" ] && break
    sleep 0.1
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$id-"); do
    ip netns del "$ns" 2>/dev/null
  done
  if [ -d "$HOSTS_ROOT/$id" ]; then
    local f
    for f in "$HOSTS_ROOT/$id"/*.uts; do
      [ -e "$f" ] && umount "$f" 2>/dev/null
    done
    rm -rf "${HOSTS_ROOT:?}/$id"
  fi
}

# Runs whose process is gone (id mrh<pid>, the default id): removed.
_hosts_remove_stale() {
  local id pid
  for id in $( (ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^\(mrh[0-9]*\)-.*/\1/p'
                ls "$HOSTS_ROOT" 2>/dev/null | grep '^mrh[0-9]*$') | sort -u); do
    pid=${id#mrh}
    [ "$id" = "$HOSTS_ID" ] && continue
    kill -0 "$pid" 2>/dev/null && continue
    _hosts_remove "$id"
  done
}

hosts_up() {
  local n=$1 i ns
  HOSTS_N=$n
  HOSTS_ID=${HOSTS_ID:-mrh$$}
  HOSTS_DIR=$HOSTS_ROOT/$HOSTS_ID
  export HOSTS_ID HOSTS_DIR HOSTS_N
  _hosts_remove_stale
  _hosts_remove "$HOSTS_ID"  # idempotent: a second hosts_up starts afresh
  trap 'hosts_down' EXIT
  trap 'hosts_down; exit 130' INT
  trap 'hosts_down; exit 143' TERM
  trap 'hosts_down; exit 129' HUP
  mkdir -p "$HOSTS_DIR"
  ip netns add "$(_hosts_ns sw)" || return 1
  ip -n "$(_hosts_ns sw)" link add br0 type bridge
  ip -n "$(_hosts_ns sw)" link set br0 up
  : >"$HOSTS_DIR/hostfile"
  for i in $(seq "$n"); do
    ns=$(_hosts_ns "$i")
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    # The veth pair is made inside the host and its other end moved to the switch.
    ip -n "$ns" link add eth0 type veth peer name p$i
    ip -n "$ns" link set p$i netns "$(_hosts_ns sw)"
    ip -n "$(_hosts_ns sw)" link set p$i master br0
    ip -n "$(_hosts_ns sw)" link set p$i up
    ip -n "$ns" addr add "$HOSTS_NET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    touch "$HOSTS_DIR/node$i.uts"
    unshare --uts="$HOSTS_DIR/node$i.uts" hostname "node$i" || return 1
    echo "node$i $HOSTS_NET.$i" >>"$HOSTS_DIR/names"
  done
  cp "$(dirname "${BASH_SOURCE[0]}")/agent.sh" "$HOSTS_DIR/agent"
  chmod +x "$HOSTS_DIR/agent"
}

# hostfile with `slots` slots per host: node1 slots=2 ...
hosts_hostfile() {
  local slots=$1 i f="$HOSTS_DIR/hostfile.$1"
  : >"$f"
  for i in $(seq "$HOSTS_N"); do echo "node$i slots=$slots" >>"$f"; done
  echo "$f"
}

# mpirun's flags for the hosts: the agent, TCP only, on the hosts' link only.
hosts_mpirun_args() {
  echo "--mca plm_rsh_agent $HOSTS_DIR/agent --mca btl tcp,self --mca btl_tcp_if_include eth0" \
       "--mca oob_tcp_if_include eth0 --mca plm_rsh_no_tree_spawn 1"
}

# The words that run a command on host $1: `timeout 60 $(hosts_enter 1) mpirun ...`.
hosts_enter() { echo nsenter --net="/run/netns/$(_hosts_ns "$1")" --uts="$HOSTS_DIR/node$1.uts" --; }

hosts_run() {
  local i=$1
  shift
  $(hosts_enter "$i") "$@"
}

hosts_link() { ip -n "$(_hosts_ns "$1")" link set eth0 "$2"; }

# hosts_impair I delay|loss|off: host I's link slowed (netem delay 20ms) or lossy (netem loss 10%),
# as `tc qdisc ... netem` does it; prints what was applied. A kernel without sch_netem (this VM's:
# CONFIG_NET_SCH_NETEM unset) gets the nearest it has: for loss, nftables dropping 10% of the
# host's outgoing packets at random (the same, in effect); for delay, a token bucket of 1 Mbit/s
# (tbf: a slow link, though by bandwidth, not by a fixed 20 ms). Fails when neither works.
hosts_impair() {
  local i=$1 ns
  ns=$(_hosts_ns "$i")
  case $2 in
    off)
      tc -n "$ns" qdisc del dev eth0 root 2>/dev/null
      ip netns exec "$ns" nft delete table inet meshrun_loss 2>/dev/null
      return 0 ;;
    delay)
      if tc -n "$ns" qdisc replace dev eth0 root netem delay 20ms 2>/dev/null; then
        echo "netem delay 20ms"
      elif tc -n "$ns" qdisc replace dev eth0 root tbf rate 1mbit burst 16kb latency 2s; then
        echo "tbf rate 1mbit (no sch_netem in this kernel)"
      else
        return 1
      fi ;;
    loss)
      if tc -n "$ns" qdisc replace dev eth0 root netem loss 10% 2>/dev/null; then
        echo "netem loss 10%"
      elif command -v nft >/dev/null &&
           ip netns exec "$ns" nft add table inet meshrun_loss &&
           ip netns exec "$ns" nft add chain inet meshrun_loss out \
             '{ type filter hook output priority 0 ; }' &&
           ip netns exec "$ns" nft add rule inet meshrun_loss out oifname eth0 \
             numgen random mod 100 '<' 10 drop; then
        echo "nft: 10% of eth0's packets dropped (no sch_netem in this kernel)"
      else
        return 1
      fi ;;
  esac
}

hosts_pids() { ip netns pids "$(_hosts_ns "$1")"; }

# Every process on every host (the test's check that nothing is left behind).
hosts_all_pids() {
  local i
  for i in $(seq "$HOSTS_N"); do hosts_pids "$i"; done
}

hosts_down() {
  [ -n "${HOSTS_ID:-}" ] || return 0
  _hosts_remove "$HOSTS_ID"
  trap - EXIT INT TERM HUP
}
