#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# NetworkPolicy's and the admin tiers' cost and speed on a real two-node
# cluster whose agents take Pods, NetworkPolicies and AdminNetworkPolicies
# from the stand-in API server (issues 25 and 48):
#
#   throughput   pod -> pod TCP across the nodes (iperf3), one pair, three
#                arms measured alike:
#                  none  no policy of any kind;
#                  100   100 NetworkPolicies selecting the pair (each allowing
#                        the client on the iperf3 port, so every one is
#                        realized on both nodes); target >= 0.95x none;
#                  anp   100 AdminNetworkPolicy rules selecting the pair: 7
#                        ANPs of 14 rules each (Allow, Deny and Pass on other
#                        ports and to other networks: in the tables of both
#                        nodes, deciding nothing for the pair), then one at a
#                        late priority that allows the pair on the iperf3
#                        port, so a new connection walks the whole ANP table
#                        first; target >= 0.95x none.
#                One warm-up run (not counted), then rounds of the three arms
#                in rotating order (none 100 anp, 100 anp none, anp none 100,
#                ...): every arm takes every position alike, and every run
#                follows a change of arm (the objects created or deleted and
#                both nodes enforcing them), so no arm gets the quiet runs.
#                Median and spread of each arm's runs.
#   enforcement  a policy added, and a pod's label changed: from the API event
#                (the stand-in API server's commit of the write) to the
#                moment the last node's new table took effect (the flow
#                job's own clock, flows.lastInstallUnixMs, read once both
#                nodes have it); p50 / p99 over KOVS_BENCH_POLICY_CHANGES
#                changes of each kind; target p99 <= 100 ms. Also printed:
#                the same from before the client's write (curl and TLS).
#
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted)
#   KOVS_BENCH_THROUGHPUT_REPEATS  rounds of the three arms (default 3, CI's profile; 9 with KOVS_PROFILE=full)
#   KOVS_BENCH_POLICY_CHANGES      (default 20)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../../cluster/lib/kube-api.sh
source "$root/tests/cluster/lib/kube-api.sh"

KOVS_BENCH_THROUGHPUT_REPEATS=${KOVS_BENCH_THROUGHPUT_REPEATS:-$([ "${KOVS_PROFILE:-ci}" = full ] && echo 9 || echo 3)}
throughput_knobs
changes=${KOVS_BENCH_POLICY_CHANGES:-20}
[[ $changes =~ ^[1-9][0-9]*$ ]] || die "KOVS_BENCH_POLICY_CHANGES: expected a positive number, got '$changes'"
need_netns_provider "the stand-in API server in the underlay namespace"
echo "NetworkPolicy and AdminNetworkPolicy: pod -> pod throughput with 100 policies, with 100 ANP rules and with none; time to enforce a change"
echo "build: $(build_description)"
echo "machine: $(machine_description)"

cluster_up 2
pod_add 1 1; pod_add 2 1
pod_object() {   # pod_object N NAME
    jq -nc --arg name "$2" --arg node "node$1" --arg ip "$(pod_ip "$1" 1)" --arg role "$([ "$1" = 1 ] && echo client || echo server)" '{
        metadata: {name: $name, namespace: "bench", labels: {role: $role, app: "iperf"}},
        spec: {nodeName: $node, containers: [{name: "iperf", ports: [{name: "iperf", containerPort: 5201, protocol: "TCP"}]}]},
        status: {phase: "Running", podIP: $ip, podIPs: [{ip: $ip}]}}'
}
# Serving the policy API's kinds, as a cluster with their CRDs installed.
kube_api_up "$CLUSTER_DIR/peers.yaml" --admin-network-policy
kube_api POST /api/v1/namespaces '{"metadata": {"name": "bench", "labels": {"team": "perf"}}}' >/dev/null
kube_api POST /api/v1/namespaces/bench/pods "$(pod_object 1 client)" >/dev/null
kube_api POST /api/v1/namespaces/bench/pods "$(pod_object 2 server)" >/dev/null
for n in 1 2; do
    agent_stop "$n"; use_kubernetes_source "$n"; agent_start "$n"
done
for n in 1 2; do wait_for "node $n ready with NetworkPolicy from the API" 60 node_ready "$n" || { node_debug "$n"; exit 1; }; done

