#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Pod -> pod TCP throughput across nodes through the two uplink shims, same
# build, same nodes, same run. For "bridge" both nodes get the Linux bridge
# shim of kovs 0.1 (eth0 and kovs-up0 in a bridge kovs-shim, eth0 on a
# made-up MAC), rebuilt by hand exactly as that agent made it; for
# "redirect" the agents are restarted, and they convert such a node to the
# tc redirect shim themselves (the upgrade path). Both see
# bridge-nf-call-iptables at the node default (1 where br_netfilter is
# loaded, as kubeadm requires). Only the shim differs, so the ratio is the
# shim's cost. Runs alternate A B B A so that load from other work on the
# machine hits both alike.
#
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted for slow start)
#   KOVS_BENCH_THROUGHPUT_REPEATS  A B B A rounds (default 2, so 4 runs per shim)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

seconds=${KOVS_BENCH_THROUGHPUT_SECONDS:-5}
repeats=${KOVS_BENCH_THROUGHPUT_REPEATS:-2}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "KOVS_BENCH_THROUGHPUT_SECONDS: expected a positive integer, got '$seconds'"
[[ $repeats =~ ^[1-9][0-9]?$ ]] || die "KOVS_BENCH_THROUGHPUT_REPEATS: expected 1-99, got '$repeats'"
need_netns_provider "rebuilding a node's shim by hand"
[ "${KOVS_UPLINK_MODE:-shim}" = shim ] || die "KOVS_UPLINK_MODE must be shim (or unset) for this benchmark"

echo "pod -> pod TCP throughput across nodes: the Linux bridge shim (kovs 0.1) vs the tc redirect shim"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

# kovs 0.1's made-up MAC for eth0: locally administered, unicast, bit 0x08 flipped.
legacy_mac() {
    local mac=$1 first
    first=$(( (((16#${mac:0:2}) | 2) & ~1) ^ 8 ))
    printf '%02x%s\n' "$first" "${mac:2}"
}

# Node N's tc redirect shim, replaced by the Linux bridge shim of kovs 0.1.
bridge_shim() {
    local n=$1 mac
    mac=$(in_node "$n" cat /sys/class/net/eth0/address)
    in_node "$n" tc qdisc del dev eth0 clsact
    in_node "$n" tc qdisc del dev kovs-up0 clsact
    in_node "$n" ip link add kovs-shim type bridge
    in_node "$n" ip link set dev kovs-shim addrgenmode none arp off
    in_node "$n" ip link set dev eth0 address "$(legacy_mac "$mac")"
    in_node "$n" ip link set dev kovs-up0 master kovs-shim
    in_node "$n" ip link set dev eth0 master kovs-shim
    in_node "$n" ip link set dev kovs-shim up
}

# Both nodes to the given shim; returns once pod 1/1 reaches pod 2/1 again.
shim=redirect
use_shim() {
    local want=$1 n
    [ "$want" = "$shim" ] && return 0
    for n in 1 2; do
        if [ "$want" = bridge ]; then
            bridge_shim "$n"
        else
            agent_stop "$n" TERM
            agent_start "$n"
        fi
    done
    if [ "$want" = redirect ]; then
        for n in 1 2; do wait_for "the restarted agent on node $n" 60 node_ready "$n"; done
        for n in 1 2; do in_node "$n" ip link show kovs-shim >/dev/null 2>&1 && die "node $n: the agent left kovs-shim"; done
    fi
    wait_for "pod 1/1 -> pod 2/1 with the $want shim" 20 in_pod 1 1 ping -c1 -W1 -q "$(pod_ip 2 1)"
    shim=$want
}
describe_shims() {
    echo "node 1 with the bridge shim: $(in_node 1 ip -br link show master kovs-shim | awk '{print $1}' | tr '\n' ' ')in kovs-shim"
    use_shim redirect
    echo "node 1 with the redirect shim: eth0 $(in_node 1 tc filter show dev eth0 ingress | grep -o 'Egress Redirect to device [^ )]*')"
}

cluster_up 2
pod_add 1 1
pod_add 2 1
in_pod 2 1 iperf3 -s -D --logfile "$(node_dir 2)/log/iperf3-server.log"
wait_for "iperf3 server in pod 2/1" 10 port_listening 5201 in_pod 2 1
use_shim bridge
describe_shims
echo "bridge-nf-call-iptables in the nodes: $(in_node 1 cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo n/a)"
echo "iperf3 ${seconds} s per run (after 1 s omitted), $repeats A B B A rounds"
echo

# One run: prints "<Gbit/s> <retransmits>".
measure() {
    local net=$1 out
    out=$(in_pod 1 1 iperf3 -c "$(pod_ip 2 1)" -t "$seconds" -O 1 -J 2>&1) ||
        die "$net: iperf3 pod 1/1 -> pod 2/1 failed: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || echo "$out")"
    jq -r '"\(.end.sum_received.bits_per_second / 1e9) \(.end.sum_sent.retransmits)"' <<<"$out"
}

declare -A gbps=([bridge]="" [redirect]="")
run=0
for i in $(seq 1 "$repeats"); do
    for net in bridge redirect redirect bridge; do
        run=$((run + 1))
        use_shim "$net"  # here, not in measure's subshell: it remembers the shim
        res=$(measure "$net")
        read -r g retr <<<"$res"
        gbps[$net]+=" $g"
        printf 'run %2d  %-8s %6.2f Gbit/s (%s retr.)\n' "$run" "$net" "$g" "$retr"
    done
done

# shellcheck disable=SC2086 # the lists are meant to split
{
    echo
    printf 'Linux bridge shim (0.1)  %s Gbit/s  median (min-max) of %d runs\n' "$(spread ${gbps[bridge]})" "$((repeats * 2))"
    printf 'tc redirect shim         %s Gbit/s\n' "$(spread ${gbps[redirect]})"
    printf 'ratio redirect / bridge: %.3f\n' "$(echo "$(median ${gbps[redirect]}) / $(median ${gbps[bridge]})" | bc -l)"
}
