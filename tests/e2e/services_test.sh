#!/usr/bin/env bash
# Kubernetes Services and egress on kovs standalone (issue 13): kube-proxy's
# rules (KOVS_PROXY_MODE=iptables, kind's default, or nftables; the v1.31
# rules of tests/cluster/kube_proxy_rules.py) on every node of a 3-node
# cluster, and every row of "what must work", TCP and UDP each, with the
# source address the server saw asserted:
#   ClusterIP -> pod on another node, on the same node, the client itself
#   (hairpin), hostNetwork server on another node (10.96.0.1:443 -> node:6443,
#   the API server) and on the client's node; 3 endpoints on 3 nodes (the random
#   split reaches each); NodePort from the Docker host and from another node,
#   externalTrafficPolicy Cluster and Local; hostPort through the chained
#   portmap plugin; DNS like CoreDNS (UDP and TCP 53) on another node; egress
#   to the Docker host as the node IP, pod -> pod and pod -> node as the pod IP.
# Chaos: kube-proxy's full flush and re-sync mid-transfer through a ClusterIP
# (prints the stall), and ovs-vswitchd kill -9 on the backend's node (prints
# the time until Service traffic is back).
# Every row runs and prints what it saw; the scenario fails if any row did.
# KOVS_IP_FAMILY=dual runs every row in IPv4 and again in IPv6 (kube-proxy's
# second proxier: ip6tables, or table ip6 kube-proxy, with ClusterIPs in
# fd00:10:96::/112); ipv6 runs them in IPv6 alone (issue 24). The chaos runs
# in the first family.
#
# KOVS_SERVICES_POD_NETWORK=reference (netns provider) runs the same rows on
# a known-good pod network instead of kovs, to check the test bed itself: the
# kernel VXLAN + bridge network of tests/cluster/lib/kernel-vxlan-reference.sh
# (flannel's shape), bridge with hairpinMode then portmap, and kind-masq-agent's
# egress masquerade. Every row passes there but the vswitchd one (no OVS).
source "$(dirname "$0")/lib.sh"
# shellcheck source=../cluster/lib/kube-proxy.sh
source "$root/tests/cluster/lib/kube-proxy.sh"
# shellcheck source=../cluster/lib/services.sh
source "$root/tests/cluster/lib/services.sh"
MODE=${KOVS_PROXY_MODE:-iptables}
_kp_mode "$MODE" || exit 2
POD_NETWORK=${KOVS_SERVICES_POD_NETWORK:-kovs}
echo "kube-proxy mode: $MODE; pod network: $POD_NETWORK"

kovs_pod_network_up() {
    cluster_up 3
    # The harness's conflist chains the plugins the kind manifests ship.
    chain() { jq -c '[.plugins[] | {type, capabilities}]'; }
    shipped=$(sed -n '/10-kovs.conflist: |/,/^---/p' "$root/kind/manifests/kovs.yaml" | sed '1d;$d' | chain)
    [ -n "$shipped" ] && [ "$(chain < "$(node_dir 1)/10-kovs.conflist")" = "$shipped" ] ||
        fail "the harness conflist's plugins $(chain < "$(node_dir 1)/10-kovs.conflist") are not the shipped ones: $shipped"
}

