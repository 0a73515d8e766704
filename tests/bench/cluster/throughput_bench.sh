#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Pod -> pod TCP throughput across nodes at the underlay's MTU (1500 unless
# KOVS_UNDERLAY_MTU), every network on the same underlay in the same run, runs
# alternating so that load from other work hits all alike:
#
#   kovs            kovs as shipped (nodes 1 -> 2): shim uplink, Services reply path
#   kovs-noct       the same with flows.conntrack: false (nodes 3 -> 4): what the
#                   Services reply path (OVS conntrack) costs, same binary
#   kovs-svc        nodes 1 -> 2 again, through a ClusterIP (kube-proxy's DNAT on
#                   node 1, tests/cluster/lib/kube-proxy.sh when present)
#   netdev-ref      OVS netdev set up by hand as the seeds did (nodes 7 -> 8,
#                   tests/cluster/lib/netdev-reference.sh): the target's reference
#   kernel          kernel VXLAN + Linux bridge (nodes 5 -> 6,
#                   tests/cluster/lib/kernel-vxlan-reference.sh), context
#   kernel-txoff    the same with TX checksum offload off in its pods (context: the
#                   rule kovs's pods live by, which costs the kernel its TSO)
#
# Targets (printed, never asserted): kovs >= 1.5x netdev-ref; the Services
# reply path costs at most 10 % (kovs / kovs-noct >= 0.90).
#
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted for slow start)
#   KOVS_BENCH_THROUGHPUT_REPEATS  runs per network (default 3)
#   KOVS_UNDERLAY_MTU              underlay MTU for every network (default 1500; kovs follows it)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../../cluster/lib/kernel-vxlan-reference.sh
source "$root/tests/cluster/lib/kernel-vxlan-reference.sh"
# shellcheck source=../../cluster/lib/netdev-reference.sh
source "$root/tests/cluster/lib/netdev-reference.sh"

throughput_knobs

need_netns_provider "the reference networks (bare nodes)"
echo "pod -> pod TCP throughput across nodes: kovs vs OVS netdev by hand (target) and kernel VXLAN (context)"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

SVC_IP=10.96.0.50
cluster_up 4
for n in 1 2 3 4; do pod_add "$n" 1; done
# Nodes 3-4: the same agent without the conntrack stage.
for n in 3 4; do
    printf 'flows: {conntrack: false}\n' >> "$(node_dir "$n")/agent.yaml"
    agent_stop "$n"; agent_start "$n"
done
for n in 3 4; do wait_for "node $n agent without conntrack" 60 node_ready "$n" || { node_debug "$n"; exit 1; }; done
# The ClusterIP kovs-svc goes through: kube-proxy's rules for one TCP
# Service with pod 2/1 behind it, on node 1 (the client's node).
if declare -F kube_proxy_sync >/dev/null; then
    services_file=$CLUSTER_DIR/bench-services.json
    printf '{"services": [{"name": "iperf", "clusterIP": "%s", "ports": [{"port": 5201, "protocol": "TCP"}],
             "endpoints": [{"ip": "%s", "node": "node2"}]}]}\n' "$SVC_IP" "$(pod_ip 2 1)" > "$services_file"
    kube_proxy_sync 1 iptables "$services_file"
    svc_rules="kube-proxy iptables-mode rules"
else
    in_node 1 iptables -t nat -A PREROUTING -d "$SVC_IP/32" -p tcp --dport 5201 -j DNAT --to-destination "$(pod_ip 2 1):5201"
    svc_rules="one DNAT rule"
fi
ref_node_up 5 "$UNDERLAY_MTU"; ref_node_up 6 "$UNDERLAY_MTU"; ref_connect 5 6
ref_pod_add 5 1; ref_pod_add 6 1
netdev_ref_node_up 7 "$UNDERLAY_MTU"; netdev_ref_node_up 8 "$UNDERLAY_MTU"
netdev_ref_pod_add 7 1; netdev_ref_pod_add 8 1
netdev_ref_connect 7 8

