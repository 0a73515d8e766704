#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Connection setup (the TCP_CRR shape: connect, 1 byte each way, close;
# tests/bench/connect/ConnectProbe.cpp) on a 2-node netns cluster with
# NetworkPolicy from the stand-in API server, against a kernel veth pair
# between two namespaces measured in the same run. Phases, kovs pod 1/1 ->
# pod 2/1 across nodes unless said:
#   kernel-veth     the reference: two namespaces joined by a veth pair
#   steady          sequential (1) and 8 in parallel; same-node (pod 1/1 -> 1/2) too
#   first           a new pod's first connection from CNI ADD's return, to it
#                   from pod 2/1 and from it to pod 2/1 (KOVS_BENCH_FIRST_PODS
#                   pods on node 1, half each way; default 200, CI's profile 50)
#   policy-churn    5 s while a NetworkPolicy that selects other pods of
#                   both nodes (role=other) is created and deleted every ~100 ms
#   pod-churn       5 s while pods are added and deleted through kovs-cni on both nodes;
#                   the kernel veth pair under the same churn (what its CPU alone costs)
#   agent-restart   node 2's kovs-agent stopped and started during the run
#   vswitchd-restart node 2's ovs-vswitchd killed (the agent restarts it)
# Per phase: rate, p50/p99/p999, connections over 200 ms and over 1 s (a
# lost SYN costs 1 s), failures, the longest gap between two completions.
# Targets (printed, never asserted): 0 over 1 s at steady state and under
# policy and pod churn; p99 <= 5 ms at steady state; rate >= 0.5x the kernel
# veth pair; a new pod's first connection p99 <= 50 ms; 0 failed during an
# agent restart; the vswitchd gap <= 3 s.
#
#   KOVS_BENCH_CONNECT_COUNT   connections per measured run (default 10000;
#                              CI's profile 3000)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../../cluster/lib/kube-api.sh
source "$root/tests/cluster/lib/kube-api.sh"
need_netns_provider "the connection benchmark"
count=${KOVS_BENCH_CONNECT_COUNT:-10000}
[[ $count =~ ^[1-9][0-9]{2,6}$ ]] || die "KOVS_BENCH_CONNECT_COUNT: expected 100-9999999, got '$count'"
probe=${KOVS_CONNECT_PROBE:-$KOVS_BUILD/tests/bench/kovs-connect-probe}
[ -x "$probe" ] || die "$probe not found: build tests/bench/kovs-connect-probe"
port=7000

echo "connection setup (connect + 1 byte each way + close), kovs vs a kernel veth pair, same run"
echo "build: $(build_description)"
echo "machine: $(machine_description)"
echo "$count connections per run"

cluster_up 2
# Pods 1: the measured pair; 2: same-node server on node 1; 3: the "other"
# pods the churned policy selects.
for n in 1 2; do for p in 1 2 3; do pod_add "$n" "$p"; done; done
pod_object() {
    jq -nc --arg name "$1" --arg node "$2" --arg ip "$3" --arg role "$4" '{
        metadata: {name: $name, namespace: "bench", labels: {role: $role}},
        spec: {nodeName: $node, containers: [{name: "c", image: "busybox"}]},
        status: {phase: "Running", podIP: $ip, podIPs: [{ip: $ip}]}}'
}
kube_api_up "$CLUSTER_DIR/peers.yaml" --node-shape kind
kube_api POST /api/v1/namespaces '{"metadata": {"name": "bench", "labels": {"ns": "bench"}}}' >/dev/null
for n in 1 2; do for p in 1 2 3; do
    role=measured; [ "$p" = 3 ] && role=other
    kube_api POST /api/v1/namespaces/bench/pods "$(pod_object "n$n-p$p" "node$n" "$(pod_ip "$n" "$p")" "$role")" >/dev/null
done; done
for n in 1 2; do agent_stop "$n"; use_kubernetes_source "$n"; agent_start "$n"; done
for n in 1 2; do wait_for "node $n ready with NetworkPolicy listed" 60 node_ready "$n" || { node_debug "$n"; exit 1; }; done

