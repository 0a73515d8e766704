#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# kovs-agent footprint at idle with 100 peers (issue 6): VmRSS and CPU
# (utime+stime over an idle window) of every agent, next to the targets
# (<= 10 MiB RSS, <= 0.5 % of a core), with ovs-vswitchd and ovsdb-server as
# context. Measured twice in one run, once per peer source:
#
#  file        peers from the peers file (context: tests, non-Kubernetes use).
#  kubernetes  the same agents restarted with peers from the Kubernetes API,
#              as in a kind cluster, which is what the target is stated for:
#              kube_api_mock.py in the underlay namespace serves a NodeList
#              of the same peers over HTTPS (self-signed certificate, bearer
#              token), then a chunked watch carrying a bookmark every few
#              seconds. The agent then initialises TLS and parses the list,
#              which the file source never does.
#  policy      the same again, the API also holding 1000 Pods (shaped like
#              kind's, managedFields included) over the nodes in 50
#              namespaces, 200 NetworkPolicies, and (served as if the policy
#              API's CRDs were installed) 50 AdminNetworkPolicies and the
#              BaselineAdminNetworkPolicy, which the agents list and watch to
#              enforce them (target <= 12 MiB, issues 25 and 48).
#
# The peer list holds 3 real nodes and 97 fake ones. The fakes are addresses
# on one namespace plugged into the underlay bridge, so they answer ARP: each
# agent resolves all 99 peers, programs their OVS routes and tunnel
# neighbours, and settles into the idle state a real 100-node cluster has
# (periodic resyncs only). A fake that never answered would keep the tunnel
# reconciler in its retry back-off instead, which is not idle.
#
#   KOVS_BENCH_FOOTPRINT_NODES    real nodes (default 3)
#   KOVS_BENCH_FOOTPRINT_PEERS    peers in the list (default 100, at most 250)
#   KOVS_BENCH_FOOTPRINT_SECONDS  idle window (default 30: one full 30 s resync falls inside)
#   KOVS_BENCH_FOOTPRINT_SOURCES  phases to measure: "file", "kubernetes", "policy" or several
#                                 (default "file kubernetes policy"; always run in that order)
#   KOVS_BENCH_FOOTPRINT_ANPS     AdminNetworkPolicies in the policy phase (default 50; 0: no
#                                 policy API served, as on a cluster without its CRDs: the
#                                 phase as it was before issue 48, for comparison)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../../cluster/lib/kube-api.sh
source "$root/tests/cluster/lib/kube-api.sh"

nodes=${KOVS_BENCH_FOOTPRINT_NODES:-3}
peers=${KOVS_BENCH_FOOTPRINT_PEERS:-100}
window=${KOVS_BENCH_FOOTPRINT_SECONDS:-30}
anps=${KOVS_BENCH_FOOTPRINT_ANPS:-50}
[[ $nodes =~ ^[1-9]$ ]] || die "KOVS_BENCH_FOOTPRINT_NODES: expected 1-9, got '$nodes'"
if ! [[ $peers =~ ^[0-9]+$ ]] || (( peers < nodes || peers > 250 )); then
    die "KOVS_BENCH_FOOTPRINT_PEERS: expected $nodes-250, got '$peers'"
fi
if ! [[ $window =~ ^[0-9]+$ ]] || (( window < 5 )); then
    die "KOVS_BENCH_FOOTPRINT_SECONDS: expected at least 5, got '$window'"
fi
if ! [[ $anps =~ ^[0-9]+$ ]] || (( anps > 1000 )); then
    die "KOVS_BENCH_FOOTPRINT_ANPS: expected 0-1000, got '$anps'"
fi
sources=${KOVS_BENCH_FOOTPRINT_SOURCES:-file kubernetes policy}
declare -A measure=()
read -ra words <<<"$sources"
for s in "${words[@]}"; do
    [[ $s == file || $s == kubernetes || $s == policy ]] ||
        die "KOVS_BENCH_FOOTPRINT_SOURCES: '$s' is not a phase (expected 'file', 'kubernetes', 'policy' or several, got '$sources')"
    [ -z "${measure[$s]:-}" ] || die "KOVS_BENCH_FOOTPRINT_SOURCES: '$s' given twice in '$sources'"
    measure[$s]=1
