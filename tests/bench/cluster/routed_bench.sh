#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Pod -> pod TCP throughput across a router vs on-link, same cluster, same
# run (netns provider, KOVS_TOPOLOGY=routed, MTU 1500): node 1 reaches node 3
# on its own subnet and node 2 through the router namespace (a Linux router:
# one more kernel forwarding hop on the underlay). The two paths are measured
# in alternation, pod 1/1 -> 3/1 and 1/1 -> 2/1. Target (printed, never
# asserted): routed >= 0.9x on-link.
#
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted for slow start)
#   KOVS_BENCH_THROUGHPUT_REPEATS  runs per path (default 3)
export KOVS_TOPOLOGY=routed
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need_netns_provider "the routed test bed"
throughput_knobs

echo "pod -> pod TCP throughput across a router vs on-link (routed underlay, MTU $UNDERLAY_MTU), same run"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

cluster_up 3
for n in 1 2 3; do pod_add "$n" 1; done
for n in 2 3; do
    mkdir -p "$(node_dir "$n")/log"
    in_pod "$n" 1 iperf3 -s -D --logfile "$(node_dir "$n")/log/iperf3-server.log"
    wait_for "iperf3 server in pod $n/1" 10 port_listening 5201 in_pod "$n" 1
done
via=$(in_node 1 "$KOVS_BIN/kovsctl" --config "$(node_dir 1)/agent.yaml" status --json | jq -r '.peers[] | select(.name == "node2") | .via')
echo "node 1 -> node 2 via $via, node 1 -> node 3 on-link; gw0 $(in_node 1 cat /sys/class/net/gw0/mtu), pods $(in_pod 1 1 ip -j link show eth0 | jq '.[0].mtu')"

declare -A gbps=()
measure() {
    local key=$1 dst_node=$2 out g retr
    out=$(in_pod 1 1 iperf3 -c "$(pod_ip "$dst_node" 1)" -t "$seconds" -O 1 -J 2>&1) ||
        die "$key: iperf3 pod 1/1 -> $dst_node/1 failed: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || echo "$out")"
    read -r g retr <<<"$(jq -r '"\(.end.sum_received.bits_per_second / 1e9) \(.end.sum_sent.retransmits)"' <<<"$out")"
    gbps[$key]+=" $g"
    printf '  %-9s %6.2f Gbit/s (%s retr.)\n' "$key" "$g" "$retr"
}
for _ in $(seq 1 "$repeats"); do
    measure on-link 3
    measure routed 2
done

echo
for key in on-link routed; do
    # shellcheck disable=SC2086 # the list is meant to split
    printf '%-9s %s Gbit/s  median (min-max) of %d runs\n' "$key" "$(spread ${gbps[$key]})" "$repeats"
done
# shellcheck disable=SC2086
r=$(echo "$(median ${gbps[routed]}) / $(median ${gbps[on-link]})" | bc -l)
printf 'routed / on-link:  %.3f  (target >= 0.9: %s)\n' "$r" "$([ "$(echo "$r >= 0.9" | bc -l)" = 1 ] && echo met || echo MISSED)"