reference_pod_network_up() {
    [ "$KOVS_PROVIDER" = netns ] || { echo "the reference pod network needs the netns provider"; exit 77; }
    [ "$IP_FAMILY" = ipv4 ] || { echo "the reference pod network is IPv4 only"; exit 77; }
    # shellcheck source=../cluster/lib/kernel-vxlan-reference.sh
    source "$root/tests/cluster/lib/kernel-vxlan-reference.sh"
    CLUSTER_NODES=3
    underlay_up
    local n m
    for n in 1 2 3; do ref_node_up "$n" "$UNDERLAY_MTU"; done
    ref_connect 1 2 3
    export CNI_CONFLIST=10-ref.conflist
    for n in 1 2 3; do
        jq -n --arg dir "$(node_dir "$n")/ipam" --arg subnet "$(node_pod_cidr "$n")" --arg gw "$(node_gw_ip "$n")" \
            --argjson mtu $(( UNDERLAY_MTU - 50 )) '{cniVersion: "1.0.0", name: "kernel-vxlan-reference", plugins: [
              {type: "bridge", bridge: "cni0", isGateway: true, isDefaultGateway: true, ipMasq: false,
               hairpinMode: true, mtu: $mtu,
               ipam: {type: "host-local", dataDir: $dir, ranges: [[{subnet: $subnet, gateway: $gw}]]}},
              {type: "portmap", capabilities: {portMappings: true}}]}' > "$(node_dir "$n")/$CNI_CONFLIST"
        # kind-masq-agent's egress masquerade, keeping pod and node destinations unmasqueraded.
        in_node "$n" iptables -t nat -N KIND-MASQ-AGENT
        in_node "$n" iptables -t nat -A POSTROUTING -m addrtype ! --dst-type LOCAL -j KIND-MASQ-AGENT
        in_node "$n" iptables -t nat -A KIND-MASQ-AGENT -d 10.244.0.0/16 -j RETURN
        for m in 1 2 3; do in_node "$n" iptables -t nat -A KIND-MASQ-AGENT -d "$(node_ip "$m")" -j RETURN; done
        in_node "$n" iptables -t nat -A KIND-MASQ-AGENT -j MASQUERADE
    done
}

case $POD_NETWORK in
    kovs) kovs_pod_network_up ;;
    reference) reference_pod_network_up ;;
    *) echo "KOVS_SERVICES_POD_NETWORK=$POD_NETWORK: expected kovs or reference"; exit 2 ;;
esac
pod_add 1 1     # the client of every row
pod_add 1 2
pod_add 2 1 '[{"hostPort": 8081, "containerPort": 8080, "protocol": "tcp"},
              {"hostPort": 8081, "containerPort": 8080, "protocol": "udp"}]'
pod_add 2 2     # the DNS server
pod_add 3 1
svc_tools_install
client=pod:1:1

# kube-proxy runs one proxier per family (dual: both): each family has its
# own Services, ClusterIPs, rules and rows.
families=$(cluster_families)
fam=4   # the family (4 or 6) the helpers below speak; set per family
cluster_ip() { if [ "$fam" = 6 ]; then printf 'fd00:10:96::%x\n' "$1"; else echo "10.96.0.$1"; fi; }
addr() { place_ip "$1" "${fam#4}"; }   # addr PLACE: its address of the family
fam_tag() { [ "$fam" = 4 ] || echo "IPv6 "; }   # what a row's name starts with