status_of() { in_node "$1" "$KOVS_BIN/kovsctl" --config "$(node_dir "$1")/agent.yaml" status --json; }
# policy K: selects both pods (ingress of the server from the client, egress of the client to it).
policy() {
    jq -nc --arg name "p$1" '{metadata: {name: $name, namespace: "bench"}, spec: {podSelector: {matchLabels: {app: "iperf"}},
        policyTypes: ["Ingress", "Egress"],
        ingress: [{from: [{podSelector: {matchLabels: {role: "client"}}}], ports: [{protocol: "TCP", port: "iperf"}]}],
        egress: [{to: [{podSelector: {matchLabels: {role: "server"}}}], ports: [{protocol: "TCP", port: 5201}]}]}}'
}
# The 100 ANP rules: ANPs a0..a6 (priorities 10..70) of 7 ingress and 7
# egress rules each, every action, subject the bench namespace (both pods);
# their peers are the pair's pods and other networks, their ports are not
# the iperf3 port, so they are realized on both nodes and decide nothing for
# the pair. Then a-allow-iperf at priority 900 allows the pair on it: a new
# connection of the pair is decided by the last of the ANP table's rules.
admin_policy() {
    jq -nc --arg name "a$1" --argjson k "$1" '
        def action($j): ["Deny", "Pass", "Allow"][($k + $j) % 3];
        {metadata: {name: $name}, spec: {priority: (10 + 10 * $k), subject: {namespaces: {matchLabels: {"kubernetes.io/metadata.name": "bench"}}},
         ingress: [range(7) as $j | {name: "in-\($j)", action: action($j),
             from: [if $j % 2 == 0 then {namespaces: {matchLabels: {team: "perf"}}}
                    else {pods: {namespaceSelector: {}, podSelector: {matchLabels: {role: "client"}}}} end],
             ports: [if $j == 6 then {portRange: {protocol: "TCP", start: (6000 + 100 * $k), end: (6099 + 100 * $k)}}
                     else {portNumber: {protocol: (if $j % 3 == 2 then "UDP" else "TCP" end), port: (6000 + 100 * $k + $j)}} end]}],
         egress: [range(7) as $j | {name: "out-\($j)", action: action($j + 1)} +
             if $j < 3 then {to: [{networks: ["192.168.\(10 * $k + $j).0/24"]}]}
             else {to: [{pods: {namespaceSelector: {matchLabels: {team: "perf"}}, podSelector: {matchLabels: {role: "server"}}}}],
                   ports: [{portNumber: {protocol: "TCP", port: (7000 + 100 * $k + $j)}}]} end]}}'
}
admin_allow() {
    jq -nc '{metadata: {name: "a-allow-iperf"}, spec: {priority: 900, subject: {namespaces: {matchLabels: {"kubernetes.io/metadata.name": "bench"}}},
        ingress: [{name: "iperf-in", action: "Allow", from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {role: "client"}}}}],
                   ports: [{portNumber: {protocol: "TCP", port: 5201}}]}],
        egress: [{name: "iperf-out", action: "Allow", to: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {role: "server"}}}}],
                  ports: [{portNumber: {protocol: "TCP", port: 5201}}]}]}}'
}
admin_filler=7 admin_rules=100
policy_api=/apis/policy.networking.k8s.io/v1alpha1
synced() {   # synced N POLICIES ANP_RULES: node N compiled that many policies and admin rules and its table is on the bridge
    status_of "$1" | jq -e --argjson want "$2" --argjson admin "${3:-0}" \
        '.networkPolicy.policies == $want and .networkPolicy.admin.rules == $admin and .flows.upToDate' >/dev/null
}
# Up to 8 API writes at once (each one curl, its TLS handshake and a
# connection of its own): a change of arm in seconds, not tens of them.
writes=()
api_write() {   # api_write METHOD PATH [JSON]: in the background
    kube_api "$@" >/dev/null &
    writes+=("$!")
    if (( ${#writes[@]} >= 8 )); then wait "${writes[0]}" || die "kube_api $1 $2 failed"; writes=("${writes[@]:1}"); fi
}
api_writes_done() { local p; for p in "${writes[@]}"; do wait "$p" || die "an API write failed"; done; writes=(); }
# set_arm none|100|anp: exactly that arm's objects in the API, both nodes enforcing them.
set_arm() {
    local np=0 anp=0 rules=0 have k n
    case $1 in 100) np=100 ;; anp) anp=$admin_filler rules=$admin_rules ;; none) ;; *) die "set_arm: no arm '$1'" ;; esac
    have=$(kube_api GET /apis/networking.k8s.io/v1/networkpolicies | jq '.items | length')
    for (( k = have; k < np; k++ )); do api_write POST /apis/networking.k8s.io/v1/namespaces/bench/networkpolicies "$(policy "$k")"; done
    for (( k = np; k < have; k++ )); do api_write DELETE "/apis/networking.k8s.io/v1/namespaces/bench/networkpolicies/p$k"; done
    # (From the list: the stand-in API server serves no GET of one admin policy.)
    local anps allow
    anps=$(kube_api GET "$policy_api/adminnetworkpolicies")
    have=$(jq '[.items[] | select(.metadata.name != "a-allow-iperf")] | length' <<<"$anps")
    allow=$(jq '[.items[] | select(.metadata.name == "a-allow-iperf")] | length' <<<"$anps")
    for (( k = have; k < anp; k++ )); do api_write POST "$policy_api/adminnetworkpolicies" "$(admin_policy "$k")"; done
    for (( k = anp; k < have; k++ )); do api_write DELETE "$policy_api/adminnetworkpolicies/a$k"; done
    if (( anp > 0 && allow == 0 )); then
        api_write POST "$policy_api/adminnetworkpolicies" "$(admin_allow)"
    elif (( anp == 0 && allow == 1 )); then
        api_write DELETE "$policy_api/adminnetworkpolicies/a-allow-iperf"
    fi
    api_writes_done
    for n in 1 2; do
        wait_for "node $n to enforce arm $1 ($np policies, $rules ANP rules)" 60 synced "$n" "$np" "$rules" ||
            { status_of "$n" | jq '{p: .networkPolicy, f: .flows.upToDate}'; exit 1; }
    done
}
set_policies() { set_arm "$([ "$1" = 0 ] && echo none || echo 100)"; }

