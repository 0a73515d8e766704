#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# What each tuning lever within kovs's reach changes for pod -> pod TCP
# throughput across nodes on the kovs cluster (the table in
# docs/benchmarks.md comes from this script). Not a meson benchmark: it takes
# about 10 minutes.
#
# One 2-node kovs cluster (1 pod per node) and, for context, kernel VXLAN
# reference pairs. For every lever: apply it, measure, revert it, measure the
# baseline, in ABBA order, KOVS_TUNING_REPEATS times; the baseline is always
# measured next to the lever so that load from other work on the machine
# (this one is shared with builds) hits both alike. Levers are applied by hand
# (ovs-vsctl on the node's own database, ip, ethtool), as the agent or
# kovs-cni would if they made them a default.
#
#   KOVS_TUNING_SECONDS   iperf3 seconds per run (default 5, after 1 s omitted)
#   KOVS_TUNING_REPEATS   lever/baseline pairs per lever (default 3)
#   KOVS_TUNING_LEVERS    which levers, space-separated (default: all; see "levers" below)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../../cluster/lib/kernel-vxlan-reference.sh
source "$root/tests/cluster/lib/kernel-vxlan-reference.sh"

seconds=${KOVS_TUNING_SECONDS:-5}
repeats=${KOVS_TUNING_REPEATS:-3}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "KOVS_TUNING_SECONDS: expected a positive integer, got '$seconds'"
[[ $repeats =~ ^[1-9]$ ]] || die "KOVS_TUNING_REPEATS: expected 1-9, got '$repeats'"

levers_all="hostveth-arp-on handlers-2 tx-flush-50 userspace-tso userspace-tso+pod-tx-on
afxdp-nonpmd-uplink afxdp-nonpmd-pods afxdp-nonpmd-both afxdp-pmd afxdp-pmd-split-cores
mtu-9000 mtu-3400 mtu-3400+afxdp-nonpmd ref:pod-tx-off ref:mtu-9000"
levers=${KOVS_TUNING_LEVERS:-$levers_all}

vsctl() { local n=$1; shift; in_node "$n" ovs-vsctl --db="unix:$(node_dir "$n")/run/db.sock" "$@"; }
host_veth() { jq -r '[.interfaces[] | select(.sandbox == null or .sandbox == "")][0].name' "$(node_dir "$1")/pod-1.result"; }
kovs_nodes=(1 2)

iperf_server() {
    local n=$1
    in_pod "$n" 1 iperf3 -s -D -I "$(node_dir "$n")/iperf3.pid" --logfile "$(node_dir "$n")/log/iperf3-server.log"
    wait_for "iperf3 server in pod $n/1" 10 port_listening 5201 in_pod "$n" 1
}
iperf_server_stop() { kill "$(cat "$(node_dir "$1")/iperf3.pid")" 2>/dev/null || true; }
path_ok() { wait_for "ping pod $1/1 -> pod $2/1" 20 in_pod "$1" 1 ping -c1 -W1 -q "$(pod_ip "$2" 1)"; }

# One iperf3 run from pod $1/1 to pod $2/1: prints "<Gbit/s> <retransmits>".
measure() {
    local out
    if ! out=$(in_pod "$1" 1 timeout $(( seconds + 20 )) iperf3 -c "$(pod_ip "$2" 1)" -t "$seconds" -O 1 -J 2>&1); then
        echo "0 failed"; return 0
    fi
    jq -r '"\(.end.sum_received.bits_per_second / 1e9) \(.end.sum_sent.retransmits)"' <<<"$out"
}

# --- lever building blocks -------------------------------------------------

