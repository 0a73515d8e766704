#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Policy logging's cost (issue 48, item 3) on a real one-node cluster whose
# agent takes Pods and NetworkPolicies from the stand-in API server: a client
# pod floods a server pod with TCP SYNs to a port its NetworkPolicy denies,
# each from a new source port (every one a new connection, denied and, with
# the annotation, logged), for KOVS_BENCH_FLOOD_SECONDS, in two arms:
#
#   unlogged  the policy without kovs.dev/log: the agent's CPU at rest under the flood;
#   logged    kovs.dev/log: deny: the drop flows send to the agent through
#             br-int's meter (networkPolicy.logRate, default 100 pkt/s).
#
# Printed: the SYNs sent a second, the packets a second that reached the
# agent (its packet-in count) and that the meter dropped, the log entries
# made, and the agent's CPU (utime + stime from /proc, over the flood) in
# each arm; target: <= 5 % of a core under the flood with logging on.
#
#   KOVS_BENCH_FLOOD_SECONDS  seconds per arm (default 10)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../../cluster/lib/kube-api.sh
source "$root/tests/cluster/lib/kube-api.sh"

seconds=${KOVS_BENCH_FLOOD_SECONDS:-10}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "KOVS_BENCH_FLOOD_SECONDS: expected a positive number, got '$seconds'"
need_netns_provider "the stand-in API server in the underlay namespace"
echo "policy logging: the agent under a flood of denied new connections, with and without kovs.dev/log"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

cluster_up 1
pod_add 1 1; pod_add 1 2
pod_object() {   # pod_object INDEX NAME ROLE
    jq -nc --arg name "$2" --arg ip "$(pod_ip 1 "$1")" --arg role "$3" '{
        metadata: {name: $name, namespace: "bench", labels: {role: $role}},
        spec: {nodeName: "node1", containers: [{name: "c"}]},
        status: {phase: "Running", podIP: $ip, podIPs: [{ip: $ip}]}}'
}
kube_api_up "$CLUSTER_DIR/peers.yaml"
kube_api POST /api/v1/namespaces '{"metadata": {"name": "bench"}}' >/dev/null
kube_api POST /api/v1/namespaces/bench/pods "$(pod_object 1 client client)" >/dev/null
kube_api POST /api/v1/namespaces/bench/pods "$(pod_object 2 server server)" >/dev/null
agent_stop 1; use_kubernetes_source 1; agent_start 1
wait_for "node 1 ready with NetworkPolicy from the API" 60 node_ready 1 || { node_debug 1; exit 1; }

status_of() { node_kovsctl 1 status --json; }
# The server takes TCP 80 from the client; the flood goes to 81: dropped at the
# isolated server (no rule allows it), logged when annotated.
policy() {   # policy ANNOTATIONS_JSON
    jq -nc --argjson a "$1" '{metadata: {name: "web", namespace: "bench", annotations: $a},
        spec: {podSelector: {matchLabels: {role: "server"}}, policyTypes: ["Ingress"],
               ingress: [{from: [{podSelector: {matchLabels: {role: "client"}}}], ports: [{protocol: "TCP", port: 80}]}]}}'
}
kube_api POST /apis/networking.k8s.io/v1/namespaces/bench/networkpolicies "$(policy '{}')" >/dev/null
enforced() {   # enforced LOGGED: the policy compiled, and the drop flows (un)logged on the bridge
    status_of | jq -e --argjson logged "$1" '.networkPolicy.policies == 1 and .flows.upToDate and
        ((.policyLog.loggedFlows > 0) == $logged)' >/dev/null
}
wait_for "the policy enforced" 30 enforced false || { status_of | jq '{p: .networkPolicy, l: .policyLog}'; exit 1; }
wait_for "the policy log's meter set" 30 sh -c "$(printf '%q ' "$KOVS_BIN/kovsctl") --config $(node_dir 1)/agent.yaml status --json | jq -e .policyLog.meterSet >/dev/null" ||
    { status_of | jq .policyLog; exit 1; }

server=$(pod_ip 1 2)
agent_pid=$(cat "$(node_dir 1)/agent.pid")
vswitchd_pid=$(cat "$(node_dir 1)/run/ovs-vswitchd.pid")
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# SYNs from a raw socket in the client pod, source ports cycling through 30000: every one a new connection.
flood() {
    in_pod 1 1 python3 - "$server" "$seconds" <<'PY'
import socket, struct, sys, time
dst, secs = sys.argv[1], float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
n, end = 0, time.time() + secs
while time.time() < end:
    for _ in range(256):
        s.sendto(struct.pack('!HHIIBBHHH', 20000 + n % 30000, 81, n, 0, 0x50, 0x02, 1024, 0, 0), (dst, 0))
        n += 1
print(n)
PY
}
meter_dropped() { in_node 1 ovs-ofctl -O OpenFlow13 meter-stats br-int 2>/dev/null | grep -o 'packet_count:[0-9]*' | head -1 | cut -d: -f2; }
arm() {   # arm NAME: one flood, its figures on one line
    local before_a before_v before_in before_e before_d sent a v pin e d
    before_a=$(ticks "$agent_pid"); before_v=$(ticks "$vswitchd_pid")
    before_in=$(status_of | jq '.policyLog.packetIns'); before_e=$(status_of | jq '.policyLog.entries')
    before_d=$(meter_dropped); before_d=${before_d:-0}
    sent=$(flood)
    a=$(( $(ticks "$agent_pid") - before_a )); v=$(( $(ticks "$vswitchd_pid") - before_v ))
    sleep 1   # the packet-ins still queued
    pin=$(( $(status_of | jq '.policyLog.packetIns') - before_in )); e=$(( $(status_of | jq '.policyLog.entries') - before_e ))
    d=$(meter_dropped); d=$(( ${d:-0} - before_d ))
    agent_pct=$(echo "$a * 100 / $hz / $seconds" | bc -l)
    printf '  %-9s %7.0f SYN/s sent; to the agent %6.1f pkt/s, meter dropped %7.0f pkt/s, %5d entries; agent CPU %5.2f %% of a core, vswitchd %5.1f %%\n' \
        "$1" "$(echo "$sent / $seconds" | bc -l)" "$(echo "$pin / $seconds" | bc -l)" "$(echo "$d / $seconds" | bc -l)" "$e" \
        "$agent_pct" "$(echo "$v * 100 / $hz / $seconds" | bc -l)"
}
echo "flood: ${seconds} s of TCP SYNs to a denied port (each a new connection), client pod -> server pod on one node"
arm unlogged
kube_api PUT /apis/networking.k8s.io/v1/namespaces/bench/networkpolicies/web "$(policy '{"kovs.dev/log": "deny"}')" >/dev/null
wait_for "the drop flows logged" 30 enforced true || { status_of | jq '{p: .networkPolicy, l: .policyLog}'; exit 1; }
rate=$(status_of | jq '.policyLog.meter.ratePktps')
arm logged
echo "the last entries (kovsctl policy log):"
node_kovsctl 1 policy log | tail -3 | sed 's/^/  /'
printf 'agent CPU under a denied flood: %.2f %% of a core (target <= 5 %%: %s), meter %s pkt/s\n' "$agent_pct" \
    "$([ "$(echo "$agent_pct <= 5" | bc -l)" = 1 ] && echo met || echo MISSED)" "$rate"
