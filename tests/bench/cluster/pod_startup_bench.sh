#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Pod startup through containerd on the kind-node provider (2 nodes): time from
# `ctr run --cni` to the pod's own workload answering HTTP from its node, for 1
# pod at a time and for a burst of pods started at once on every node, with
# kovs's conflist and then, in the same run on the same nodes and containerd,
# with the reference `bridge` plugin + host-local. Prints p50/p99 of each and
# the ratio kovs / bridge (target: <= 1.5x at p99; never asserted). Also
# prints, per node, the time from the node container's start to its agent
# being ready, and to the first TCP exchange between pods on different nodes.
#
#   KOVS_BENCH_STARTUP_SINGLE   sequential single-pod starts per node (default 10)
#   KOVS_BENCH_STARTUP_BURST    pods started at once per node (default 20)
#   KOVS_BENCH_STARTUP_ROUNDS   bursts per plugin (default 2)
export KOVS_PROVIDER=kind-node
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
single=${KOVS_BENCH_STARTUP_SINGLE:-10} burst=${KOVS_BENCH_STARTUP_BURST:-20} rounds=${KOVS_BENCH_STARTUP_ROUNDS:-2}
for v in single burst rounds; do [[ ${!v} =~ ^[1-9][0-9]?$ ]] || die "KOVS_BENCH_STARTUP_${v^^}: expected 1-99, got '${!v}'"; done

echo "pod startup through containerd (ctr run --cni): kovs vs the reference bridge plugin, same nodes, same run"
echo "build: $(build_description)"
echo "machine: $(machine_description)"
cluster_up 2

# --- node start -> agent ready -> first cross-node pod traffic -------------------
started_ms() { date -d "$(dk inspect -f '{{.State.StartedAt}}' "$(node_container "$1")")" +%s%3N; }
for n in 1 2; do
    read -r runner init ready < <(pod_status "$n" | jq -r '[.startedAt, .initContainerStatuses[0].lastExit.finishedAtUnix,
        (.containerStatuses[] | select(.name == "kovs-agent") | .readyAtUnix)] | map(. * 1000 | floor) | @tsv')
    start=$(started_ms "$n")
    printf 'node %d: node start -> agent ready %.1f s  (-> kubelet runner %.1f s, after the image loads; -> init container done %.1f s; -> agent ready %.1f s)\n' \
        "$n" "$(( ready - start ))e-3" "$(( runner - start ))e-3" "$(( init - runner ))e-3" "$(( ready - init ))e-3"
done
pod_add 1 1; pod_add 2 1
in_pod 2 1 socat TCP-LISTEN:7000,fork,reuseaddr SYSTEM:'wc -c' >/dev/null 2>&1 &
cross_ok() { [ "$(echo x | in_pod 1 1 timeout 2 socat -t1 - "TCP:$(pod_ip 2 1):7000" 2>/dev/null | tr -d ' \n')" = 2 ]; }
wait_for "the first TCP exchange between pods on node 1 and node 2" 60 cross_ok || die "no TCP between pods across nodes"
printf 'node start (node 2) -> first cross-node pod TCP exchange: %.1f s (pods created once the agents were ready)\n' \
    "$(( $(date +%s%3N) - $(started_ms 2) ))e-3"
pod_del 1 1; pod_del 2 1

