#!/usr/bin/env bash
# A node never goes offline when its kovs pod restarts or is replaced (issue
# 15), on the kind-node provider: the shipped image and DaemonSet, run by the
# kubelet runner, which learns its pods from the API server over the node's
# own network. 2 nodes, one test pod each; pings every 50 ms run all along:
# pod -> pod across the nodes, node -> node, and the API server's side (the
# Docker host) -> each node. Each scenario prints the longest gap of each.
#  - /healthz answers kubelet's probe while idle connections hold the port;
#  - the agent container exits (SIGTERM), crashes (SIGABRT), is killed -9, or
#    is restarted by kubelet for a failed liveness probe: the OVS daemons are
#    the same processes after it (target: no gap over 1 s);
#  - the ovs container is killed -9: its daemons are restarted and the agent
#    re-programs the datapath (informational);
#  - a rollout to a new image, and `kovs-kind load`: every node's pod replaced
#    one at a time, the new pod learnt by the node's kubelet through the API
#    server while the old pod was gone (target: no gap over 3 s per node);
#  - `kovs-agent --cleanup`, then deleting the DaemonSet: the node has its
#    original address, routes and MAC on eth0 and is reachable, but kovs's
#    state stays on the node (gw0, table ip kovs, the conflist, the plugin);
#    then `kovs-kind uninstall` (issue 26): nothing of kovs is left on any
#    node, eth0 still as Docker made it.
export KOVS_PROVIDER=kind-node
source "$(dirname "$0")/lib.sh"

cluster_up 2
for n in 1 2; do pod_add "$n" 1; done
start_servers 2 1
# Before kovs moved it: eth0's address and MAC as Docker gave them.
declare -A mac0
for n in 1 2; do mac0[$n]=$(dk inspect -f '{{(index .NetworkSettings.Networks "'"$DOCKER_NETWORK"'").MacAddress}}' "$(node_container "$n")"); done

probe_start pp12 "$(pod_ip 2 1)" pod 1 1
probe_start pp21 "$(pod_ip 1 1)" pod 2 1
probe_start nn12 "$(node_ip 2)" node 1
probe_start nn21 "$(node_ip 1)" node 2
probe_start api1 "$(node_ip 1)" underlay
probe_start api2 "$(node_ip 2)" underlay

# The longest gaps around node N between FROM and TO (ms).
gaps() {
    local n=$1 from=$2 to=$3 pp nn
    pp=$(( $(probe_gap pp12 "$from" "$to") > $(probe_gap pp21 "$from" "$to") ? $(probe_gap pp12 "$from" "$to") : $(probe_gap pp21 "$from" "$to") ))
    nn=$(( $(probe_gap nn12 "$from" "$to") > $(probe_gap nn21 "$from" "$to") ? $(probe_gap nn12 "$from" "$to") : $(probe_gap nn21 "$from" "$to") ))
    echo "pod->pod ${pp} ms, node->node ${nn} ms, API server side->node $(probe_gap "api$n" "$from" "$to") ms"
}
# A process of the agent's (or ovs) container, as the node sees it: "pid start-time".
# shellcheck disable=SC2016 # expanded by the node's shell
daemon_id() { in_node "$1" sh -c 'p=$(pgrep -x "$0") && echo "$p $(cut -d" " -f22 /proc/$p/stat)"' "$2"; }
container_pid() { ctr_in "$1" tasks ls | awk -v id="$(container_id "$1" "$2")" '$1 == id {print $2}'; }
restarts() { pod_status "$1" | jq --arg c "$2" '.containerStatuses[] | select(.name == $c) | .restartCount'; }
_restarted_and_ready() {
    pod_status "$1" | jq -e --arg c "$2" --argjson r "$3" \
        '.containerStatuses[] | select(.name == $c) | .restartCount > $r and .state == "running" and .ready' >/dev/null
}
traffic_ok() {
    tcp_ok "$(pod_ip 2 1)" in_pod 1 1 && tcp_ok "$(pod_ip 1 1)" in_pod 2 1
}