in_pod 2 1 iperf3 -s -D --logfile "$(node_dir 2)/log/iperf3-server.log"
wait_for "iperf3 server in pod 2/1" 10 port_listening 5201 in_pod 2 1
measure() {
    local out
    out=$(in_pod 1 1 iperf3 -c "$(pod_ip 2 1)" -t "$seconds" -O 1 -J 2>&1) || die "iperf3 pod 1/1 -> 2/1 failed: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || echo "$out")"
    jq -r '"\(.end.sum_received.bits_per_second / 1e9) \(.end.sum_sent.retransmits)"' <<<"$out"
}
arms=(none 100 anp)
declare -A gbps=() switch_s=()
echo "iperf3 ${seconds} s per run (after 1 s omitted), $repeats rounds of the ${#arms[@]} arms in rotating order, after one warm-up run"
set_arm anp
read -r g retr <<<"$(measure)"
printf '  warm-up %-5s %6.2f Gbit/s (%s retr.; not counted)\n' anp "$g" "$retr"
for i in $(seq 1 "$repeats"); do
    order=()
    for (( k = 0; k < ${#arms[@]}; k++ )); do order+=("${arms[(k + i - 1) % ${#arms[@]}]}"); done
    for arm in "${order[@]}"; do
        t0=$(date +%s%N)
        set_arm "$arm"
        switch_s[$arm]+=" $(( ($(date +%s%N) - t0) / 1000000 ))e-3"
        read -r g retr <<<"$(measure)"
        gbps[$arm]+=" $g"
        printf '  run %d %-5s %6.2f Gbit/s (%s retr.)\n' "$i" "$arm" "$g" "$retr"
        # What node 1 realized for the arm, once (after its first run: not in what is measured).
        case $arm in
        100) [ -n "${rules:-}" ] || { rules=$(status_of 1 | jq -r '.networkPolicy.rules')
                flows=$(in_node 1 ovs-ofctl dump-flows br-int 2>/dev/null | grep -c 'table=2[25],' || true); } ;;
        anp) [ -n "${admin:-}" ] || { admin=$(status_of 1 | jq -r '.networkPolicy.admin.rules')
                admin_flows=$(in_node 1 ovs-ofctl dump-flows br-int 2>/dev/null | grep -c 'table=2[14],' || true); } ;;
        esac
    done
done
# shellcheck disable=SC2086
none=$(median ${gbps[none]}) with=$(median ${gbps[100]}) with_anp=$(median ${gbps[anp]})
# shellcheck disable=SC2086
printf 'no policy:     %s Gbit/s median (min-max) of %d runs\n100 policies:  %s Gbit/s  (node 1: %s rules, %s flows in tables 22/25)\n100 ANP rules: %s Gbit/s  (node 1: %s admin rules, %s flows in tables 21/24)\n' \
    "$(spread ${gbps[none]})" "$repeats" "$(spread ${gbps[100]})" "$rules" "$flows" "$(spread ${gbps[anp]})" "$admin" "$admin_flows"
# shellcheck disable=SC2086
printf 'a change of arm, until both nodes enforced it: none %s s, 100 %s s, anp %s s\n' \
    "$(spread ${switch_s[none]})" "$(spread ${switch_s[100]})" "$(spread ${switch_s[anp]})"
verdict() { [ "$(echo "$1 >= 0.95" | bc -l)" = 1 ] && echo met || echo MISSED; }
r=$(echo "$with / $none" | bc -l)
printf '100 policies / none: %.3f  (target >= 0.95: %s)\n' "$r" "$(verdict "$r")"
r=$(echo "$with_anp / $none" | bc -l)
printf '100 ANP rules / none: %.3f  (target >= 0.95: %s)\n' "$r" "$(verdict "$r")"
set_arm none

# Enforcement time: from the API event (the stand-in API server's commit of
# the write, as it wakes the watches: kube-api.sh's commits.log) until both
# nodes run the new table; and, for scale, from before the client's write
# (curl's start in the underlay, its TLS handshake and the server's request
# handling included: what a user's `kubectl apply` adds on top).
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
enforce_ms() {   # enforce_ms WANT_POLICIES CMD...: "<from the API event> <from before CMD>" to the later of the two nodes' installs
    local want=$1 t0 n last=0 at reply rv committed; shift
    local -a before=()
    for n in 1 2; do before[n]=$(status_of "$n" | jq '.networkPolicy.compiles'); done
    t0=$(ms_now)
    reply=$("$@")
    rv=$(jq -r '.metadata.resourceVersion' <<<"$reply")
    committed=$(awk -v rv="$rv" '$1 == rv {print $2}' "$(api_dir)/commits.log")
    [[ $committed =~ ^[0-9]+$ ]] || die "no commit time for resourceVersion '$rv' in $(api_dir)/commits.log"
    for n in 1 2; do
        until status_of "$n" | jq -e --argjson b "${before[n]}" --argjson want "$want" \
                '.networkPolicy.compiles > $b and .networkPolicy.policies == $want and .flows.upToDate' >/dev/null; do
            (( $(ms_now) - t0 < 10000 )) || die "node $n did not enforce the change within 10 s"
            # The figure is the agent's own clock, not this loop's: polling
            # without a pause only takes the 2 cores from what is measured.
            sleep 0.05
        done
        at=$(status_of "$n" | jq '.flows.lastInstallUnixMs')
        (( at > last )) && last=$at
    done
    (( last >= committed )) || { for n in 1 2; do status_of "$n" | jq -c "{f: .flows, p: .networkPolicy}" >&2; done; die "no node installed a new table for the change (last install at $last, the API event at $committed)"; }
    echo "$(( last - committed )) $(( last - t0 ))"
}
percentile() { sort -n | awk -v q="$1" '{v[NR] = $1} END {i = int(q * NR + 0.999); if (i < 1) i = 1; print v[i]}'; }
set_policies 0
added=() relabelled=()
for k in $(seq 1 "$changes"); do
    added+=("$(enforce_ms 1 kube_api POST /apis/networking.k8s.io/v1/namespaces/bench/networkpolicies "$(policy 0)")")
    # The client in and out of the server's ingress rule: each relabel changes both nodes' tables.
    role=$([ $((k % 2)) = 1 ] && echo client-renamed || echo client)
    relabelled+=("$(enforce_ms 1 kube_api PATCH /api/v1/namespaces/bench/pods/client "{\"metadata\":{\"labels\":{\"role\":\"$role\"}}}")")
    kube_api DELETE /apis/networking.k8s.io/v1/namespaces/bench/networkpolicies/p0 >/dev/null
    for n in 1 2; do wait_for "node $n without policies" 20 synced "$n" 0; done
done
for what in added relabelled; do
    declare -n list=$what
    p50=$(printf '%s\n' "${list[@]}" | cut -d' ' -f1 | percentile 0.5); p99=$(printf '%s\n' "${list[@]}" | cut -d' ' -f1 | percentile 0.99)
    c50=$(printf '%s\n' "${list[@]}" | cut -d' ' -f2 | percentile 0.5); c99=$(printf '%s\n' "${list[@]}" | cut -d' ' -f2 | percentile 0.99)
    printf '%-22s -> enforced on both nodes: p50 %d ms, p99 %d ms over %d (target p99 <= 100 ms: %s); from before the client'"'"'s write: p50 %d ms, p99 %d ms\n' \
        "$([ "$what" = added ] && echo "a policy added" || echo "a pod's label changed")" "$p50" "$p99" \
        "${#list[@]}" "$([ "$p99" -le 100 ] && echo met || echo MISSED)" "$c50" "$c99"
done
echo "(from the API event, the stand-in API server's commit as it wakes the watches, to the flow job's clock when the table took effect)"