# --- pod startup -----------------------------------------------------------------
# Runs in the node, so no docker exec sits between ctr run and the clock: starts
# COUNT pods at once, each timed from its ctr run to its HTTP answer from the
# node; prints one millisecond figure per pod.
# shellcheck disable=SC2016 # the node's shell expands it
probe='
net=$1 count=$2 tag=$3 image=$4
one() {
    local id=$tag-$1 t0 ip="" cache
    cache=/var/lib/cni/results/$net-k8s.io-$id-eth0
    t0=$(date +%s%N)
    ctr --namespace k8s.io run --rm --cni --null-io "$image" "$id" >/dev/null 2>&1 &
    local deadline=$(( $(date +%s) + 90 ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        [ -n "$ip" ] || ip=$(jq -r ".result.ips[0].address // empty" "$cache" 2>/dev/null | cut -d/ -f1)
        if [ -n "$ip" ] && curl -sf -o /dev/null --max-time 1 "http://$ip:8000/"; then
            echo $(( ($(date +%s%N) - t0) / 1000000 )); break
        fi
        sleep 0.01
    done
    ctr --namespace k8s.io tasks kill --signal SIGKILL "$id" >/dev/null 2>&1
}
for i in $(seq "$count"); do one "$i" & done
wait
# ctr run --rm is gone once the DEL is done: the next batch starts clean.
while ctr --namespace k8s.io containers ls -q | grep -q "^$tag-"; do sleep 0.1; done
'
measure() {
    local net=$1 count=$2 tag=$3 n out=() pids=()
    for n in 1 2; do
        in_node "$n" bash -c "$probe" probe "$net" "$count" "$tag-$n" "docker.io/library/$KOVS_POD_IMAGE" > "$CLUSTER_DIR/probe-$n.out" &
        pids+=($!)
    done
    wait "${pids[@]}"   # not a bare wait: the private dockerd is a child of this shell
    for n in 1 2; do
        mapfile -t out < "$CLUSTER_DIR/probe-$n.out"
        [ "${#out[@]}" -eq "$count" ] || die "node $n: $(( count - ${#out[@]} )) of $count pods ($net) never answered"
        printf '%s\n' "${out[@]}"
    done
}
# Nearest-rank percentile of the numbers on stdin.
pct() { sort -n | awk -v p="$1" '{v[NR] = $1} END {i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i]}'; }
run_plugin() {
    local net=$1 label=$2 i r samples=""
    for i in $(seq "$single"); do samples+=$(measure "$net" 1 "s$i")$'\n'; done
    res[$label/single]=$samples
    samples=""
    for r in $(seq "$rounds"); do samples+=$(measure "$net" "$burst" "b$r")$'\n'; done
    res[$label/burst]=$samples
}
declare -A res=()
run_plugin kovs kovs

# The reference: Debian's bridge plugin with host-local, a subnet of its own,
# in a conflist that sorts first (ctr uses the first), and bridge in /opt/cni/bin
# for this phase only (kind does not ship it).
for n in 1 2; do
    in_node "$n" install -m 0755 /usr/lib/cni/bridge /opt/cni/bin/bridge
    in_node "$n" sh -c 'cat > /etc/cni/net.d/05-bridge-ref.conflist' <<JSON
{"cniVersion": "1.0.0", "name": "bridge-ref", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.250.$n.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
done
run_plugin bridge-ref bridge
for n in 1 2; do in_node "$n" rm -f /etc/cni/net.d/05-bridge-ref.conflist /opt/cni/bin/bridge; done

echo
printf '%-30s %8s %9s %9s\n' "ctr run -> pod answers (ms)" samples p50 p99
for kind in single burst; do
    for plugin in kovs bridge; do
        s=$(sed '/^$/d' <<<"${res[$plugin/$kind]}")
        printf '%-30s %8d %9d %9d\n' "$plugin, $( [ $kind = single ] && echo "1 pod at a time" || echo "$burst at once per node")" \
            "$(wc -l <<<"$s")" "$(pct 50 <<<"$s")" "$(pct 99 <<<"$s")"
    done
done
echo
for kind in single burst; do
    k=$(sed '/^$/d' <<<"${res[kovs/$kind]}") b=$(sed '/^$/d' <<<"${res[bridge/$kind]}")
    ratio50=$(echo "$(pct 50 <<<"$k") / $(pct 50 <<<"$b")" | bc -l)
    ratio99=$(echo "$(pct 99 <<<"$k") / $(pct 99 <<<"$b")" | bc -l)
    verdict=MISSED; [ "$(echo "$ratio99 <= 1.5" | bc -l)" = 1 ] && verdict=met
    printf 'kovs / bridge, %-22s p50 %.2fx  p99 %.2fx  (target p99 <= 1.5x: %s)\n' \
        "$( [ $kind = single ] && echo "1 pod at a time:" || echo "$burst at once per node:")" "$ratio50" "$ratio99" "$verdict"
done
