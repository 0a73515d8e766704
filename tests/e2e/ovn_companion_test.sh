#!/usr/bin/env bash
# kovs in companion mode next to a real OVN datapath (issue 16): a 3-node
# OVN 23.03 cluster from Debian's packages, shaped as OVN-Kubernetes runs on
# kind (tests/cluster/lib/ovn.sh: NB/SB + northd on node 1, ovn-controller with
# a netdev br-int and Geneve on every node, pods attached as ovnkube-node
# attaches them), then kovs-agent in companion mode on every node.
#   - without kovs, pods on one node reach each other and nothing across nodes
#     (the userspace datapath cannot route the Geneve underlay: no bridge holds
#     the node IP); with kovs, TCP and UDP between every pair of pods
#   - OVN's part stays byte-identical when kovs starts, restarts and runs
#     --cleanup: every OpenFlow flow, group and meter on br-int (ovn-controller
#     owns br-int's whole table; kovs installs none in companion mode), the
#     NB and SB databases, the Open_vSwitch row's external_ids, and br-int's
#     Bridge, Port and Interface rows that carry no kovs-owner
#   - a pod attached while kovs runs gets its offload fixed and traffic
#   - ovn-controller restarted, and ovs-vswitchd killed with -9 and started
#     again by its supervisor: traffic comes back
#   - at idle: the CPU of ovs-vswitchd and kovs-agent printed, and no repair
#     made over the window (the gateway-MTU fight of issue 16 was a repair
#     every ~1.5 ms and vswitchd at 50 % CPU)
source "$(dirname "$0")/lib.sh"
# shellcheck source=../cluster/lib/ovn.sh
source "$root/tests/cluster/lib/ovn.sh"

PODS=2
# Loops over it read from fd 3 (4 inside): the docker provider's in_node and
# in_pod (docker exec -i) would read the list from stdin.
all_pods() { local n p; for n in 1 2 3; do for p in $(seq 1 "$PODS"); do echo "$n $p"; done; done; }
pod_ip() { ovn_pod_ip "$1" "$2"; }   # checks.sh's servers and probes address pods by this

start_ovn_servers() {
    local n p
    while read -r n p <&3; do
        in_pod "$n" "$p" socat "TCP-LISTEN:$TCP_PORT,fork,reuseaddr" SYSTEM:'wc -c' >/dev/null 2>&1 &
        in_pod "$n" "$p" socat UDP-RECVFROM:9090,fork EXEC:cat >/dev/null 2>&1 &
    done 3< <(all_pods)
    while read -r n p <&3; do wait_for "servers in pod $n/$p" 10 port_listening "$TCP_PORT" in_pod "$n" "$p"; done 3< <(all_pods)
}
udp_ok() {
    local dst=$1 tag=$2; shift 2
    local got
    got=$(echo "$tag" | "$@" timeout 5 socat -t2 - "UDP:$dst:9090" 2>/dev/null | head -1 || true)
    [ "$got" = "$tag" ]
}

# Every ordered pair of pods over TCP (64 KiB) and UDP; prints the failures.
ovn_matrix() {
    local n p m q failed=0
    while read -r n p <&3; do
        while read -r m q <&4; do
            [ "$n$p" = "$m$q" ] && continue
            tcp_ok "$(pod_ip "$m" "$q")" in_pod "$n" "$p" || { echo "  TCP n$n/p$p -> n$m/p$q failed"; failed=1; }
            udp_ok "$(pod_ip "$m" "$q")" "n$n$p-n$m$q" in_pod "$n" "$p" || { echo "  UDP n$n/p$p -> n$m/p$q failed"; failed=1; }
        done 4< <(all_pods)
    done 3< <(all_pods)
    return $failed
}

snapshot() {
    local tag=$1 n
    for n in 1 2 3; do ovn_node_snapshot "$n" > "$CLUSTER_DIR/ovn-n$n.$tag"; done
    ovn_central_snapshot > "$CLUSTER_DIR/ovn-central.$tag"
}
same_as_before() {
    local tag=$1 f
    for f in ovn-n1 ovn-n2 ovn-n3 ovn-central; do
        cmp -s "$CLUSTER_DIR/$f.before" "$CLUSTER_DIR/$f.$tag" ||
            fail "$f: OVN's flows or rows changed ($tag):
$(diff -u "$CLUSTER_DIR/$f.before" "$CLUSTER_DIR/$f.$tag" | head -40)"
    done
}

