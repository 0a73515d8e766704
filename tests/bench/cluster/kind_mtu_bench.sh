#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# What `kind/kovs-kind up --mtu 9000` buys: pod -> pod TCP throughput across
# nodes on the kind-node provider (2 nodes), with the nodes' Docker network at
# MTU 1500 (kind's default) and then, in the same run, at MTU 9000 (the
# network --mtu makes). kovs follows the network by itself: gw0 and the pods
# get the MTU minus the tunnel's 50 bytes; the benchmark stops if they do not.
# Prints each figure, the MTUs seen, and the ratio (target: >= 2.5x; never
# asserted).
#
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted for slow start)
#   KOVS_BENCH_THROUGHPUT_REPEATS  runs per MTU (default 3)
export KOVS_PROVIDER=kind-node
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
throughput_knobs

echo "pod -> pod TCP throughput across nodes (kind-node provider): Docker network MTU 1500 vs 9000 (kovs-kind up --mtu 9000), same run"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

declare -A gbps=()
# One cluster at the network MTU $1: its pods' and gw0's MTU checked, then
# $repeats iperf3 runs from pod 1/1 to pod 2/1.
measure_at() {
    local mtu=$1 i out pod_mtu gw_mtu
    UNDERLAY_MTU=$mtu
    cluster_up 2
    pod_add 1 1; pod_add 2 1
    # netlink, not /sys: a pod's /sys is its node's here.
    pod_mtu=$(in_pod 1 1 ip -j link show eth0 | jq '.[0].mtu')
    gw_mtu=$(in_node 1 ip -j link show gw0 | jq '.[0].mtu')
    echo "network MTU $mtu: eth0 $(in_node 1 ip -j link show eth0 | jq '.[0].mtu'), gw0 $gw_mtu, pods $pod_mtu"
    if [ "$pod_mtu" != $((mtu - 50)) ] || [ "$gw_mtu" != $((mtu - 50)) ]; then
        die "kovs did not follow the network's MTU $mtu: gw0 $gw_mtu, pods $pod_mtu (expected $((mtu - 50)))"
    fi
    mkdir -p "$(node_dir 2)/log"
    in_pod 2 1 iperf3 -s -D --logfile "$(node_dir 2)/log/iperf3-server.log"
    wait_for "iperf3 server in pod 2/1" 10 port_listening 5201 in_pod 2 1
    for i in $(seq 1 "$repeats"); do
        out=$(in_pod 1 1 iperf3 -c "$(pod_ip 2 1)" -t "$seconds" -O 1 -J 2>&1) ||
            die "MTU $mtu: iperf3 pod 1/1 -> pod 2/1 failed: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || echo "$out")"
        read -r g retr <<<"$(jq -r '"\(.end.sum_received.bits_per_second / 1e9) \(.end.sum_sent.retransmits)"' <<<"$out")"
        gbps[$mtu]+=" $g"
        printf '  run %d at MTU %s: %6.2f Gbit/s (%s retr.)\n' "$i" "$mtu" "$g" "$retr"
    done
    cluster_down
}
measure_at 1500
measure_at 9000

echo
for mtu in 1500 9000; do
    # shellcheck disable=SC2086 # the list is meant to split
    printf 'MTU %-5s %s Gbit/s  median (min-max) of %d runs\n' "$mtu" "$(spread ${gbps[$mtu]})" "$repeats"
done
# shellcheck disable=SC2086
r=$(echo "$(median ${gbps[9000]}) / $(median ${gbps[1500]})" | bc -l)
printf 'MTU 9000 / MTU 1500: %.2fx  (target >= 2.5: %s)\n' "$r" "$([ "$(echo "$r >= 2.5" | bc -l)" = 1 ] && echo met || echo MISSED)"