done
phases=()
for s in file kubernetes policy; do [ -z "${measure[$s]:-}" ] || phases+=("$s"); done
if [ -n "${measure[kubernetes]:-}${measure[policy]:-}" ]; then
    for tool in python3 openssl; do
        command -v "$tool" >/dev/null ||
            die "$tool not found: the kubernetes phase needs it for the mock API server (KOVS_BENCH_FOOTPRINT_SOURCES=file skips that phase)"
    done
fi

# The fake nodes node$((nodes+1))..node$peers: their node IPs on one namespace
# behind the underlay bridge. Only the netns provider has an underlay
# namespace to plug it into.
fakes_ns() { echo "$CLUSTER_PREFIX-fakes"; }
fakes_up() {
    local first=$1 last=$2 n
    (( first <= last )) || return 0
    ip netns add "$(fakes_ns)"
    ip -n "$(fakes_ns)" link set lo up
    in_underlay ip link add veth-fakes type veth peer name eth0 netns "$(fakes_ns)"
    in_underlay ip link set veth-fakes master kind up
    for n in $(seq "$first" "$last"); do echo "addr add $(node_ip "$n")/16 dev eth0"; done | ip -n "$(fakes_ns)" -batch -
    ip -n "$(fakes_ns)" link set eth0 up
}

# CPU of the whole process (all threads) in clock ticks: "self" is utime +
# stime, "children" is cutime + cstime of the children it waited for (the
# agent runs ovs-ofctl for flow installs). The command name is in
# parentheses and may hold spaces: cut after the last ')'.
cpu_ticks() {
    local stat f
    stat=$(< "/proc/$1/stat")
    read -ra f <<<"${stat##*) }"
    echo "$(( f[11] + f[12] )) $(( f[13] + f[14] ))"
}
verdict() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo met; else echo MISSED; fi; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
mib() { echo "$1 / 1024" | bc -l; }
percent() { echo "scale=6; $1 * 100 / $hz / (($w1 - $w0) / 1000000000)" | bc -l; }
pid_of() {
    case $1 in
    kovs-agent) cat "$(node_dir "$2")/agent.pid" ;;
    *) cat "$(node_dir "$2")/run/$1.pid" ;;
    esac
}
# RSS of PID by what is mapped (file name, [heap], [anon], [stack]) in KiB,
# largest first, on one line: where an agent's memory is.
rss_by_mapping() {
    awk '$1 ~ /^[0-9a-f]+-[0-9a-f]+$/ { n = NF >= 6 ? $NF : "[anon]"; sub(/.*\//, "", n); next }
         $1 == "Rss:" { kib[n] += $2 }
         END { for (m in kib) if (kib[m] >= 8) printf "%d %s\n", kib[m], m }' "/proc/$1/smaps" |
        sort -rn | awk '{ printf "%s%s %d", (NR > 1 ? ", " : ""), $2, $1 } END { print "" }'
}
# The agent's own counters of work it did, from /metrics; empty when the
# agent does not answer.
activity() {
    agent_metrics "$1" 2>/dev/null |
        awk '/^kovs_tunnel_commands_total /{c=$2} /^kovs_ovsdb_transactions_total /{t=$2}
             /^kovs_bridge_repairs_total |^kovs_gateway_restores_total /{r+=$2} /^kovs_flow_installs_total /{f=$2}
             END {if (NR) printf "%d %d %d %d\n", c, t, r, f}' || true
}

need_netns_provider "the fake peers' namespace on the underlay bridge"
echo "kovs-agent footprint at idle: $peers peers ($nodes real nodes + $(( peers - nodes )) fakes answering ARP), peers from: ${phases[*]}"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

cluster_up "$nodes"
real_nodes=$nodes
fakes_up $(( nodes + 1 )) "$peers"
t0=$(date +%s%N)
CLUSTER_NODES=$peers   # write_peers and node_ready count the fakes as nodes
write_peers
for n in $(seq 1 "$real_nodes"); do
    wait_for "node $n to program $(( peers - 1 )) peers" 90 node_ready "$n" || { node_debug "$n"; exit 1; }