# The agent's repairs so far: every *_repairs_total sample of its /metrics.
agent_repairs() { agent_metrics "$1" | awk '/^kovs_[a-z_]*repairs_total/ { s += $NF } END { print s + 0 }'; }
cpu_ticks() { in_node "$1" cat "/proc/$2/stat" | awk '{ print $14 + $15 }'; }
vswitchd_pid() { in_node "$1" cat "$(node_dir "$1")/run/ovs-vswitchd.pid"; }
agent_pid() { cat "$(node_dir "$1")/agent.pid"; }
tx_off() { in_pod "$1" "$2" ethtool -k eth0 | grep -q 'tx-checksumming: off'; }
vswitchd_replaced() { [ "$(vswitchd_pid "$1")" != "$2" ] && in_node "$1" ovs-appctl -t ovs-vswitchd version >/dev/null; }

step "3-node OVN cluster, $((3 * PODS)) pods"
ovn_cluster_up 3
while read -r n p <&3; do ovn_pod_add "$n" "$p"; done 3< <(all_pods)
start_ovn_servers
done_step
pass "OVN cluster up (NB/SB + northd on node 1, ovn-controller with netdev br-int and Geneve on 3 nodes), pods attached as ovnkube-node does"

# The test bed works and needs the fix: OVN switches on one node, and fails across nodes.
wait_for "same-node ping n1/p1 -> n1/p2 without kovs" 20 ping_ok "$(pod_ip 1 2)" in_pod 1 1 ||
    fail "without kovs, same-node ping fails: the OVN setup is broken"
for n in 1 2 3; do
    tunnels=$(ovn_vsctl "$n" --bare --columns=name find Interface type=geneve | grep -c .)
    [ "$tunnels" -eq 2 ] || fail "node $n: $tunnels Geneve ports on br-int, expected one per other chassis"
done
for pair in "1 1 2 1" "2 1 3 1" "3 1 1 1"; do
    read -r n p m q <<<"$pair"
    ping_ok "$(pod_ip "$m" "$q")" in_pod "$n" "$p" && fail "without kovs, ping n$n/p$p -> n$m/p$q works: the test would not show the fix"
    tcp_ok "$(pod_ip "$m" "$q")" in_pod "$n" "$p" && fail "without kovs, TCP n$n/p$p -> n$m/p$q works"
done
pass "without kovs: same-node ping works, cross-node ping and TCP fail"

snapshot before
echo "   OVN on node 1: $(grep -c 'cookie=' "$CLUSTER_DIR/ovn-n1.before") flows on br-int, $(wc -l < "$CLUSTER_DIR/ovn-central.before") lines of NB+SB"

step "kovs-agent in companion mode on 3 nodes"
ovn_kovs_start 1 2 3
done_step
ovn_matrix || fail "pod traffic with kovs"
pass "with kovs: TCP and UDP between all $((3 * PODS)) pods, across nodes through OVN's Geneve"

snapshot started
same_as_before started
pass "OVN's flows, groups, meters, NB/SB and br-int rows byte-identical after kovs started"
for n in 1 2 3; do
    mine=$(ovn_vsctl "$n" --bare --columns=name find Port external_ids:kovs-owner=kovs-agent | grep . | sort | tr '\n' ' ')
    [ "$mine" = "br-phy kovs-up1 " ] || fail "node $n: kovs's ports are '$mine', expected only br-phy's (br-phy kovs-up1)"
done
pass "kovs added no tunnel, gateway or port of its own to OVN's br-int"

# A pod attached while kovs runs: ovn-controller binds it over the shim,
# kovs turns its offload off from the port change (no kovs-cni in this chain).
ovn_pod_add 3 3
in_pod 3 3 socat "TCP-LISTEN:$TCP_PORT,fork,reuseaddr" SYSTEM:'wc -c' >/dev/null 2>&1 &
wait_for "server in pod 3/3" 10 port_listening "$TCP_PORT" in_pod 3 3
wait_for "TX checksum off in pod 3/3" 10 tx_off 3 3
tcp_ok "$(pod_ip 3 3)" in_pod 1 1 || fail "TCP n1/p1 -> the new pod n3/p3"
snapshot before   # OVN's own rows and flows for the new pod are the new reference
pass "a pod attached while kovs runs: bound by ovn-controller, offload fixed by kovs, TCP from another node"

for n in 1 2 3; do agent_stop "$n"; done
for n in 1 2 3; do agent_start "$n"; done
for n in 1 2 3; do wait_for "node $n agent ready after restart" 60 node_ready "$n" || { node_debug "$n"; fail "restart"; }; done
tcp_ok "$(pod_ip 2 1)" in_pod 1 1 && tcp_ok "$(pod_ip 1 1)" in_pod 3 1 || fail "pod traffic after a kovs restart"
snapshot restarted
same_as_before restarted
pass "kovs restarted: traffic flows, OVN's flows and rows byte-identical"

