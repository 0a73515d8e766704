#!/usr/bin/env bash
# kind's ipFamily dual and ipv6 (KOVS_IP_FAMILY, default dual): the network's
# ULA beside 172.18.0.0/16, each Node with an InternalIP of each family and
# the pod CIDRs of its family (dual: the /24, then fd00:10:244:N::/64; ipv6:
# the /64 alone). In dual the tunnel runs over IPv4 and carries both; in ipv6
# over the IPv6 underlay. 3 nodes, 2 pods each:
#  - every agent is ready with gw0 holding the address of each pod family, every
#    peer known by both node addresses and tunnelled to at the one of the
#    tunnel's family (ipv6: its IPv6 address, in OVS's routes), gw0 and the
#    pods at the underlay MTU less the tunnel's overhead (50 bytes over IPv4,
#    70 over IPv6);
#  - every pod got an address of each family (IPv4 first), a default route of
#    each through gw0, and TX checksum off for IPv6 too;
#  - the connectivity matrix once per family: every pod pair (ping and TCP),
#    pod -> node, pod -> gw0, node -> pod, across nodes;
#  - a pod reaches another node's IPv6 address (its reply comes through the
#    tunnel from an address the peer is known by);
#  - egress over IPv6: a pod reaches the Docker host's IPv6 address, which
#    sees the node's IPv6 address (table ip6 kovs), and kovsctl doctor checks
#    the table of each family;
#  - `ip -6 addr flush dev gw0`: the guard puts the IPv6 address and its
#    route back, counts them under family="ipv6" in /metrics, and TCP over
#    IPv6 across nodes works again.
export KOVS_IP_FAMILY=${KOVS_IP_FAMILY:-dual}
source "$(dirname "$0")/lib.sh"
[ "${KOVS_PROVIDER:-netns}" != kind-node ] || { echo "the $KOVS_IP_FAMILY test bed is on the netns and docker providers so far; skipped"; exit 77; }
case $KOVS_IP_FAMILY in
    dual) overhead=50 tables="table ip kovs and table ip6 kovs masquerade" ;;
    ipv6) overhead=70 tables="table ip6 kovs masquerades" ;;
    *) die "KOVS_IP_FAMILY: this test is for dual and ipv6, got $KOVS_IP_FAMILY" ;;
esac
mtu=$(( UNDERLAY_MTU - overhead ))

cluster_up 3
for n in 1 2 3; do
    s=$(node_status "$n")
    want=$(jq -cn --arg v4 "$(node_gw_ip "$n")/24" --arg v6 "$(node_gw_ip6 "$n")/64" --arg f "$KOVS_IP_FAMILY" \
        'if $f == "dual" then [$v4, $v6] else [$v6] end')
    jq -e --argjson want "$want" '.gateway.addresses == $want' <<<"$s" >/dev/null ||
        fail "node $n: gw0 should hold $want: $(jq -c .gateway <<<"$s")"
    jq -e 'all(.peers[]; (.nodeIPs | length) == 2)' <<<"$s" >/dev/null ||
        fail "node $n: every peer should be known by both node addresses: $(jq -c '[.peers[] | {name, nodeIPs}]' <<<"$s")"
    [ "$(in_node "$n" cat /sys/class/net/gw0/mtu)" = "$mtu" ] || fail "node $n: gw0's MTU is $(in_node "$n" cat /sys/class/net/gw0/mtu), not $mtu"
done
if [ "$KOVS_IP_FAMILY" = ipv6 ]; then
    # The tunnel over the IPv6 underlay: peers at their IPv6 address, in OVS's routes.
    jq -e --arg ip "$(node_ip6 2)" 'any(.peers[]; .nodeIP == $ip and .route and .neighbour)' <<<"$(node_status 1)" >/dev/null ||
        fail "node 1: node 2 should be tunnelled to at $(node_ip6 2): $(node_status 1 | jq -c '[.peers[] | {name, nodeIP, route}]')"
    in_node 1 ovs-appctl -t "$(node_dir 1)/run/ovs-vswitchd.$(cat "$(node_dir 1)/run/ovs-vswitchd.pid").ctl" ovs/route/show |
        grep -q "^User: $(node_ip6 2)/128 dev br-phy" || fail "node 1: no OVS route to $(node_ip6 2)"
fi
pass "3 $KOVS_IP_FAMILY agents ready: gw0 with $(node_status 1 | jq -r '.gateway.addresses | join(" and ")') (node 1) at MTU $mtu, peers by both node addresses$([ "$KOVS_IP_FAMILY" = ipv6 ] && echo ", the tunnel over IPv6")"