done
printf 'all %d agents ready, %d peers each with OVS route and tunnel neighbour, %.1f s after the peers file changed\n' \
    "$real_nodes" $(( peers - 1 )) "$(( ($(date +%s%N) - t0) / 1000000 ))e-3"

procs=(kovs-agent ovs-vswitchd ovsdb-server)
hz=$(getconf CLK_TCK)
rows=() work=() mappings=()
# One idle window with the agents' current peer source; appends a heading
# and the table rows to rows, the agents' own counters of work to work.
measure_idle() {
    local source=$1 heading=$2 limit=${3:-10} n p pid self0 child0 self1 child1 self child rss target a0 a1 c0 x0 r0 f0 c1 x1 r1 f1 api
    local -A before act_before api_before
    # Let the burst of programming finish (replies, the first status polls), then measure.
    sleep 2
    for n in $(seq 1 "$real_nodes"); do
        for p in "${procs[@]}"; do before[$p/$n]=$(cpu_ticks "$(pid_of "$p" "$n")"); done
        act_before[$n]=$(activity "$n")
        if [ "$source" != file ]; then api_before[$n]=$(api_requests "$n"); fi
    done
    w0=$(date +%s%N)
    echo "idle window ($source source): ${window} s"
    sleep "$window"
    w1=$(date +%s%N)

    rows+=("-- $heading")
    for p in "${procs[@]}"; do
        for n in $(seq 1 "$real_nodes"); do
            pid=$(pid_of "$p" "$n")
            read -r self0 child0 <<<"${before[$p/$n]}"
            read -r self1 child1 <<<"$(cpu_ticks "$pid")"
            self=$(percent $(( self1 - self0 ))) child=$(percent $(( child1 - child0 )))
            rss=$(status_kib "$pid" VmRSS)
            target="(context)"
            if [ "$p" = kovs-agent ]; then
                target="RSS <= $limit MiB: $(verdict "$rss <= $limit * 1024"), CPU <= 0.5 %: $(verdict "$self + $child <= 0.5")"
                if [ "$source" = file ]; then target+=" (peers file, context)"; fi
            fi
            rows+=("$(printf '%-13s %-6s %7.1f %6.1f %6.1f %7.1f %8.3f %9.3f   %s' "$p" "node$n" "$(mib "$rss")" \
                "$(mib "$(status_kib "$pid" RssAnon)")" "$(mib "$(status_kib "$pid" RssFile)")" \
                "$(mib "$(status_kib "$pid" VmHWM)")" "$self" "$child" "$target")")
        done
    done

    pid=$(pid_of kovs-agent 1)
    mappings+=("-- $heading" "  PSS $(awk '$1 == "Pss:" {print $2}' "/proc/$pid/smaps_rollup") KiB; RSS: $(rss_by_mapping "$pid")")
    work+=("-- $heading")
    for n in $(seq 1 "$real_nodes"); do
        a0=${act_before[$n]} a1=$(activity "$n")
        api=""
        if [ "$source" != file ]; then api=", $(( $(api_requests "$n") - api_before[$n] )) API requests"; fi
        if [ -z "$a0" ] || [ -z "$a1" ]; then work+=("  node$n: metrics not reachable$api"); continue; fi
        read -r c0 x0 r0 f0 <<<"$a0"; read -r c1 x1 r1 f1 <<<"$a1"
        work+=("  node$n: $(( c1 - c0 )) / $(( x1 - x0 )) / $(( r1 - r0 )) / $(( f1 - f0 ))$api")
    done
}

if [ -n "${measure[file]:-}" ]; then
    measure_idle file "peers from the file ($peers peers): context"
fi

# Every agent restarted on the mock API server's kubeconfig, and waited for
# (ready, and it listed the Nodes from the API).
agents_on_api() {
    local n
    for n in $(seq 1 "$real_nodes"); do
        agent_stop "$n" TERM
        use_kubernetes_source "$n"
        agent_start "$n"
    done
    for n in $(seq 1 "$real_nodes"); do
        wait_for "node $n $1" 90 node_ready "$n" || { node_debug "$n"; exit 1; }
        api_listed "$n" || { tail -20 "$(api_dir)/requests.log" >&2; die "node $n is ready but never listed the nodes from the mock API server"; }
    done
}