# The kernel reference: two namespaces and a veth pair, nothing else.
kns1=$CLUSTER_PREFIX-k1 kns2=$CLUSTER_PREFIX-k2
ip netns add "$kns1"; ip netns add "$kns2"
ip -n "$kns1" link add eth0 type veth peer name eth0 netns "$kns2"
ip -n "$kns1" addr add 10.99.0.1/24 dev eth0; ip -n "$kns2" addr add 10.99.0.2/24 dev eth0
for ns in "$kns1" "$kns2"; do ip -n "$ns" link set lo up; ip -n "$ns" link set eth0 up; done

# Every client namespace reuses TIME_WAIT ports: a run opens more
# connections in a few seconds than the ephemeral range holds at once.
for ns in "$kns1" "$(pod_ns 1 1)"; do
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_tw_reuse=1 net.ipv4.ip_local_port_range="10000 65000"
done
# Servers until cluster_down's sweep of the cluster's namespaces (disowned:
# their kill -9 is expected).
ip netns exec "$kns2" "$probe" serve "$port" & disown
ip netns exec "$(pod_ns 2 1)" "$probe" serve "$port" & disown
ip netns exec "$(pod_ns 1 2)" "$probe" serve "$port" & disown
wait_for "the kernel pair's server" 10 port_listening "$port" ip netns exec "$kns2"
wait_for "pod 2/1's server" 10 port_listening "$port" in_pod 2 1
wait_for "pod 1/2's server" 10 port_listening "$port" in_pod 1 2

declare -A result=()
# start KEY NS ADDR PARALLEL [DURATION_MS]: one measured run from namespace NS
# in the background (COUNT connections, or as many as DURATION_MS allows);
# collect KEY waits for it and prints its line.
start() {
    local key=$1 ns=$2 addr=$3 par=$4 dur=${5:-}
    ip netns exec "$ns" "$probe" connect "$addr" "$port" "$([ -n "$dur" ] && echo 1000000 || echo "$count")" "$par" 3000 \
        ${dur:+"$dur"} > "$CLUSTER_DIR/connect-$key.json" 2>&1 &
    echo $! > "$CLUSTER_DIR/connect-$key.pid"
}
collect() {
    local key=$1 out
    wait "$(cat "$CLUSTER_DIR/connect-$key.pid")" || die "$key: the probe failed: $(cat "$CLUSTER_DIR/connect-$key.json")"
    out=$(cat "$CLUSTER_DIR/connect-$key.json")
    result[$key]=$out
    jq -r --arg k "$key" '"  \($k | .[0:28] | . + " " * (28 - length)) \(.rate | floor) conn/s  p50 \(.p50_ms) p99 \(.p99_ms) p999 \(.p999_ms) max \(.max_ms) ms  >200ms \(.over_200ms)  >1s \(.over_1s)  failed \(.failures)  gap \(.max_gap_ms) ms  (\(.count))"' <<<"$out"
}
run() { start "$@"; collect "$1"; }
pod1=$(pod_ns 1 1)
echo
echo "steady state:"
run kernel-veth-seq "$kns1" 10.99.0.2 1
run kernel-veth-par8 "$kns1" 10.99.0.2 8
run steady-seq "$pod1" "$(pod_ip 2 1)" 1
run steady-par8 "$pod1" "$(pod_ip 2 1)" 8
run same-node-seq "$pod1" "$(pod_ip 1 2)" 1