# --- the probes under idle connections ----------------------------------------
# 8 connections that never send a request, then kubelet's probe with its 3 s
# timeout (4 such connections used to starve /healthz for 8 s).
out=$(in_node 1 python3 -c '
import socket, time, urllib.request
idle = [socket.create_connection(("127.0.0.1", 9474)) for _ in range(8)]
t = time.monotonic()
r = urllib.request.urlopen("http://127.0.0.1:9474/healthz", timeout=3)
print(r.status, int((time.monotonic() - t) * 1000))') || fail "node 1: /healthz did not answer within 3 s with 8 idle connections open"
[ "${out% *}" = 200 ] || fail "node 1: /healthz with 8 idle connections open: $out"
echo "  node 1: /healthz answered in ${out#* } ms with 8 idle connections open"
pass "the agent's probes answer while idle connections hold the metrics port"

# --- the agent container: exit, crash, kill -9, liveness restart --------------
# Two ways per node: kubelet's crash-loop back-off is per container (0 s, then 10 s).
agent_exit() {
    local n=$1 how=$2 before vs0 t0 t1 pid
    before=$(restarts "$n" kovs-agent)
    vs0=$(daemon_id "$n" ovs-vswitchd)
    pid=$(container_pid "$n" kovs-agent)
    t0=$(ms_now)
    case $how in
        exit) in_node "$n" kill -TERM "$pid" ;;
        crash) in_node "$n" kill -ABRT "$pid" ;;
        kill-9) in_node "$n" kill -KILL "$pid" ;;
        liveness) in_node "$n" kill -STOP "$pid" ;;
    esac
    wait_for "node $n's agent to be restarted and ready ($how)" 180 _restarted_and_ready "$n" kovs-agent "$before" ||
        fail "node $n: the agent did not come back after $how"
    wait_for "node $n to be ready after the agent's $how" 60 node_ready "$n" || fail "node $n not ready after $how"
    t1=$(ms_now)
    [ "$how" != liveness ] || grep -q 'Killing container kovs-agent .*failed liveness probe' "$(kubelet_dir "$n")/kubelet.log" ||
        fail "node $n: no liveness kill in the runner's log"
    [ "$(daemon_id "$n" ovs-vswitchd)" = "$vs0" ] ||
        fail "node $n: ovs-vswitchd did not survive the agent container's $how (was $vs0, now $(daemon_id "$n" ovs-vswitchd))"
    traffic_ok || fail "pod traffic broken after node $n's agent $how"
    echo "  node $n, agent container $how: back in $(( (t1 - t0) / 1000 )) s; gaps: $(gaps "$n" "$t0" "$t1") (target <= 1000 ms)"
}
agent_exit 1 exit
agent_exit 2 crash
agent_exit 1 kill-9
agent_exit 2 liveness
pass "the agent container exited, crashed, was killed -9 and was restarted for liveness: ovs-vswitchd ran on, traffic carried on"

# --- the ovs container killed -9 -------------------------------------------------
vs0=$(daemon_id 1 ovs-vswitchd)
before=$(restarts 1 ovs)
t0=$(ms_now)
in_node 1 kill -KILL "$(container_pid 1 ovs)"
wait_for "node 1's ovs container to be restarted" 60 _restarted_and_ready 1 ovs "$before" || fail "the ovs container did not come back"
wait_for "node 1 to be ready after its ovs container's kill -9" 90 node_ready 1 || fail "node 1 not ready after the ovs container's kill -9"
wait_for "pod traffic across node 1 again" 60 traffic_ok || fail "pod traffic did not come back after the ovs container's kill -9"
t1=$(ms_now)
[ "$(daemon_id 1 ovs-vswitchd)" != "$vs0" ] || fail "ovs-vswitchd survived its own container's kill -9?"
in_node 1 ip -4 -br addr show br-phy | grep -qF "$(node_ip 1)/16" || fail "node 1's address left br-phy"
echo "  node 1, ovs container kill -9: back in $(( (t1 - t0) / 1000 )) s; gaps: $(gaps 1 "$t0" "$t1") (the datapath itself restarted)"
pass "the ovs container killed -9: its daemons died with it (cgroup), came back, the agent re-programmed them"

# --- rollouts: a new image, then kovs-kind load ------------------------------------
rollout_report() {
    local what=$1 n del gone ready
    while read -r n del gone ready; do
        echo "  $what, node $n: old pod gone after $(( gone - del )) ms, new pod Ready $(( ready - gone )) ms later; gaps: $(gaps "$n" "$del" "$(( ready + 1000 ))") (target <= 3000 ms)"
    done < "$CLUSTER_DIR/rollout.log"
}
# Each node's kubelet learnt its new pod from the API server, over its own
# network, after its old pod had ended.
learnt_over_the_network() {
    local n=$1 since=$2
    awk -v ip="$(node_ip "$n")" -v since="$since" '$2 == ip && $0 ~ /GET \/api\/v1\/pods\?fieldSelector=spec.nodeName%3Dnode/ && $0 ~ / 200 / && $1 >= since {f = 1} END {exit !f}' \
        "$(api_dir)/requests.log"
}
rolled() {
    local what=$1 image=$2 n del gone ready
    [ "$(wc -l < "$CLUSTER_DIR/rollout.log")" -eq 2 ] || fail "$what: the rollout did not reach every node"
    while read -r n del gone ready; do
        img=$(ctr_in "$n" containers info "$(container_id "$n" kovs-agent)" | jq -r .Image)
        [ "$img" = "docker.io/library/$image" ] || fail "$what: node $n's agent runs $img, not $image"
        learnt_over_the_network "$n" "$(date -d "@$(( gone / 1000 ))" +%H:%M:%S)" ||
            fail "$what: node $n's kubelet did not list its pods from the API server after its old pod ended"
        wait_for "node $n to be ready after the $what" 60 node_ready "$n" || fail "node $n not ready after the $what"
    done < "$CLUSTER_DIR/rollout.log"
    wait_for "pod traffic after the $what" 30 traffic_ok || fail "pod traffic broken after the $what"
}
image_derive kovs:rollout
for n in 1 2; do image_load "$n" kovs:rollout; done
ds_set_image kovs:rollout
ds_rollout || fail "the rollout to kovs:rollout did not complete"
rolled "rollout to kovs:rollout" kovs:rollout
rollout_report "rollout to a new image"
pass "a rollout to a new image completed, one node at a time; each node's kubelet fetched its new pod through the API server"