# Idle: no repair loop. The MTU fight of issue 16 was a repair every ~1.5 ms.
window=10
declare -A vs0 ag0 rp0
for n in 1 2 3; do
    vs0[$n]=$(cpu_ticks "$n" "$(vswitchd_pid "$n")"); ag0[$n]=$(cpu_ticks "$n" "$(agent_pid "$n")"); rp0[$n]=$(agent_repairs "$n")
done
sleep "$window"   # a measuring window, not a wait for state
hz=$(getconf CLK_TCK)
for n in 1 2 3; do
    vs=$(( $(cpu_ticks "$n" "$(vswitchd_pid "$n")") - vs0[$n] )); ag=$(( $(cpu_ticks "$n" "$(agent_pid "$n")") - ag0[$n] ))
    rp=$(( $(agent_repairs "$n") - rp0[$n] ))
    printf '   idle node %s over %ss: ovs-vswitchd %s%% CPU, kovs-agent %s%% CPU, %s repairs\n' "$n" "$window" \
        "$(echo "scale=1; 100 * $vs / ($hz * $window)" | bc)" "$(echo "scale=1; 100 * $ag / ($hz * $window)" | bc)" "$rp"
    [ "$rp" -eq 0 ] || fail "node $n: the agent repaired $rp things at idle:
$(node_status "$n" | jq -c '.recentRepairs')"
done
node_status 1 | jq -e '.gateway.mtuContested == false and .gateway.mtu == null' >/dev/null ||
    fail "node 1: gateway MTU: $(node_status 1 | jq -c .gateway)"
pass "idle: no repairs by any agent over ${window}s, the gateway's MTU left to OVN-K"

for n in 1 2 3; do
    out=$(kovsctl "$n" doctor) || fail "doctor on node $n:
$out"
done
grep -q "fit the tunnel in use, .*geneve with 8 bytes of options (TLV table)): 58 bytes" <<<"$out" ||
    fail "doctor's mtu check does not size OVN's Geneve: $(grep mtu <<<"$out")"
pass "kovsctl doctor passes on every node, sizing the tunnel as Geneve + OVN's option (58 bytes)"

for n in 1 2 3; do agent_stop "$n"; done
for n in 1 2 3; do in_node "$n" "$KOVS_BIN/kovs-agent" --config "$(node_dir "$n")/agent.yaml" --cleanup >/dev/null 2>&1 ||
    fail "kovs-agent --cleanup on node $n"; done
snapshot cleaned
same_as_before cleaned
pass "kovs-agent --cleanup: OVN's flows and rows byte-identical, the node's uplink as it was"

# Recovery, with kovs running again.
for n in 1 2 3; do agent_start "$n"; done
for n in 1 2 3; do wait_for "node $n agent ready" 60 node_ready "$n" || { node_debug "$n"; fail "start after cleanup"; }; done
ovn_controller_stop 2
ovn_controller_start 2
t0=$(ms_now)
wait_for "TCP n1/p1 -> n2/p1 after ovn-controller restart on node 2" 60 tcp_ok "$(pod_ip 2 1)" in_pod 1 1 ||
    fail "traffic did not come back after an ovn-controller restart"
echo "   ovn-controller restart on node 2: traffic back after $(( $(ms_now) - t0 )) ms"
pass "ovn-controller restart: recovered"

old=$(vswitchd_pid 2)
in_node 2 kill -9 "$old"
t0=$(ms_now)
# OVS's monitor leaves a SIGKILLed vswitchd dead; its supervisor starts it again.
wait_for "ovs-vswitchd $old gone on node 2" 10 _ovn_gone 2 "$old" || fail "vswitchd $old survived kill -9"
ovn_vswitchd_start 2
wait_for "a new ovs-vswitchd on node 2" 30 vswitchd_replaced 2 "$old"
wait_for "TCP n1/p1 -> n2/p1 after vswitchd kill -9 on node 2" 60 tcp_ok "$(pod_ip 2 1)" in_pod 1 1 ||
    fail "traffic did not come back after vswitchd was killed"
wait_for "TCP n2/p2 -> n3/p1" 30 tcp_ok "$(pod_ip 3 1)" in_pod 2 2 || fail "n2 -> n3 after vswitchd kill"
echo "   ovs-vswitchd kill -9 on node 2: traffic back after $(( $(ms_now) - t0 )) ms (new pid $(vswitchd_pid 2))"
pass "ovs-vswitchd kill -9: started again, kovs re-programmed it, traffic back"

echo "all $checks checks passed"