# The first connection of a new pod: pods made through kovs-cni on node 1 one
# after another, each with a server listening before its ADD; from ADD's
# return to one connection completing, started at once with the kernel's own
# SYN retransmits (a first SYN lost costs a second), alternately pod 2/1 ->
# the new pod and the new pod -> pod 2/1. The client's start (ip netns exec)
# is inside the figure.
first_pods=${KOVS_BENCH_FIRST_PODS:-200}
[[ $first_pods =~ ^[1-9][0-9]{0,3}$ ]] || die "KOVS_BENCH_FIRST_PODS: expected 1-9999, got '$first_pods'"
: > "$CLUSTER_DIR/first-in"; : > "$CLUSTER_DIR/first-out"
server_ns=$(pod_ns 2 1) server_ip=$(pod_ip 2 1)
for i in $(seq 1 "$first_pods"); do
    p=$((60 + i % 20)); ns=$(pod_ns 1 "$p")
    pod_netns_add 1 "$p"
    ip netns exec "$ns" "$probe" serve "$port" & server=$!
    wait_for "pod 1/$p's server" 5 port_listening "$port" ip netns exec "$ns"
    # The clock and the new pod's address from ADD's result with bash
    # builtins (microseconds; a date or jq would add a process start).
    result=$(cni_exec ADD 1 "$p" 2>>"$(node_dir 1)/log/kovs-cni.log") || die "ADD of pod 1/$p failed: $result"
    since=${EPOCHREALTIME/./}000
    [[ $result =~ \"address\":\ *\"([0-9.]+)/ ]] || die "no IPv4 address in pod 1/$p's ADD result: $result"
    if (( i % 2 )); then
        ip netns exec "$server_ns" "$probe" first "${BASH_REMATCH[1]}" "$port" "$since" >> "$CLUSTER_DIR/first-in"
    else
        ip netns exec "$ns" "$probe" first "$server_ip" "$port" "$since" >> "$CLUSTER_DIR/first-out"
    fi
    printf '%s\n' "$result" > "$(node_dir 1)/pod-$p.result"
    kill -9 "$server"; wait "$server" 2>/dev/null || true
    pod_del 1 "$p"
done
first() {  # first in|out: its percentiles
    jq -rs 'map(.ms) | sort as $l | def pct(p): $l[((p * (length - 1)) + 0.5 | floor)]; "\(pct(0.5)) \(pct(0.99)) \($l[-1])"' \
        "$CLUSTER_DIR/first-$1" | { read -r p50 p99 max; printf 'p50 %.2f p99 %.2f max %.2f ms' "$p50" "$p99" "$max"; }
}
first_stat() { jq -s "$2" "$CLUSTER_DIR/first-$1"; }
echo "first connection of a new pod ($first_pods pods on node 1, from CNI ADD's return):"
printf '  %-28s %s  >200ms %s  >1s %s  failed %s  (%s)\n' "pod 2/1 -> new pod" "$(first in)" "$(first_stat in 'map(select(.ms > 200)) | length')" \
    "$(first_stat in 'map(select(.ms > 1000)) | length')" "$(first_stat in 'map(select(.ok | not)) | length')" "$(first_stat in length)"
printf '  %-28s %s  >200ms %s  >1s %s  failed %s  (%s)\n' "new pod -> pod 2/1" "$(first out)" "$(first_stat out 'map(select(.ms > 200)) | length')" \
    "$(first_stat out 'map(select(.ms > 1000)) | length')" "$(first_stat out 'map(select(.ok | not)) | length')" "$(first_stat out length)"

echo "under churn and restarts (8 in parallel, across nodes):"
churn_policy() {
    local spec='{"metadata":{"name":"churn","namespace":"bench"},"spec":{"podSelector":{"matchLabels":{"role":"other"}},"policyTypes":["Ingress"]}}'
    while [ ! -e "$CLUSTER_DIR/stop-churn" ]; do
        kube_api POST /apis/networking.k8s.io/v1/namespaces/bench/networkpolicies "$spec" >/dev/null 2>&1 || true
        sleep 0.1
        kube_api DELETE /apis/networking.k8s.io/v1/namespaces/bench/networkpolicies/churn >/dev/null 2>&1 || true
        sleep 0.1
        echo >> "$CLUSTER_DIR/churned"
    done
}
churn_pods() {
    local i=10
    while [ ! -e "$CLUSTER_DIR/stop-churn" ]; do
        pod_add 1 "$i" && pod_add 2 "$i" || true
        pod_del 1 "$i"; pod_del 2 "$i"
        echo >> "$CLUSTER_DIR/churned"
        i=$(( i % 40 + 10 ))
    done
}
# with_churn KEY FUNC [NS ADDR]: a 5 s run (pod 1/1 -> pod 2/1 unless NS
# and ADDR say otherwise) while FUNC churns in the background.
with_churn() {
    local key=$1 fn=$2 ns=${3:-$pod1} addr=${4:-$(pod_ip 2 1)} pid t0
    rm -f "$CLUSTER_DIR/stop-churn" "$CLUSTER_DIR/churned"
    $fn & pid=$!
    t0=$(date +%s%N)
    run "$key" "$ns" "$addr" 8 5000
    touch "$CLUSTER_DIR/stop-churn"; wait "$pid" || true
    printf '    (%s churn rounds in %.1f s)\n' "$(wc -l < "$CLUSTER_DIR/churned" 2>/dev/null || echo 0)" "$(( ($(date +%s%N) - t0) / 1000000 ))e-3"
}
with_churn policy-churn churn_policy
with_churn pod-churn churn_pods
# The kernel pair under the same pod churn: what the churn's CPU alone costs
# a connection on this machine, kovs's datapath not on the way.
with_churn pod-churn-kernel-veth churn_pods "$kns1" 10.99.0.2
# Restarts from this shell (the agent is its child), a second into a 5 s run.
start agent-restart "$pod1" "$(pod_ip 2 1)" 8 5000
sleep 1   # into the run: a pause, not a wait for state
agent_stop 2; agent_start 2
collect agent-restart
wait_for "node 2 ready after its agent restarted" 60 node_ready 2 || { node_debug 2; exit 1; }
start vswitchd-restart "$pod1" "$(pod_ip 2 1)" 8 8000
sleep 1
in_node 2 kill -9 "$(cat "$(node_dir 2)/run/ovs-vswitchd.pid")"
collect vswitchd-restart

echo
v() { jq -r ".$2" <<<"${result[$1]}"; }
verdict() { [ "$(echo "$1" | bc -l)" = 1 ] && echo met || echo MISSED; }
for k in steady-seq steady-par8 policy-churn pod-churn; do
    printf '%-16s over 1 s: %s of %s  (target 0: %s)\n' "$k" "$(v "$k" over_1s)" "$(v "$k" count)" "$(verdict "$(v "$k" over_1s) == 0 && $(v "$k" failures) == 0")"
done
printf 'steady p99: %s ms sequential, %s ms 8 in parallel  (target <= 5 ms: %s)\n' "$(v steady-seq p99_ms)" "$(v steady-par8 p99_ms)" \
    "$(verdict "$(v steady-seq p99_ms) <= 5 && $(v steady-par8 p99_ms) <= 5")"
for mode in seq par8; do
    r=$(echo "$(v "steady-$mode" rate) / $(v "kernel-veth-$mode" rate)" | bc -l)
    printf 'rate kovs / kernel veth (%s): %.3f  (target >= 0.5: %s)\n' "$mode" "$r" "$(verdict "$r >= 0.5")"
done
for dir in in out; do
    p99=$(first_stat "$dir" 'map(.ms) | sort as $l | $l[((0.99 * (length - 1)) + 0.5 | floor)]')
    failed=$(first_stat "$dir" 'map(select(.ok | not)) | length')
    printf 'new pod first connection (%s): p99 %.1f ms, %s failed  (target p99 <= 50 ms: %s)\n' \
        "$([ "$dir" = in ] && echo "to it" || echo "from it")" "$p99" "$failed" "$(verdict "$p99 <= 50 && $failed == 0")"
done
printf 'agent restart: %s failed, longest gap %s ms  (target 0 failed: %s)\n' "$(v agent-restart failures)" "$(v agent-restart max_gap_ms)" \
    "$(verdict "$(v agent-restart failures) == 0")"
printf 'vswitchd restart: %s failed, longest gap %s ms  (target <= 3000 ms: %s)\n' "$(v vswitchd-restart failures)" \
    "$(v vswitchd-restart max_gap_ms)" "$(verdict "$(v vswitchd-restart max_gap_ms) <= 3000")"
