#!/usr/bin/env bash
# Runs a command under mpirun across two "hosts" on this machine: network namespaces
# joined by a veth pair rate-limited like a LAN (docs/tensor-parallel.md).
#   scripts/tp-two-hosts.sh [--rate 1gbit] -- tps bench -m model.gguf -t 1 --tp 2 ...
# mpirun starts in the first namespace and reaches the second through an rsh agent that
# runs `ip netns exec`. Only these namespaces' addresses (10.213.0.0/24) are used. Needs
# root (ip netns); exits 77 when namespaces cannot be made here.
# Each "host" also gets its own half of this machine's CPUs, as two real hosts have their
# own cores: without that, mpirun binds each host's rank to that host's first core, and
# both ranks shared CPU 0 here.
set -euo pipefail
rate=1gbit
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --rate) rate="$2"; shift 2 ;;
    *) echo "usage: $0 [--rate RATE] -- COMMAND..." >&2; exit 2 ;;
  esac
done
[[ "${1:-}" == "--" ]] && shift
[[ $# -gt 0 ]] || { echo "usage: $0 [--rate RATE] -- COMMAND..." >&2; exit 2; }

h1=tps-h1-$$ h2=tps-h2-$$
a1=10.213.0.1 a2=10.213.0.2
agent=""
cleanup() {
  ip netns del "$h1" 2>/dev/null || true
  ip netns del "$h2" 2>/dev/null || true
  [[ -z "$agent" ]] || rm -f "$agent"
}
trap cleanup EXIT
if ! ip netns add "$h1" 2>/dev/null; then
  echo "tp-two-hosts: ip netns add was refused here (needs root and network namespaces)" >&2
  exit 77
fi
# The CPUs this process may run on ("0-3,6"), one per line, split in two halves.
mapfile -t cpus < <(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | tr ',' '\n' |
  while IFS=- read -r lo hi; do seq "$lo" "${hi:-$lo}"; done)
half=$(( (${#cpus[@]} + 1) / 2 ))
cpus1=$(IFS=,; echo "${cpus[*]:0:$half}")
cpus2=$(IFS=,; echo "${cpus[*]:$(( ${#cpus[@]} > 1 ? half : 0 ))}")
agent=$(mktemp /tmp/tps-rsh-agent.XXXXXX)
ip netns add "$h2"
ip link add veth-h1 netns "$h1" type veth peer name veth-h2 netns "$h2"
for ns in "$h1" "$h2"; do ip -n "$ns" link set lo up; done
ip -n "$h1" addr add "$a1/24" dev veth-h1
ip -n "$h2" addr add "$a2/24" dev veth-h2
# A LAN: the rate limit both ways (netem is not in every kernel; tbf is).
for side in 1 2; do
  ns=tps-h$side-$$
  ip -n "$ns" link set "veth-h$side" up
  ip netns exec "$ns" tc qdisc add dev "veth-h$side" root tbf rate "$rate" burst 256kb latency 10ms
done
# mpirun calls the agent as `agent HOST COMMAND...`, like ssh: run it in HOST's namespace.
cat > "$agent" <<AGENT
#!/bin/sh
host=\$1; shift
case "\$host" in
  $a1) ns=$h1 cpus=$cpus1 ;;
  $a2) ns=$h2 cpus=$cpus2 ;;
  *) echo "tps rsh agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" taskset -c "\$cpus" sh -c "\$*"
AGENT
chmod +x "$agent"
# --bind-to none: mpirun binds by the whole machine's cores, not the host's share.
ip netns exec "$h1" taskset -c "$cpus1" mpirun --allow-run-as-root -np 2 --host "$a1,$a2" --bind-to none \
  --mca plm_rsh_agent "$agent" --mca btl tcp,self \
  --mca btl_tcp_if_include 10.213.0.0/24 --mca oob_tcp_if_include 10.213.0.0/24 \
  "$@"