both() { local n; for n in "${kovs_nodes[@]}"; do "$@" "$n"; done; }
restart_vswitchd() {
    local n
    for n in "${kovs_nodes[@]}"; do kill -9 "$(cat "$(node_dir "$n")/run/ovs-vswitchd.pid")"; done
    for n in "${kovs_nodes[@]}"; do wait_for "node $n ready after the vswitchd restart" 60 node_ready "$n"; done
}
other_config() { local key=$1 value=$2 n=$3; vsctl "$n" set Open_vSwitch . "other_config:$key=$value"; }
other_config_rm() { local key=$1 n=$2; vsctl "$n" remove Open_vSwitch . other_config "$key"; }
iface_type() { local which=$1 type=$2 n=$3 ifc
    case $which in uplink) ifc=kovs-up1 ;; pod) ifc=$(host_veth "$n") ;; esac
    vsctl "$n" set Interface "$ifc" "type=$type"
}
# Before kovs-cni made the host end of the pod veth NOARP (fd2f49f), the
# node's kernel answered the pod's ARP for its gateway there too (an OVS
# "system" port is still a kernel interface): a pod that took that MAC had
# every packet forwarded twice, by OVS and by the kernel through gw0.
hostveth_arp() { local state=$1 n=$2; in_node "$n" ip link set "$(host_veth "$n")" arp "$state"; in_pod "$n" 1 ip neigh flush all; }
pod_tx() { local state=$1 n=$2; in_pod "$n" 1 ethtool -K eth0 tx "$state" >/dev/null; }

# Underlay, shim and gw0 MTU to $1 on a running cluster, pods re-created with
# the matching MTU. (A cluster started with KOVS_UNDERLAY_MTU needs none of
# this: the agent sizes the shim veths and gw0 to eth0, kovs-cni pods to gw0.
# The measurements below predate that and set each by hand, as here.)
set_mtu() {
    local mtu=$1 n d
    for n in "${kovs_nodes[@]}"; do
        d=$(node_dir "$n")
        in_underlay ip link set "veth-n$n" mtu "$mtu"
        for l in eth0 kovs-up0 kovs-up1; do in_node "$n" ip link set "$l" mtu "$mtu"; done
        sed -i "s/^uplink: {\(mtu: [0-9]*, \)\{0,1\}/uplink: {mtu: $mtu, /" "$d/agent.yaml"
        agent_stop "$n"
        agent_start "$n"
        jq ".plugins[0].uplinkMTU = $mtu" "$d/10-kovs.conflist" > "$d/conflist.tmp" && mv "$d/conflist.tmp" "$d/10-kovs.conflist"
    done
    for n in "${kovs_nodes[@]}"; do wait_for "node $n ready at MTU $mtu" 60 node_ready "$n"; done
    iperf_server_stop 2
    for n in "${kovs_nodes[@]}"; do pod_del "$n" 1; pod_add "$n" 1; done
    iperf_server 2
}

# Every lever as "apply" and "revert" commands, and the pair of pods it is measured on.
lever_apply() {
    case $1 in
    hostveth-arp-on) both hostveth_arp on ;;
    handlers-2) both other_config n-handler-threads 2; both other_config n-revalidator-threads 2 ;;
    tx-flush-50) both other_config tx-flush-interval 50 ;;
    userspace-tso) both other_config userspace-tso-enable true; restart_vswitchd ;;
    userspace-tso+pod-tx-on) both other_config userspace-tso-enable true; restart_vswitchd; both pod_tx on ;;
    afxdp-nonpmd-uplink) both iface_type uplink afxdp-nonpmd ;;
    afxdp-nonpmd-pods) both iface_type pod afxdp-nonpmd ;;
    afxdp-nonpmd-both) both iface_type uplink afxdp-nonpmd; both iface_type pod afxdp-nonpmd ;;
    afxdp-pmd) both iface_type uplink afxdp; both iface_type pod afxdp ;;
    afxdp-pmd-split-cores) other_config pmd-cpu-mask 0x1 1; other_config pmd-cpu-mask 0x2 2
        both iface_type uplink afxdp; both iface_type pod afxdp ;;
    mtu-9000) set_mtu 9000 ;;
    mtu-3400) set_mtu 3400 ;;
    mtu-3400+afxdp-nonpmd) set_mtu 3400; both iface_type uplink afxdp-nonpmd; both iface_type pod afxdp-nonpmd ;;
    ref:pod-tx-off) pod_tx off 3; pod_tx off 4 ;;
    ref:mtu-9000) ;;
    *) die "unknown lever '$1' (known: $levers_all)" ;;
    esac
}
lever_revert() {
    case $1 in
    hostveth-arp-on) both hostveth_arp off ;;
    handlers-2) both other_config_rm n-handler-threads; both other_config_rm n-revalidator-threads ;;
    tx-flush-50) both other_config_rm tx-flush-interval ;;
    userspace-tso) both other_config_rm userspace-tso-enable; restart_vswitchd ;;
    userspace-tso+pod-tx-on) both pod_tx off; both other_config_rm userspace-tso-enable; restart_vswitchd ;;
    afxdp-nonpmd-uplink) both iface_type uplink system ;;
    afxdp-nonpmd-pods) both iface_type pod system ;;
    afxdp-nonpmd-both | afxdp-pmd) both iface_type uplink system; both iface_type pod system ;;
    afxdp-pmd-split-cores) both iface_type uplink system; both iface_type pod system; both other_config_rm pmd-cpu-mask ;;
    mtu-9000 | mtu-3400) set_mtu 1500 ;;
    mtu-3400+afxdp-nonpmd) both iface_type uplink system; both iface_type pod system; set_mtu 1500 ;;
    ref:pod-tx-off) pod_tx on 3; pod_tx on 4 ;;
    ref:mtu-9000) ;;
    esac
}
# Source and destination node of the pods each lever is measured on: "baseline lever".
lever_pairs() {
    case $1 in
    ref:mtu-9000) echo "3 4 5 6" ;;
    ref:*) echo "3 4 3 4" ;;
    *) echo "1 2 1 2" ;;
    esac
}