# The Services, as the API server would hold them (names as on kind).
ep() { jq -cn --arg ip "$1" --arg node "node$2" --argjson host "${3:-false}" '{ip: $ip, node: $node, hostNetwork: $host}'; }
svc() {   # svc NAMESPACE NAME CLUSTER_IP PORT TARGET ENDPOINT... (TCP and UDP PORT -> TARGET)
    local ns=$1 name=$2 ip=$3 port=$4 target=$5; shift 5
    jq -cn --arg ns "$ns" --arg name "$name" --arg ip "$ip" --argjson port "$port" --argjson target "$target" \
        --argjson eps "$(jq -cs . <<<"$(printf '%s\n' "$@")")" \
        '{namespace: $ns, name: $name, clusterIP: $ip, endpoints: $eps,
          ports: [{name: "tcp", protocol: "TCP", port: $port, targetPort: $target},
                  {name: "udp", protocol: "UDP", port: $port, targetPort: $target}]}'
}
nodeport() {   # nodeport NAME CLUSTER_IP NODE_PORT POLICY ENDPOINT...
    local name=$1 ip=$2 np=$3 policy=$4; shift 4
    svc default "$name" "$ip" 80 8080 "$@" |
        jq -c --argjson np "$np" --arg p "$policy" '. + {type: "NodePort", externalTrafficPolicy: $p} | .ports[].nodePort = $np'
}
services_of_family() {   # the description of $fam's Services (NodePorts differ per family, as with a dual-stack Service's one nodePort per family proxier)
    local cidr=10.244.0.0/16
    [ "$fam" = 6 ] && cidr=fd00:10:244::/56
    {
        svc default kubernetes "$(cluster_ip 1)" 443 6443 "$(ep "$(addr node:2)" 2 true)" |
            jq -c '.ports[0].name = "https"'                                  # KUBE-SVC-NPX46M4PTMTKRN6Y
        svc default host-local "$(cluster_ip 2)" 80 6443 "$(ep "$(addr node:1)" 1 true)"
        svc default pod-remote "$(cluster_ip 11)" 80 8080 "$(ep "$(addr pod:2:1)" 2)"
        svc default pod-local "$(cluster_ip 12)" 80 8080 "$(ep "$(addr pod:1:2)" 1)"
        svc default hairpin "$(cluster_ip 13)" 80 8080 "$(ep "$(addr pod:1:1)" 1)"
        svc default spread "$(cluster_ip 14)" 80 8080 "$(ep "$(addr pod:1:2)" 1)" "$(ep "$(addr pod:2:1)" 2)" "$(ep "$(addr pod:3:1)" 3)"
        nodeport np-cluster "$(cluster_ip 15)" 30080 Cluster "$(ep "$(addr pod:2:1)" 2)"
        nodeport np-local "$(cluster_ip 16)" 30081 Local "$(ep "$(addr pod:2:1)" 2)"
        jq -cn --arg cip "$(cluster_ip 10)" --arg ip "$(addr pod:2:2)" '{namespace: "kube-system", name: "kube-dns", clusterIP: $cip,
            ports: [{name: "dns", protocol: "UDP", port: 53}, {name: "dns-tcp", protocol: "TCP", port: 53}],
            endpoints: [{ip: $ip, node: "node2"}]}'
        jq -cn --arg cip "$(cluster_ip 20)" --arg ip "$(addr pod:2:1)" '{namespace: "default", name: "iperf", clusterIP: $cip,
            ports: [{protocol: "TCP", port: 5201}], endpoints: [{ip: $ip, node: "node2"}]}'
    } | jq -s --arg cidr "$cidr" '{clusterCIDR: $cidr, services: .}'
}
rm -f "$KOVS_SERVICES" "$KOVS_SERVICES6"
for fam in $families; do
    services_of_family > "$([ "$fam" = 6 ] && echo "$KOVS_SERVICES6" || echo "$KOVS_SERVICES")"
done
for n in 1 2 3; do kube_proxy_sync "$n" "$MODE" || fail "kube-proxy $MODE sync on node $n"; done
pass "3 nodes, 5 pods (n2/p1 with hostPort 8081 through portmap), kube-proxy $MODE rules on every node (IPv${families// /, IPv})"

for n in 1 2 3; do for p in 1 2; do
    [ "$n$p" = 32 ] && continue
    [ "$n$p" = 22 ] && { dns_serve pod:2:2; continue; }
    whoami_serve "pod:$n:$p" "n$n/p$p" 8080
done; done
whoami_serve node:1 node1 6443
whoami_serve node:2 node2 6443
whoami_serve host dockerhost 9000
fam=${families%% *}   # the chaos below runs in the first family
in_pod 2 1 iperf3 -s -B "$(addr pod:2:1)" -D --logfile "$(node_dir 2)/log/iperf3-server.log"
wait_for "iperf3 server in n2/p1" 10 port_listening 5201 in_pod 2 1
pass "whoami servers in 5 places, dnsmasq in n2/p2, iperf3 in n2/p1"

# --- rows: each prints ok or FAIL with what it saw, and the scenario goes on
rows_failed=0
row_ok() { pass "$*"; }
row_fail() {
    rows_failed=$((rows_failed + 1)); echo "FAIL - $1"; shift
    local what; for what in "$@"; do [ -z "$what" ] || sed 's/^/      /' <<<"$what"; done
}

# expect_answer DESC PLACE PROTO IP:PORT NAME SEEN...: one request from PLACE
# is answered by server NAME, which saw the client as one of SEEN.
expect_answer() {
    local desc=$1 place=$2 proto=$3 to=$4 want=$5; shift 5
    local line status name seen from s
    desc="$(fam_tag)$desc"
    line=$(whoami_probe "$place" "$proto" "$to" | tail -1)
    read -r status name seen from _ <<<"$line"
    if [ "$status" = ok ] && [ "$name" = "$want" ]; then
        for s in "$@"; do [ "$seen" = "$s" ] && { row_ok "$desc ($proto: $name saw $seen)"; return 0; }; done
        row_fail "$desc ($proto)" "$name answered but saw the client as $seen, expected ${*// / or }"
        return 0
    fi
    case $status in
        ok) row_fail "$desc ($proto)" "answered by $name (saw $seen), expected $want" ;;
        wrong-source) row_fail "$desc ($proto)" "reply came from $from, expected $to (answered by $name, which saw $seen)" \
            "$(flow_conntrack "$place" "$proto" "$to")" ;;
        timeout) row_fail "$desc ($proto)" "no answer within 2 s" "$(flow_conntrack "$place" "$proto" "$to")" ;;
        *) row_fail "$desc ($proto)" "${line#error - - - }" "$(flow_conntrack "$place" "$proto" "$to")" ;;
    esac
}