for n in 1 2 3; do for p in 1 2; do pod_add "$n" "$p"; done; done
for n in 1 2 3; do
    r=$(cat "$(node_dir "$n")/pod-1.result")
    want="$(pod_ip6 "$n" 1)/64"
    [ "$KOVS_IP_FAMILY" = dual ] && want="$(pod_ip "$n" 1)/24 $want"
    [ "$(jq -r '[.ips[].address] | join(" ")' <<<"$r")" = "$want" ] ||
        fail "node $n: pod 1 should have the addresses $want: $(jq -c .ips <<<"$r")"
    [[ $(pod_ip6 "$n" 1) == fd00:10:244:$n::* ]] || fail "node $n: the pod's IPv6 address is outside the node's /64: $(pod_ip6 "$n" 1)"
    routes=$(in_pod "$n" 1 ip -6 route show default)
    [[ $routes == "default via $(node_gw_ip6 "$n") dev eth0"* ]] || fail "node $n: pod 1's IPv6 default route: $routes"
    for f in tx-checksum-ipv6 tx-checksum-ip-generic; do
        v=$(in_pod "$n" 1 ethtool -k eth0 | awk -v f="$f:" '$1 == f {print $2}')
        [ "$v" = off ] || fail "node $n: pod 1's $f is '$v', not off"
    done
    [ "$(in_pod "$n" 1 ip -j link show eth0 | jq '.[0].mtu')" = "$mtu" ] || fail "node $n: pod 1's MTU is not gw0's $mtu"
done
pass "every pod has its $KOVS_IP_FAMILY addresses in its node's CIDRs, an IPv6 default route via gw0, IPv6 TX checksum off, MTU $mtu"

start_servers 3 2
connectivity_matrix 3 2
[ "$matrix_failed" -eq 0 ] || fail "connectivity matrix has failures"
pass "connectivity matrix over $([ "$KOVS_IP_FAMILY" = dual ] && echo "IPv4 and IPv6" || echo IPv6): 30 pod pairs, pods <-> nodes, across the tunnel"

wait_for "pod 1/1 to reach node 2's IPv6 address" 5 tcp_ok "$(node_ip6 2)" in_pod 1 1 || fail "pod 1/1 cannot reach node 2's IPv6 address"
pass "a pod reaches another node's IPv6 address (the reply tunnels back from an address the peer is known by)"

# The Docker host's side of the network answers with the address it saw.
host6=fc00:f853:ccd:e793::1
# shellcheck disable=SC2016 # expanded by socat's shell
in_underlay socat "TCP6-LISTEN:9000,bind=[$host6],fork,reuseaddr" SYSTEM:'echo $SOCAT_PEERADDR' >/dev/null 2>&1 &
wait_for "the Docker host's IPv6 server" 10 port_listening 9000 in_underlay
for n in 1 2 3; do
    seen=$(in_pod "$n" 1 timeout 5 socat -t2 - "TCP:[$host6]:9000,connect-timeout=2" </dev/null 2>&1 | tr -d '[]\n') || true
    # socat prints the address uncompressed.
    seen=$(/usr/bin/python3 -c 'import ipaddress, sys; print(ipaddress.ip_address(sys.argv[1]))' "$seen" 2>/dev/null || echo "$seen")
    [ "$seen" = "$(node_ip6 "$n")" ] || fail "pod $n/1 -> the Docker host over IPv6: the host saw '$seen', not node $n's $(node_ip6 "$n")"
done
doc=$(kovsctl 1 doctor 2>&1) || true
grep -qE "^  ok +egress +$tables pod traffic" <<<"$doc" || fail "kovsctl doctor's egress check: $doc"
pass "egress over IPv6: every pod reaches the Docker host's IPv6 address as its node's (table ip6 kovs); doctor: $tables"

in_node 2 ip -6 addr flush dev gw0 scope global
back() { in_node 2 ip -6 addr show dev gw0 | grep -q "inet6 $(node_gw_ip6 2)/64" && in_node 2 ip -6 route show dev gw0 | grep -q "^fd00:10:244:2::/64"; }
wait_for "node 2's guard to restore gw0's IPv6 address and route" 5 back || fail "gw0's IPv6 address was not restored"
wait_for "TCP over IPv6 from pod 1/1 to pod 2/1 again" 10 tcp_ok "$(pod_ip6 2 1)" in_pod 1 1 || fail "IPv6 pod traffic did not come back"
restores=$(node_status 2 | jq '.gateway.restores')
repairs=$(agent_metrics 2 | grep '^kovs_gateway_repairs_total{family=')
grep -q '^kovs_gateway_repairs_total{family="ipv6",kind="address"} [1-9]' <<<"$repairs" ||
    fail "node 2: the IPv6 address restored was not counted in its family: $repairs"
pass "ip -6 addr flush dev gw0 on node 2: the guard restored the IPv6 address and route (restores: $restores; /metrics: $(grep 'ipv6' <<<"$repairs" | tr '\n' ' ')), TCP over IPv6 works again"

echo "$checks passed, 0 failed"