# --- run --------------------------------------------------------------------

need_netns_provider "the kernel VXLAN reference (bare nodes)"
echo "tuning levers: pod -> pod TCP across nodes, each lever against the baseline measured next to it"
echo "build: $(build_description)"
echo "machine: $(machine_description)"
echo "iperf3 ${seconds} s per run (after 1 s omitted), $repeats lever/baseline pairs per lever, ABBA order"
cluster_up 2
pod_add 1 1
pod_add 2 1
ref_node_up 3
ref_node_up 4
ref_node_up 5 9000
ref_node_up 6 9000
ref_connect 3 4
ref_connect 5 6
for n in 3 4 5 6; do ref_pod_add "$n" 1; done
for n in 2 4 6; do iperf_server "$n"; done
path_ok 1 2
path_ok 3 4
path_ok 5 6
echo "iface_types: $(vsctl 1 get Open_vSwitch . iface_types)"
echo

results=()
printf '%-26s %-22s %-22s %7s  %s\n' lever "baseline Gbit/s" "with lever Gbit/s" change "retransmits (baseline / lever, medians)"
for lever in $levers; do
    read -r bs bd ls ld <<<"$(lever_pairs "$lever")"
    base=() with=() base_retr=() with_retr=()
    for i in $(seq 1 "$repeats"); do
        order=(lever baseline)
        (( i % 2 == 0 )) && order=(baseline lever)
        for what in "${order[@]}"; do
            if [ "$what" = lever ]; then
                lever_apply "$lever"
                path_ok "$ls" "$ld" || true
                read -r g r <<<"$(measure "$ls" "$ld")"
                with+=("$g"); with_retr+=("$r")
                lever_revert "$lever"
                path_ok "$bs" "$bd"
            else
                read -r g r <<<"$(measure "$bs" "$bd")"
                base+=("$g"); base_retr+=("$r")
            fi
        done
    done
    change=$(echo "$(median "${with[@]}") / $(median "${base[@]}")" | bc -l 2>/dev/null || echo 0)
    row=$(printf '%-26s %-22s %-22s %6.2fx  %s / %s' "$lever" "$(spread "${base[@]}")" "$(spread "${with[@]}")" "$change" \
        "$(median "${base_retr[@]/failed/0}")" "$(median "${with_retr[@]/failed/0}")")
    [[ " ${with_retr[*]} " == *" failed "* ]] && row+="  (some runs failed: no TCP)"
    echo "$row"
    results+=("$row")
done