if [ -n "${measure[kubernetes]:-}" ]; then
    kube_api_up
    list_kib=$(( $(cat "$(api_dir)/ready") / 1024 ))
    echo "mock API server: https://$api_addr:$api_port in the underlay namespace, NodeList of $peers nodes shaped like kind's: $list_kib KiB"
    t0=$(date +%s%N)
    agents_on_api "to program $(( peers - 1 )) peers from the API"
    printf 'all %d agents restarted with peers from the API and ready, %d peers each, %.1f s after the restart\n' \
        "$real_nodes" $(( peers - 1 )) "$(( ($(date +%s%N) - t0) / 1000000 ))e-3"
    measure_idle kubernetes "peers from the Kubernetes API ($peers nodes, HTTPS, $list_kib KiB NodeList, then a watch): the target, as kind users run it"
fi

# 1000 Pods over the nodes in 50 namespaces, 200 NetworkPolicies selecting
# some of them; $anps AdminNetworkPolicies (namespace and pod subjects; Allow,
# Deny and Pass rules over namespaces, pods, networks and nodes with port
# numbers, ranges and named ports: bench_policy's shapes) and, with any, the
# BaselineAdminNetworkPolicy.
policy_objects() {
    python3 - "$peers" "$anps" <<'PY'
import json, sys
peers, anps = int(sys.argv[1]), int(sys.argv[2])
envs = ["prod", "staging", "dev"]  # the admin tiers' subjects (left out without them: the phase as it was)
out = [{"kind": "Namespace", "metadata": {"name": f"ns{n}", "labels": {"team": f"t{n % 5}", **({"env": envs[n % 3]} if anps else {})}}}
       for n in range(50)]
for i in range(1000):
    node = i % peers + 1
    ip = f"10.244.{node}.{i // peers + 2}"
    out.append({"kind": "Pod", "metadata": {"name": f"pod{i}", "namespace": f"ns{i % 50}",
                "labels": {"app": f"a{i % 20}", "tier": ["fe", "be", "db"][i % 3], "pod-template-hash": "5d8f7c9b6d"}},
                "spec": {"nodeName": f"node{node}", "containers": [{"name": "app", "image": "registry.k8s.io/e2e-test-images/agnhost:2.47",
                         "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}] +
                                  # the admin rules' named port (left out without them: the phase as it was)
                                  ([{"name": "metrics", "containerPort": 9000 + i % 4, "protocol": "TCP"}] if anps else [])}]},
                "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}})
for k in range(200):
    spec = {"podSelector": {"matchLabels": {"app": f"a{k % 20}"}},
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": f"t{k % 5}"}},
                                   "podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]}}],
                         "ports": [{"protocol": "TCP", "port": "http"}]}]}
    if k % 2:
        spec["policyTypes"] = ["Ingress", "Egress"]
        spec["egress"] = [{"to": [{"podSelector": {"matchLabels": {"tier": "db"}}}], "ports": [{"protocol": "TCP", "port": 5432}]}]
    out.append({"kind": "NetworkPolicy", "metadata": {"name": f"p{k}", "namespace": f"ns{k % 50}"}, "spec": spec})


def labels(key, value):
    return {"matchLabels": {key: value}}


def team(t):
    return f"t{t % 5}"


actions = ["Allow", "Deny", "Pass"]
for k in range(anps):
    env = labels("env", envs[k // 2 % 3])
    subject = ({"pods": {"namespaceSelector": env, "podSelector": labels("tier", ["fe", "be", "db"][k // 2 % 3])}} if k % 2
               else {"namespaces": env})
    ingress = [{"name": "from-team", "action": actions[k % 3], "from": [{"namespaces": labels("team", team(k + 1))}],
                "ports": [{"portNumber": {"protocol": "TCP", "port": 8080}}]},
               {"name": "from-frontends", "action": actions[(k + 1) % 3],
                "from": [{"pods": {"namespaceSelector": labels("env", envs[(k + 1) % 3]),
                                   "podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}]}}}],
                "ports": [{"namedPort": "metrics"}]}]
    egress = [{"name": "to-databases", "action": actions[(k + 2) % 3],
               "to": [{"pods": {"namespaceSelector": labels("team", team(k + 2)), "podSelector": labels("tier", "db")}}],
               "ports": [{"portRange": {"protocol": "TCP", "start": 5432, "end": 5439}}]}]
    if k % 5 == 0:
        egress.append({"name": "no-private-networks", "action": "Deny", "to": [{"networks": ["192.168.0.0/16", "172.16.0.0/12"]}]})
    if k % 10 == 1:
        egress.append({"name": "to-kubelets", "action": "Allow", "to": [{"nodes": labels("kubernetes.io/os", "linux")}],
                       "ports": [{"portNumber": {"protocol": "TCP", "port": 10250}}]})
    out.append({"kind": "AdminNetworkPolicy", "metadata": {"name": f"anp{k}"},
                "spec": {"priority": 20 * k % 1000, "subject": subject, "ingress": ingress, "egress": egress}})
if anps:
    out.append({"kind": "BaselineAdminNetworkPolicy", "metadata": {"name": "default"}, "spec": {
        "subject": {"namespaces": {}},
        "ingress": [{"name": "allow-monitoring", "action": "Allow", "from": [{"namespaces": labels("team", "t0")}],
                     "ports": [{"namedPort": "metrics"}]},
                    {"name": "deny-cluster", "action": "Deny", "from": [{"namespaces": {}}]}],
        "egress": [{"name": "allow-dns", "action": "Allow",
                    "to": [{"pods": {"namespaceSelector": labels("kubernetes.io/metadata.name", "ns0"), "podSelector": labels("app", "a0")}}],
                    "ports": [{"portNumber": {"protocol": "UDP", "port": 53}}, {"portNumber": {"protocol": "TCP", "port": 53}}]},
                   {"name": "deny-internet", "action": "Deny", "to": [{"networks": ["0.0.0.0/0"]}]}]}})
print(json.dumps(out))
PY
}

if [ -n "${measure[policy]:-}" ]; then
    policy_objects > "$CLUSTER_DIR/policy-objects.json"
    kube_api_down
    admin_api=() admin_what=""
    if (( anps > 0 )); then
        admin_api=(--admin-network-policy) admin_what=", $anps AdminNetworkPolicies and a BaselineAdminNetworkPolicy"
    fi
    kube_api_up "$CLUSTER_DIR/peers.yaml" --preload "$CLUSTER_DIR/policy-objects.json" "${admin_api[@]}"
    t0=$(date +%s%N)
    agents_on_api "ready with the peers, pods and policies from the API"
    rules=$(in_node 1 "$KOVS_BIN/kovsctl" --config "$(node_dir 1)/agent.yaml" status --json | jq -r '.networkPolicy |
        "\(.pods) pods, \(.policies) policies, \(.admin.policies) ANPs (baseline: \(.admin.baseline)); \(.rules) NetworkPolicy and \(.admin.rules) admin rules for its own pods, compiled in \(.lastCompileSeconds * 1000 | floor) ms"')
    printf 'all %d agents restarted with 1000 pods, 200 policies%s in the API and ready, %.1f s after the restart; node1: %s\n' \
        "$real_nodes" "$admin_what" "$(( ($(date +%s%N) - t0) / 1000000 ))e-3" "$rules"
    measure_idle policy "peers, 1000 Pods, 200 NetworkPolicies$admin_what from the Kubernetes API: the target with NetworkPolicy" 12
fi

echo
echo "RSS = anon (the process's own memory) + file (mapped binaries and shared libraries, shared with"
echo "other processes using them). CPU in % of one core over the window: self (all threads) and the"
echo "children it ran (ovs-ofctl); 1 clock tick = $(printf '%.3f' "$(echo "100 / $hz / $window" | bc -l)") % over ${window} s."
printf '%-13s %-6s %7s %6s %6s %7s %8s %9s   %s\n' process node "RSS MiB" anon file "peak" "CPU self" "children" target
printf '%s\n' "${rows[@]}"

echo
echo "node1's kovs-agent by mapping, KiB: RSS counts a file-backed page in full in every process that maps it,"
echo "PSS divides it among them (ovs-vswitchd maps libc, libstdc++, libssl and more too)."
printf '%s\n' "${mappings[@]}"

echo
echo "agent work during the idle window (unixctl commands / OVSDB transactions / reconciles / flow installs):"
printf '%s\n' "${work[@]}"