# network -> "source node, destination node, destination address (pod_ip if empty)"
declare -A pair=([kovs]="1 2" [kovs-noct]="3 4" [kovs-svc]="1 2 $SVC_IP" [netdev-ref]="7 8" [kernel]="5 6" [kernel-txoff]="5 6")
networks=(kovs kovs-noct kovs-svc netdev-ref kernel kernel-txoff)
for dst in 2 4 6 8; do
    in_pod "$dst" 1 iperf3 -s -D --logfile "$(node_dir "$dst")/log/iperf3-server.log"
    wait_for "iperf3 server in pod $dst/1" 10 port_listening 5201 in_pod "$dst" 1
done
for net in "${networks[@]}"; do
    read -r src dst addr <<<"${pair[$net]}"
    wait_for "$net: ping pod $src/1 -> pod $dst/1" 10 in_pod "$src" 1 ping -c1 -W1 -q "$(pod_ip "$dst" 1)"
done
echo "pod MTU: kovs $(in_pod 1 1 cat /sys/class/net/eth0/mtu), netdev-ref $(in_pod 7 1 cat /sys/class/net/eth0/mtu)," \
    "kernel $(in_pod 5 1 cat /sys/class/net/eth0/mtu); kovs-svc through $SVC_IP ($svc_rules on node 1)"
echo "iperf3 ${seconds} s per run (after 1 s omitted), $repeats runs per network, order reversed every other run"
echo

ref_pods_tx() { local n; for n in 5 6; do in_pod "$n" 1 ethtool -K eth0 tx "$1" >/dev/null; done; }

# One run: prints "<Gbit/s> <retransmits>".
measure() {
    local net=$1 src dst addr out rc=0
    read -r src dst addr <<<"${pair[$net]}"
    [ "$net" = kernel-txoff ] && ref_pods_tx off
    out=$(in_pod "$src" 1 iperf3 -c "${addr:-$(pod_ip "$dst" 1)}" -t "$seconds" -O 1 -J 2>&1) || rc=$?
    [ "$net" = kernel-txoff ] && ref_pods_tx on
    if [ "$rc" != 0 ]; then
        die "$net: iperf3 pod $src/1 -> ${addr:-pod $dst/1} failed: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || echo "$out")"
    fi
    jq -r '"\(.end.sum_received.bits_per_second / 1e9) \(.end.sum_sent.retransmits)"' <<<"$out"
}

declare -A gbps=()
for i in $(seq 1 "$repeats"); do
    order=("${networks[@]}")
    if (( i % 2 == 0 )); then
        order=()
        for (( k = ${#networks[@]} - 1; k >= 0; k-- )); do order+=("${networks[$k]}"); done
    fi
    echo "run $i:"
    for net in "${order[@]}"; do
        read -r g retr <<<"$(measure "$net")"
        gbps[$net]+=" $g"
        printf '  %-13s %6.2f Gbit/s (%s retr.)\n' "$net" "$g" "$retr"
    done
done

echo
declare -A med=()
for net in "${networks[@]}"; do
    # shellcheck disable=SC2086 # the list is meant to split
    med[$net]=$(median ${gbps[$net]})
    # shellcheck disable=SC2086
    printf '%-13s %s Gbit/s  median (min-max) of %d runs\n' "$net" "$(spread ${gbps[$net]})" "$repeats"
done
ratio() { echo "${med[$1]} / ${med[$2]}" | bc -l; }
verdict() { [ "$(echo "$1 >= $2" | bc -l)" = 1 ] && echo met || echo MISSED; }
r=$(ratio kovs netdev-ref)
printf 'kovs / netdev-ref (OVS netdev by hand):     %.3f  (target >= 1.5: %s)\n' "$r" "$(verdict "$r" 1.5)"
r=$(ratio kovs kovs-noct)
printf 'kovs / kovs-noct (Services reply path):     %.3f  (target: costs at most 10 %%, >= 0.90: %s)\n' "$r" "$(verdict "$r" 0.90)"
printf 'kovs-svc / kovs (through a ClusterIP):      %.3f\n' "$(ratio kovs-svc kovs)"
printf 'context: kovs / kernel VXLAN %.3f; kovs / kernel with pod TX off %.3f; kernel TX off / kernel %.3f\n' \
    "$(ratio kovs kernel)" "$(ratio kovs kernel-txoff)" "$(ratio kernel-txoff kernel)"
