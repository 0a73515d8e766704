#!/usr/bin/env bash
# A kind node that reboots comes back by itself (issue 15), on the kind-node
# provider. 2 nodes, one test pod each.
#  - `docker restart` of a node: the node's run directories are gone (tmpfs),
#    its OVS database with every kovs row, the uplink port included, is
#    kept; the node's kubelet starts at boot and runs its kovs pod again; the
#    agent becomes ready without crash-looping, the node IP is back on
#    br-phy, the test pod re-created by the runtime reaches the other node's;
#  - a full reboot (every node stopped, then started, as after the Docker
#    host rebooted): the same for every node.
# Prints how long each node took from its restart to a ready agent, and how
# long the API server's side could not reach it.
export KOVS_PROVIDER=kind-node
source "$(dirname "$0")/lib.sh"

cluster_up 2
for n in 1 2; do pod_add "$n" 1; done
start_servers 2 1
probe_start api1 "$(node_ip 1)" underlay
probe_start api2 "$(node_ip 2)" underlay

serve() { in_pod "$1" "$2" socat "TCP-LISTEN:$TCP_PORT,fork,reuseaddr" SYSTEM:'wc -c' >/dev/null 2>&1 & }
agent_never_restarted() {
    pod_status "$1" | jq -e '.containerStatuses[] | select(.name == "kovs-agent") | .restartCount == 0 and .lastExit == null' >/dev/null
}
# After node N booted: what "comes back by itself" means.
back_by_itself() {
    local n=$1 t0=$2 t1 uplink
    t1=$(ms_now)
    wait_for "node $n's agent to be ready with its peers" 60 node_ready "$n" || fail "node $n's agent is not ready after the reboot"
    agent_never_restarted "$n" ||
        fail "node $n: the agent crash-looped after the reboot: $(pod_status "$n" | jq -c '.containerStatuses[] | {name, restartCount, lastExit}'); its log: $(tail -5 "$(ls -t "$(kubelet_dir "$n")"/logs/*/kovs-agent/0.log | head -1)")"
    in_node "$n" ip -4 -br addr show br-phy | grep -qF "$(node_ip "$n")/16" || fail "node $n: its IP is not on br-phy after the reboot"
    uplink=$(in_agent "$n" ovs-vsctl list-ports br-phy | tr '\n' ' ')
    [ "$(wc -w <<<"$uplink")" -eq 1 ] || fail "node $n: br-phy ports after the reboot: $uplink"
    ping_ok "$(node_ip "$n")" in_underlay || fail "node $n: not reachable from the Docker host after the reboot"
    grep -q "removed [0-9]* containers of an earlier run" "$(kubelet_dir "$n")/kubelet.log" ||
        fail "node $n: the kubelet runner found no containers of the boot before"
    echo "  node $n: kovs pod Ready $(( (t1 - t0) / 1000 )) s after the restart; the API server's side could not reach it for $(probe_gap "api$n" "$t0" "$t1") ms"
}
traffic_between() {
    tcp_ok "$(pod_ip 2 1)" in_pod 1 1 && tcp_ok "$(pod_ip 1 1)" in_pod 2 1
}

# --- docker restart of node 2 ----------------------------------------------------
in_agent 2 ovs-vsctl list-ports br-phy | grep -q . || fail "node 2 has no uplink port before the restart"
t0=$(ms_now)
node_restart 2 || fail "node 2 did not come back after docker restart"
back_by_itself 2 "$t0"
pod_recreate 2 1 || fail "test pod 2/1 could not be re-created after node 2's restart"
serve 2 1
wait_for "pods on both nodes to reach each other after node 2's restart" 60 traffic_between ||
    fail "pod traffic between the nodes broken after node 2's restart"
pass "docker restart of node 2: back with its IP on br-phy, agent ready without a restart, pod re-created and working"

# --- every node at once --------------------------------------------------------------
t0=$(ms_now)
cluster_reboot || fail "the nodes did not come back after the reboot"
for n in 1 2; do back_by_itself "$n" "$t0"; done
for n in 1 2; do pod_recreate "$n" 1 || fail "test pod $n/1 could not be re-created after the reboot"; serve "$n" 1; done
wait_for "pods on both nodes to reach each other after the reboot" 60 traffic_between ||
    fail "pod traffic between the nodes broken after the reboot"
pass "every node stopped and started: each came back by itself, pods re-created and working"

echo "$checks passed, 0 failed"
