#!/usr/bin/env bash
# 50 pods through containerd on the kind-node provider (2 nodes, 25 pods each):
# half are started at once, then the second half is started while the first
# is deleted (ADD and DEL in parallel), then the rest is deleted. Every pod
# answers on the network while it lives; containerd's CNI client calls DEL
# exactly once per pod, when it stops; and afterwards nothing is left: no pod
# veth, no kovs-cni OVS port, no IPAM lease, no libcni cache entry, and no
# conntrack entry of a pod address but those the kernel expires by itself.
export KOVS_PROVIDER=kind-node
# Without kovs-kind up's smoke test (kind_node runs it): its pods leave DNS and
# ping conntrack entries (30 s UDP timeout) on addresses the churn's pods are
# handed again, which the leak check below would count as theirs.
export KOVS_KIND_SMOKE=0
source "$(dirname "$0")/lib.sh"
per_node=${KOVS_CHURN_PODS_PER_NODE:-25}
half=$(( per_node / 2 ))

cluster_up 2
ports_before=()
for n in 1 2; do ports_before[n]=$(in_agent "$n" ovs-vsctl list-ports br-int | sort | tr '\n' ' '); done

start_pods() { local from=$1 to=$2 n p; for n in 1 2; do for p in $(seq "$from" "$to"); do pod_start "$n" "$p"; done; done; }
wait_pods() {
    local from=$1 to=$2 n p
    for n in 1 2; do for p in $(seq "$from" "$to"); do
        wait_for "pod $n/$p to run with its network" 120 _pod_added "$n" "$p" || fail "pod $n/$p never ran: $(tail -3 "$(node_dir "$n")/pod-$p.ctr.log")"
        in_node "$n" jq '.result' "/var/lib/cni/results/kovs-k8s.io-pod-$n-$p-eth0" > "$(node_dir "$n")/pod-$p.result"
    done; done
}
# Each pod's own workload (busybox httpd on :8000) answers its node and the other node.
answer_pods() {
    local from=$1 to=$2 n p ip
    for n in 1 2; do for p in $(seq "$from" "$to"); do
        ip=$(pod_ip "$n" "$p")
        wait_for "pod $n/$p ($ip) to answer HTTP from its node" 30 in_node "$n" curl -sf -o /dev/null --max-time 2 "http://$ip:8000/" ||
            fail "pod $n/$p does not answer from its node"
        in_node $(( 3 - n )) curl -sf -o /dev/null --max-time 2 "http://$ip:8000/" || fail "pod $n/$p does not answer from the other node"
    done; done
}
# Not a bare `wait`: this shell's children include the private dockerd.
stop_pods() {
    local from=$1 to=$2 n p pids=()
    for n in 1 2; do for p in $(seq "$from" "$to"); do pod_stop "$n" "$p" & pids+=($!); done; done
    wait "${pids[@]}"
}
gone_pods() {
    local from=$1 to=$2 n p
    for n in 1 2; do for p in $(seq "$from" "$to"); do
        wait_for "pod $n/$p to be removed" 120 _pod_gone "$n" "$p" || fail "pod $n/$p was not removed"
    done; done
}

t0=$(ms_now)
start_pods 1 "$half"; wait_pods 1 "$half"
answer_pods 1 "$half"
t1=$(ms_now)
stop_pods 1 "$half" & stopper=$!
start_pods $(( half + 1 )) "$per_node"
wait "$stopper"
wait_pods $(( half + 1 )) "$per_node"; gone_pods 1 "$half"
answer_pods $(( half + 1 )) "$per_node"
t2=$(ms_now)
ips=$(for n in 1 2; do for p in $(seq 1 "$per_node"); do pod_ip "$n" "$p"; done; done)
[ "$(sort -u <<<"$ips" | wc -l)" -eq $(( 2 * per_node )) ] || fail "pod addresses are not unique: $(sort <<<"$ips" | uniq -d | tr '\n' ' ')"
stop_pods $(( half + 1 )) "$per_node"; gone_pods $(( half + 1 )) "$per_node"
t3=$(ms_now)
pass "$(( 2 * per_node )) pods through containerd, each answering both nodes; ADD of $(( 2 * (per_node - half) )) in parallel with DEL of $(( 2 * half )) (phases $(( (t1 - t0) / 1000 ))s, $(( (t2 - t1) / 1000 ))s, $(( (t3 - t2) / 1000 ))s)"

for n in 1 2; do
    log=$(in_node "$n" cat /var/log/kovs/cni.log)
    for p in $(seq 1 "$per_node"); do
        adds=$(grep -c "ADD k8s.io-pod-$n-$p/eth0" <<<"$log" || true)
        dels=$(grep -c "DEL k8s.io-pod-$n-$p/eth0" <<<"$log" || true)
        if [ "$adds" != 1 ] || [ "$dels" != 1 ]; then fail "pod $n/$p: $adds CNI ADDs and $dels DELs, expected one each"; fi
    done
done
pass "containerd called CNI ADD once and DEL once per pod"

for n in 1 2; do
    veths=$(in_node "$n" ip -o link show type veth | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep -E '^kovs[0-9a-f]{11}$' || true)
    [ -z "$veths" ] || fail "node $n: pod veths left: $veths"
    ports=$(in_agent "$n" ovs-vsctl --bare --columns=name find Interface external_ids:kovs-owner=kovs-cni)
    [ -z "$ports" ] || fail "node $n: kovs-cni OVS ports left: $ports"
    [ "$(in_agent "$n" ovs-vsctl list-ports br-int | sort | tr '\n' ' ')" = "${ports_before[n]}" ] ||
        fail "node $n: br-int ports $(in_agent "$n" ovs-vsctl list-ports br-int | tr '\n' ' ') differ from before the churn: ${ports_before[n]}"
    leases=$(in_node "$n" ls /var/lib/cni/networks/kovs | grep -vx -e last_reserved_ip.0 -e lock || true)
    [ -z "$leases" ] || fail "node $n: IPAM leases left: $leases"
    cache=$(in_node "$n" ls /var/lib/cni/results | grep '^kovs-k8s.io-pod-' || true)
    [ -z "$cache" ] || fail "node $n: libcni cache entries left: $cache"
    ct=$(in_node "$n" conntrack -L 2>/dev/null | grep -E "(src|dst)=10\.244\.[12]\.([2-9]|[1-9][0-9]) " || true)
    expiring=$(grep -c ' TIME_WAIT ' <<<"$ct" || true)
    others=$(grep -v ' TIME_WAIT ' <<<"$ct" | sed '/^$/d' || true)
    [ -z "$others" ] || fail "node $n: conntrack entries of deleted pods:
$others"
    echo "  node $n: $expiring TIME_WAIT conntrack entries of closed connections to the pods (the kernel expires them)"
done
pass "nothing left: no pod veth, no kovs-cni OVS port, no IPAM lease, no libcni cache entry, no live conntrack entry"

echo "$checks passed, 0 failed"
