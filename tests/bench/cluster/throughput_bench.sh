#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Pod -> pod TCP throughput across nodes (issue 6): the kovs userspace
# datapath against a kernel VXLAN + Linux bridge network of the same shape
# (tests/cluster/lib/kernel-vxlan-reference.sh), on the same underlay, in the same run.
# Nodes 1-2 are a kovs cluster (OVS netdev, kovs-agent, kovs-cni), nodes 3-4
# the reference; one pod per node, iperf3 from the pod on the first node of
# each pair to the pod on the second. The runs alternate (ref, kovs, kovs,
# ref, ...) so that load from other work on the machine hits both alike;
# every run is printed, then the medians with their spread and the ratio.
# As context, the reference is also measured with TX checksum offload off in
# its pods, the rule kovs's pods live by (the userspace datapath cannot
# complete a checksum left to offload): that costs the kernel its TSO too.
#
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted for slow start)
#   KOVS_BENCH_THROUGHPUT_REPEATS  runs per network (default 3)
#   KOVS_UNDERLAY_MTU              underlay MTU for both networks (default 1500; kovs follows it)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../../cluster/lib/kernel-vxlan-reference.sh
source "$root/tests/cluster/lib/kernel-vxlan-reference.sh"

seconds=${KOVS_BENCH_THROUGHPUT_SECONDS:-5}
repeats=${KOVS_BENCH_THROUGHPUT_REPEATS:-3}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "KOVS_BENCH_THROUGHPUT_SECONDS: expected a positive integer, got '$seconds'"
[[ $repeats =~ ^[1-9][0-9]?$ ]] || die "KOVS_BENCH_THROUGHPUT_REPEATS: expected 1-99, got '$repeats'"

need_netns_provider "the kernel VXLAN reference (bare nodes)"
echo "pod -> pod TCP throughput across nodes: kovs (OVS userspace datapath) vs kernel VXLAN + Linux bridge"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

cluster_up 2
pod_add 1 1
pod_add 2 1
ref_node_up 3 "$UNDERLAY_MTU"
ref_node_up 4 "$UNDERLAY_MTU"
ref_connect 3 4
ref_pod_add 3 1
ref_pod_add 4 1

# network name -> "source node, destination node"
declare -A pair=([kovs]="1 2" [reference]="3 4" [ref_tx_off]="3 4")
for net in reference kovs; do
    read -r src dst <<<"${pair[$net]}"
    in_pod "$dst" 1 iperf3 -s -D --logfile "$(node_dir "$dst")/log/iperf3-server.log"
    wait_for "iperf3 server in pod $dst/1" 10 port_listening 5201 in_pod "$dst" 1
    wait_for "$net: ping pod $src/1 -> pod $dst/1" 10 in_pod "$src" 1 ping -c1 -W1 -q "$(pod_ip "$dst" 1)"
done
echo "pod MTU: kovs $(in_pod 1 1 cat /sys/class/net/eth0/mtu), reference $(in_pod 3 1 cat /sys/class/net/eth0/mtu);" \
    "pod TX checksum offload: kovs $(in_pod 1 1 ethtool -k eth0 | awk '/^tx-checksumming:/{print $2}')," \
    "reference $(in_pod 3 1 ethtool -k eth0 | awk '/^tx-checksumming:/{print $2}')"
# Which MAC each kovs pod reaches its gateway at: gw0's, or the host end of
# its own veth (the node's kernel answered the ARP first; it then forwards
# every packet the pod sends a second time, through gw0, next to OVS).
for n in 1 2; do
    mac=$(in_pod "$n" 1 ip neigh show "$(node_gw_ip "$n")" | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')
    case $mac in
    "$(in_node "$n" cat /sys/class/net/gw0/address)") seen="gw0's MAC" ;;
    "$(jq -r '.interfaces[0].mac' "$(node_dir "$n")/pod-1.result")") seen="its host veth's MAC (duplicates: the node's kernel forwards its packets too)" ;;
    *) seen="${mac:-no MAC} (neither gw0's nor its host veth's)" ;;
    esac
    echo "kovs pod $n/1 reaches its gateway at $seen"
done
echo "iperf3 ${seconds} s per run (after 1 s omitted), $repeats runs per network, alternating"
echo

ref_pods_tx() { local n; for n in 3 4; do in_pod "$n" 1 ethtool -K eth0 tx "$1" >/dev/null; done; }

# One run: prints "<Gbit/s> <retransmits>".
measure() {
    local net=$1 src dst out rc=0
    read -r src dst <<<"${pair[$net]}"
    [ "$net" = ref_tx_off ] && ref_pods_tx off
    out=$(in_pod "$src" 1 iperf3 -c "$(pod_ip "$dst" 1)" -t "$seconds" -O 1 -J 2>&1) || rc=$?
    [ "$net" = ref_tx_off ] && ref_pods_tx on
    if [ "$rc" != 0 ]; then
        die "$net: iperf3 pod $src/1 -> pod $dst/1 failed: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || echo "$out")"
    fi
    jq -r '"\(.end.sum_received.bits_per_second / 1e9) \(.end.sum_sent.retransmits)"' <<<"$out"
}

declare -A gbps=([kovs]="" [reference]="" [ref_tx_off]="")
for i in $(seq 1 "$repeats"); do
    order=(reference kovs ref_tx_off)
    (( i % 2 == 0 )) && order=(ref_tx_off kovs reference)
    line="run $i:"
    for net in "${order[@]}"; do
        res=$(measure "$net")
        read -r g retr <<<"$res"
        gbps[$net]+=" $g"
        line+=$(printf '  %-10s %6.2f Gbit/s (%s retr.)' "$net" "$g" "$retr")
    done
    echo "$line"
done

# shellcheck disable=SC2086 # the lists are meant to split
{
    kovs_median=$(median ${gbps[kovs]})
    ref_median=$(median ${gbps[reference]})
    tx_off_median=$(median ${gbps[ref_tx_off]})
    echo
    printf 'kovs                   %s Gbit/s  median (min-max) of %d runs\n' "$(spread ${gbps[kovs]})" "$repeats"
    printf 'reference              %s Gbit/s\n' "$(spread ${gbps[reference]})"
    printf 'reference, pod TX off  %s Gbit/s  (context)\n' "$(spread ${gbps[ref_tx_off]})"
}
ratio=$(echo "$kovs_median / $ref_median" | bc -l)
printf 'ratio kovs / kernel VXLAN: %.3f (target >= 0.30: %s)\n' "$ratio" \
    "$( [ "$(echo "$ratio >= 0.30" | bc -l)" = 1 ] && echo met || echo MISSED)"
printf 'context: kernel VXLAN with pod TX checksum off / kernel VXLAN: %.3f; kovs / that: %.3f\n' \
    "$(echo "$tx_off_median / $ref_median" | bc -l)" "$(echo "$kovs_median / $tx_off_median" | bc -l)"
