#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Pod -> pod TCP throughput across nodes per IP family (netns provider, 2
# nodes each, MTU 1500 underlay), every cluster in the same run, one after the
# other: an ipv4 cluster (kind's default), an ipv6 cluster (IPv6 pods over the
# IPv6 underlay: 70 bytes of tunnel, gw0 and pods at 1430) and a dual cluster
# (IPv4 and IPv6 pods over the IPv4 underlay), its two families measured in
# alternation. Targets (printed, never asserted): ipv6 >= 0.9x ipv4; in dual,
# IPv6 >= 0.9x IPv4.
#
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted for slow start)
#   KOVS_BENCH_THROUGHPUT_REPEATS  runs per family (default 3)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need_netns_provider "the IP families of the test bed"
throughput_knobs

echo "pod -> pod TCP throughput across nodes per IP family (kind's ipFamily ipv4, ipv6, dual), same run"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

declare -A gbps=()
# One run from pod 1/1 to pod 2/1 at the pods' address of family $2 (4 or 6),
# into gbps[$1].
measure() {
    local key=$1 fam=$2 dst out g retr
    dst=$(fam_pod_ip "$fam" 2 1)
    out=$(in_pod 1 1 iperf3 -c "$dst" -t "$seconds" -O 1 -J 2>&1) ||
        die "$key: iperf3 pod 1/1 -> $dst failed: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || echo "$out")"
    read -r g retr <<<"$(jq -r '"\(.end.sum_received.bits_per_second / 1e9) \(.end.sum_sent.retransmits)"' <<<"$out")"
    gbps[$key]+=" $g"
    printf '  %-10s %6.2f Gbit/s (%s retr.)\n' "$key" "$g" "$retr"
}

# A 2-node cluster of family $1; then KEY:FAM pairs measured in turn, $repeats times.
cluster_of() {
    local family=$1 pair; shift
    IP_FAMILY=$family
    cluster_up 2
    pod_add 1 1; pod_add 2 1
    mkdir -p "$(node_dir 2)/log"
    in_pod 2 1 iperf3 -s -D --logfile "$(node_dir 2)/log/iperf3-server.log"
    wait_for "iperf3 server in pod 2/1" 10 port_listening 5201 in_pod 2 1
    echo "$family cluster: gw0 $(in_node 1 cat /sys/class/net/gw0/mtu), pods $(in_pod 1 1 ip -j link show eth0 | jq '.[0].mtu')," \
        "tunnel to node 2 at $(node_status_peer_ip)"
    for _ in $(seq 1 "$repeats"); do
        for pair in "$@"; do measure "${pair%:*}" "${pair#*:}"; done
    done
    cluster_down
}
node_status_peer_ip() {
    in_node 1 "$KOVS_BIN/kovsctl" --config "$(node_dir 1)/agent.yaml" status --json | jq -r '.peers[0].nodeIP'
}

cluster_of ipv4 ipv4:4
cluster_of ipv6 ipv6:6
cluster_of dual dual-v4:4 dual-v6:6

echo
declare -A med=()
for key in ipv4 ipv6 dual-v4 dual-v6; do
    # shellcheck disable=SC2086 # the list is meant to split
    med[$key]=$(median ${gbps[$key]})
    # shellcheck disable=SC2086
    printf '%-10s %s Gbit/s  median (min-max) of %d runs\n' "$key" "$(spread ${gbps[$key]})" "$repeats"
done
verdict() { [ "$(echo "$1 >= $2" | bc -l)" = 1 ] && echo met || echo MISSED; }
r=$(echo "${med[ipv6]} / ${med[ipv4]}" | bc -l)
printf 'ipv6 cluster / ipv4 cluster:       %.3f  (target >= 0.9: %s)\n' "$r" "$(verdict "$r" 0.9)"
r=$(echo "${med[dual-v6]} / ${med[dual-v4]}" | bc -l)
printf 'dual: IPv6 pods / IPv4 pods:       %.3f  (target >= 0.9: %s)\n' "$r" "$(verdict "$r" 0.9)"