ds_set_image "$KOVS_IMAGE"
kind_load || fail "kovs-kind load: the rollout did not complete"
rolled "kovs-kind load" "$KOVS_IMAGE"
rollout_report "kovs-kind load"
pass "kovs-kind load: rebuilt, loaded, restarted; every node stayed on the network"

# --- cleanup and uninstall: the node's own addressing comes back ----------------
original() {
    local n=$1 mac
    in_node "$n" ip -4 -br addr show eth0 | grep -qF "$(node_ip "$n")/16" || { echo "eth0 lacks $(node_ip "$n")/16"; return 1; }
    ! in_node "$n" ip -4 -br addr show br-phy 2>/dev/null | grep -qF "$(node_ip "$n")" || { echo "br-phy still has the node IP"; return 1; }
    in_node "$n" ip route show default | grep -q 'via 172.18.0.1 dev eth0' || { echo "no default route via eth0: $(in_node "$n" ip route)"; return 1; }
    mac=$(in_node "$n" cat /sys/class/net/eth0/address)
    [ "$mac" = "${mac0[$n]}" ] || { echo "eth0's MAC is $mac, Docker gave it ${mac0[$n]}"; return 1; }
    ! in_node "$n" ip link show kovs-shim >/dev/null 2>&1 || { echo "kovs-shim is still there"; return 1; }
    ping_ok "$(node_ip "$n")" in_underlay || { echo "the Docker host side cannot reach $(node_ip "$n")"; return 1; }
    ping_ok "$API_ADDR" in_node "$n" || { echo "node $n cannot reach the API server"; return 1; }
}
in_agent 1 kovs-agent --config /etc/kovs/agent.yaml --cleanup >/dev/null 2>&1 || fail "kovs-agent --cleanup failed on node 1"
out=$(original 1) || fail "node 1 after kovs-agent --cleanup: $out"
pass "kovs-agent --cleanup: node 1 has eth0's address, default route and MAC back, and is reachable"

t0=$(ms_now)
ds_uninstall || fail "uninstall: a kovs pod did not end"
t1=$(ms_now)
for n in 1 2; do out=$(original "$n") || fail "node $n after the uninstall: $out"; done
echo "  uninstall: every kovs pod ended in $(( t1 - t0 )) ms; node->node gap $(probe_gap nn12 "$t0" "$(( t1 + 1000 ))") ms, API server side->node 2 $(probe_gap api2 "$t0" "$(( t1 + 1000 ))") ms"
pass "the DaemonSet deleted: every node has its original addressing on eth0 and is reachable"

left=$(kovs_leftovers 2)   # kind-node-lifecycle.sh
[ -n "$left" ] || fail "node 2 has nothing of kovs left after the DaemonSet alone was deleted: the check below could not see a leftover"
echo "  left on node 2 by deleting the DaemonSet alone: $(tr '\n' ',' <<<"$left")"
t0=$(ms_now)
kind_uninstall || fail "kovs-kind uninstall failed"
t1=$(ms_now)
for n in 1 2; do
    left=$(kovs_leftovers "$n")
    [ -z "$left" ] || fail "node $n after kovs-kind uninstall still has: $(tr '\n' ',' <<<"$left")"
    out=$(original "$n") || fail "node $n after kovs-kind uninstall: $out"
done
echo "  kovs-kind uninstall: $(( t1 - t0 )) ms"
pass "kovs-kind uninstall: nothing of kovs is left on any node (links, table ip kovs, CNI files, directories, drop-ins, routes), and eth0 is as Docker made it"

echo "$checks passed, 0 failed"