# expect_silence DESC PLACE PROTO IP:PORT: nobody answers (Local policy, no local endpoint).
expect_silence() {
    local desc=$1 place=$2 proto=$3 to=$4 line
    desc="$(fam_tag)$desc"
    line=$(whoami_probe "$place" "$proto" "$to" 1 1 1 | tail -1)
    case $line in
        timeout*|error*) row_ok "$desc ($proto: no answer, as expected)" ;;
        *) row_fail "$desc ($proto)" "answered: $line" ;;
    esac
}

# Where masquerading is due, the server sees one of the entry node's own
# addresses of the family: the one on the interface the packet leaves by (gw0
# with kovs, vxlan0 or cni0 on the reference).
node_addresses() {
    if [ "$fam" = 6 ]; then
        in_node "$1" ip -6 -o addr show scope global
    else
        in_node "$1" ip -4 -o addr show
    fi | awk '$2 != "lo" {sub("/.*", "", $4); print $4}' | sort -u | tr '\n' ' '
}

# Every row of "what must work" in family $fam.
family_rows() {
    local cip node1_addrs proto out counts bad_seen failed got want_type record
    cip=$(addr pod:1:1) node1_addrs=$(node_addresses 1)
    echo "Rows over IPv$fam (client n1/p1 = $cip unless said; the server names what it saw; node 1's addresses: ${node1_addrs% }):"
    for proto in tcp udp; do
        expect_answer "ClusterIP -> pod on another node" "$client" "$proto" "$(ip_port "$(cluster_ip 11)" 80)" n2/p1 "$cip"
        expect_answer "ClusterIP -> pod on the same node" "$client" "$proto" "$(ip_port "$(cluster_ip 12)" 80)" n1/p2 "$cip"
        # shellcheck disable=SC2086 # one address per word
        expect_answer "ClusterIP -> the client itself (hairpin, masqueraded)" "$client" "$proto" "$(ip_port "$(cluster_ip 13)" 80)" n1/p1 \
            $node1_addrs
        expect_answer "ClusterIP $(ip_port "$(cluster_ip 1)" 443) -> hostNetwork on another node (API server)" "$client" "$proto" \
            "$(ip_port "$(cluster_ip 1)" 443)" node2 "$cip"
        expect_answer "ClusterIP -> hostNetwork on the client's node" "$client" "$proto" "$(ip_port "$(cluster_ip 2)" 80)" node1 "$cip"
    done

    # The random split: each of the 3 endpoints answers over 30 requests (each
    # misses all 30 with probability (2/3)^30 = 5e-6).
    for proto in tcp udp; do
        out=$(whoami_probe "$client" "$proto" "$(ip_port "$(cluster_ip 14)" 80)" 30 3)
        counts=$(awk '$1 == "ok" {print $2}' <<<"$out" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
        bad_seen=$(awk -v c="$cip" '$1 == "ok" && $3 != c {print $2 " saw " $3}' <<<"$out" | sort -u)
        failed=$(grep -cv '^ok ' <<<"$out" || true)
        if [ "$failed" -eq 0 ] && [ -z "$bad_seen" ] && [ "$(awk '$1 == "ok" {print $2}' <<<"$out" | sort -u | wc -l)" -eq 3 ]; then
            row_ok "$(fam_tag)ClusterIP with 3 endpoints on 3 nodes ($proto: 30 requests: ${counts%, })"
        else
            row_fail "$(fam_tag)ClusterIP with 3 endpoints on 3 nodes ($proto)" \
                "answers: ${counts:-none}; failures: $failed (last: $(grep -v '^ok ' <<<"$out" | tail -1))" \
                ${bad_seen:+"source not kept: $bad_seen"}
        fi
    done

    for proto in tcp udp; do
        # shellcheck disable=SC2086 # one address per word
        expect_answer "NodePort Cluster: Docker host -> node1:30080 -> pod on node 2 (masqueraded)" host "$proto" \
            "$(ip_port "$(addr node:1)" 30080)" n2/p1 $node1_addrs
        # shellcheck disable=SC2086
        expect_answer "NodePort Cluster: node 3 -> node1:30080 -> pod on node 2 (masqueraded)" node:3 "$proto" \
            "$(ip_port "$(addr node:1)" 30080)" n2/p1 $node1_addrs
        expect_answer "NodePort Local: Docker host -> node2:30081 (source kept)" host "$proto" \
            "$(ip_port "$(addr node:2)" 30081)" n2/p1 "$(addr host)"
        expect_answer "NodePort Local: node 3 -> node2:30081 (source kept)" node:3 "$proto" \
            "$(ip_port "$(addr node:2)" 30081)" n2/p1 "$(addr node:3)"
        expect_silence "NodePort Local: Docker host -> node1:30081 (no local endpoint)" host "$proto" "$(ip_port "$(addr node:1)" 30081)"
        expect_silence "NodePort Local: node 3 -> node1:30081 (no local endpoint)" node:3 "$proto" "$(ip_port "$(addr node:1)" 30081)"
        expect_answer "hostPort 8081 through portmap: Docker host -> node2 -> n2/p1" host "$proto" \
            "$(ip_port "$(addr node:2)" 8081)" n2/p1 "$(addr host)"
        expect_answer "egress: pod -> Docker host (masqueraded to the node IP)" "$client" "$proto" \
            "$(ip_port "$(addr host)" 9000)" dockerhost "$(addr node:1)"
        expect_answer "pod -> pod on another node (pod IP kept)" "$client" "$proto" "$(ip_port "$(addr pod:2:1)" 8080)" n2/p1 "$cip"
        expect_answer "pod -> hostNetwork server on another node (pod IP kept)" "$client" "$proto" \
            "$(ip_port "$(addr node:2)" 6443)" node2 "$cip"
    done

    # CoreDNS's Service on another node, asked as a pod asks it (a real
    # resolver, dig): A over IPv4, AAAA over IPv6.
    want_type=$([ "$fam" = 6 ] && echo AAAA || echo A)
    for proto in udp tcp; do
        out=$(dns_query "$client" "$(cluster_ip 10)" kubernetes.default.svc.cluster.local "$proto" "$want_type")
        got=$(awk -v t="$want_type" '$1 == "kubernetes.default.svc.cluster.local." && $4 == t {print $5}' <<<"$out")
        record="kubernetes.default.svc.cluster.local $want_type $got"
        if [ "$got" = "$(cluster_ip 1)" ] && grep -q "SERVER: $(cluster_ip 10)#53" <<<"$out"; then
            row_ok "$(fam_tag)DNS $(ip_port "$(cluster_ip 10)" 53) -> dnsmasq in n2/p2 ($proto: $record)"
        else
            row_fail "$(fam_tag)DNS $(ip_port "$(cluster_ip 10)" 53) -> dnsmasq in n2/p2 ($proto)" \
                "dig said: $(grep -iE '^;; (reply|connection|communications|no servers|SERVER|->>HEADER)' <<<"$out" | head -3)" \
                "$(flow_conntrack "$client" "$proto" "$(ip_port "$(cluster_ip 10)" 53)")"
        fi
    done
}
for fam in $families; do family_rows; done
fam=${families%% *}
cip=$(addr pod:1:1)

# --- chaos 1: kube-proxy restarts (its cleanup, then a full sync) on every node
# while a transfer runs through a ClusterIP. Established flows keep their
# conntrack entries; new connections fail until the re-sync; rules that are
# not kube-proxy's (kovs's, portmap's) are left as they were.
foreign_before=$(kube_proxy_foreign_rules 1)
in_pod 1 1 iperf3 -c "$(cluster_ip 20)" -t 8 -i 0.2 -J --connect-timeout 3000 > "$CLUSTER_DIR/iperf3-flush.json" 2>&1 &
iperf_pid=$!
t0=$(ms_now)
while (( $(ms_now) < t0 + 2000 )) && kill -0 "$iperf_pid" 2>/dev/null; do sleep 0.1; done   # 2 s into the transfer
for n in 1 2 3; do kube_proxy_flush "$n" "$MODE"; done
flushed=$(ms_now)
during=$(whoami_probe "$client" tcp "$(ip_port "$(cluster_ip 11)" 80)" 1 1 1 | tail -1)
for n in 1 2 3; do kube_proxy_sync "$n" "$MODE"; done
synced=$(ms_now)
iperf_rc=0; wait "$iperf_pid" || iperf_rc=$?
foreign_after=$(kube_proxy_foreign_rules 1)
read -r bytes secs stall < <(jq -r '[.end.sum_received.bytes // 0, .end.sum_received.seconds // 0,
    ([.intervals[]?.sum | select(.bytes == 0) | .seconds] | add // 0)] | @tsv' "$CLUSTER_DIR/iperf3-flush.json" 2>/dev/null ||
    echo "0 0 0")
echo "   rules flushed for $(( synced - flushed )) ms; new connection meanwhile: ${during%% *}"
if [ "$iperf_rc" -eq 0 ] && [ "${bytes%.*}" -gt 0 ] && ! [[ $during == ok* ]] && [ "$foreign_before" = "$foreign_after" ]; then
    last=$(jq '.intervals[-1].sum.bytes' "$CLUSTER_DIR/iperf3-flush.json")
    if [ "$last" -gt 0 ]; then
        row_ok "kube-proxy flush + re-sync mid-transfer through $(cluster_ip 20): $bytes bytes in $secs s, no bytes for ${stall} s in all, flowing at the end"
    else
        row_fail "kube-proxy flush + re-sync mid-transfer" "the transfer stopped and did not resume ($bytes bytes, stalled $stall s)"
    fi
else
    why=()
    if [ "$iperf_rc" -ne 0 ] || [ "${bytes%.*}" -eq 0 ]; then
        why+=("iperf3 through $(ip_port "$(cluster_ip 20)" 5201) (exit $iperf_rc, $bytes bytes): $(jq -r '.error // empty' "$CLUSTER_DIR/iperf3-flush.json" 2>/dev/null ||
            tail -2 "$CLUSTER_DIR/iperf3-flush.json")")
    fi
    [[ $during == ok* ]] && why+=("a new connection to $(cluster_ip 11) was answered while kube-proxy's rules were flushed: the flush did not take")
    [ "$foreign_before" = "$foreign_after" ] || why+=("rules that are not kube-proxy's changed: $(diff <(echo "$foreign_before") <(echo "$foreign_after") | head -5 | tr '\n' ' ')")
    row_fail "kube-proxy flush + re-sync mid-transfer" "${why[@]}"
fi
expect_answer "ClusterIP -> pod on another node after the re-sync" "$client" tcp "$(ip_port "$(cluster_ip 11)" 80)" n2/p1 "$cip"

# --- chaos 2: ovs-vswitchd kill -9 on the backend's node.
if [ "$POD_NETWORK" = reference ]; then
    echo "$checks passed, $rows_failed failed (reference pod network: no ovs-vswitchd to kill)"
    [ "$rows_failed" -eq 0 ]; exit
fi
old_pid=$(node_status 2 | jq '.vswitchd.pid')
in_node 2 kill -9 "$old_pid"
killed=$(ms_now)
back() { whoami_probe "$client" tcp "$(ip_port "$(cluster_ip 11)" 80)" 1 1 1 | grep -q '^ok n2/p1 '; }
if wait_for "ClusterIP $(cluster_ip 11) -> n2/p1 after vswitchd kill -9 on node 2" 60 back; then
    recovered=$(ms_now)
    row_ok "ovs-vswitchd kill -9 on the backend's node: Service traffic back after $(( recovered - killed )) ms"
    expect_answer "ClusterIP -> pod on another node after the vswitchd restart" "$client" udp "$(ip_port "$(cluster_ip 11)" 80)" n2/p1 "$cip"
else
    row_fail "ovs-vswitchd kill -9 on the backend's node" "ClusterIP $(cluster_ip 11) -> n2/p1 not answered within 60 s" \
        "$(whoami_probe "$client" tcp "$(ip_port "$(cluster_ip 11)" 80)" 1 1 1)"
fi

echo "$checks passed, $rows_failed failed"
[ "$rows_failed" -eq 0 ]
