#!/usr/bin/env bash
# A routed underlay (KOVS_TOPOLOGY=routed, netns provider; KOVS_IP_FAMILY,
# default dual): nodes 1 and 3 on 172.18.1.0/24, node 2 on 172.18.2.0/24,
# the Docker host on 172.18.0.0/24, all joined by a router namespace; each
# node has a default route and a more specific one (172.18.0.0/16) via its
# subnet's router leg. 3 nodes, 2 pods each:
#  - every agent programs the peer behind the router via the router
#    (`ovs/route/add <peer>/32 br-phy <gateway>`, the gateway's MAC as the
#    tunnel neighbour) and the on-link peer directly; status says so
#    (`via`), doctor passes; both of eth0's routes were moved to br-phy;
#  - the demo's whole matrix across the router in each family: every pod
#    pair, pod <-> node, the Docker host -> node, Services (ClusterIP,
#    NodePort, the API server), egress;
#  - the router's leg on 172.18.1.0/24 gets a new MAC (announced, as a
#    replaced router or VRRP does): nodes 1 and 3 follow it, and the time
#    from the change to node 1's tunnel neighbour and to traffic is printed;
#  - node 1 loses its route to 172.18.2.0/24: node 2 is reported (status
#    problem, doctor, kovs_tunnel_peers_unprogrammed{reason="no_route"}), node 3 is
#    unaffected; the routes back, node 2 is programmed and reached again;
#  - a 1400-byte hop to node 2's subnet, the routes saying so: gw0 on both
#    sides follows it (1350), a new pod gets it and sends full-size DF
#    packets across; the pod made before (1450) loses them and doctor names
#    it; back at 1450 once the hop is gone;
#  - node 3 has a cloud VM's shape: 172.18.1.4/32 and both routes `onlink`.
#    Its routes move to br-phy as they are; no prefix there holds the
#    gateway, which OVS 3.1 needs to route a tunnel, so the tunnel job adds
#    the node's address as /0 (scope host, noprefixroute: no kernel route);
#    shown first failing without it (vswitchd refuses the route), then
#    repaired by the agent; node 3 reaches node 1, on its own segment, via
#    the router, as such a VM does;
#  - kovs-agent --cleanup on nodes 1 and 3 puts the routes back on eth0
#    (node 3's /32 and onlink routes exactly, and no /0 anywhere).
export KOVS_TOPOLOGY=routed KOVS_IP_FAMILY=${KOVS_IP_FAMILY:-dual}
source "$(dirname "$0")/lib.sh"
# shellcheck source=../cluster/lib/kube-proxy.sh
source "$root/tests/cluster/lib/kube-proxy.sh"
# shellcheck source=../cluster/lib/services.sh
source "$root/tests/cluster/lib/services.sh"
[ "$KOVS_PROVIDER" = netns ] || { echo "the routed test bed is on the netns provider; skipped"; exit 77; }

appctl() { local n=$1; shift; in_node "$n" ovs-appctl -t "$(node_dir "$n")/run/ovs-vswitchd.$(cat "$(node_dir "$n")/run/ovs-vswitchd.pid").ctl" "$@"; }
tunnel_neighbour() { appctl "$1" tnl/neigh/show | awk -v ip="$2" '$1 == ip {print $2}'; }

cluster_up 3
no_routes_on_eth0() { [ -z "$(in_node "$1" ip -4 route show dev eth0)" ]; }
wait_for "node 1's routes to be on br-phy" 10 no_routes_on_eth0 1 || fail "node 1 still has routes on eth0: $(in_node 1 ip route)"
routes=$(in_node 1 ip -4 route show dev br-phy)
grep -q "^default via 172.18.1.1" <<<"$routes" && grep -q "^172.18.0.0/16 via 172.18.1.1 .*metric 10" <<<"$routes" ||
    fail "node 1: the default and the /16 route should be on br-phy: $routes"
s=$(node_status 1)
jq -e '.peers[] | select(.name == "node2") | .via == "172.18.1.1" and .route and .neighbour' <<<"$s" >/dev/null ||
    fail "node 1: node 2 should be programmed via 172.18.1.1: $(jq -c '.peers' <<<"$s")"
jq -e '.peers[] | select(.name == "node3") | (has("via") | not) and .route and .neighbour' <<<"$s" >/dev/null ||
    fail "node 1: node 3 should be on-link: $(jq -c '.peers' <<<"$s")"
appctl 1 ovs/route/show | grep -q "^User: $(node_ip 2)/32 dev br-phy GW 172.18.1.1" ||
    fail "node 1: no OVS route to node 2 via the router: $(appctl 1 ovs/route/show)"
router_mac=$(in_router ip -j link show net1 | jq -r '.[0].address')
[ "$(tunnel_neighbour 1 172.18.1.1)" = "$router_mac" ] || fail "node 1: the router's tunnel neighbour: $(appctl 1 tnl/neigh/show)"
for n in 1 2 3; do
    out=$(kovsctl "$n" doctor) || fail "doctor on node $n failed on a healthy routed cluster:
$out"
done
pass "3 nodes on 2 subnets: node 1 tunnels to node 2 via the router ($router_mac), to node 3 on-link; both routes moved to br-phy; doctor passes"

# Node 3, the /32 node.
wait_for "node 3's routes to be on br-phy" 10 no_routes_on_eth0 3 || fail "node 3 still has routes on eth0: $(in_node 3 ip route)"
routes=$(in_node 3 ip -4 route show dev br-phy)
grep -q "^default via 172.18.1.1 onlink" <<<"$routes" && grep -q "^172.18.0.0/16 via 172.18.1.1 .*onlink" <<<"$routes" ||
    fail "node 3: the onlink routes should be on br-phy as they were: $routes"
in_node 3 ip -4 addr show dev br-phy | grep -q "inet $(node_ip 3)/32 scope global" || fail "node 3: its /32 is not on br-phy: $(in_node 3 ip addr show dev br-phy)"
cover="$(node_ip 3)/0"
has_cover() { in_node 3 ip -4 addr show dev br-phy | grep -q "inet $cover scope host noprefixroute"; }
wait_for "node 3's cover address" 10 has_cover || fail "node 3: no cover address $cover on br-phy: $(in_node 3 ip addr show dev br-phy)"
wait_for "node 3 to program its peers" 10 node_ready 3 || fail "node 3 not ready: $(node_status 3 | jq -c '.tunnel, .peers')"
[ "$(node_status 3 | jq -r .tunnel.coverAddress)" = "$cover" ] || fail "node 3's status does not show the cover: $(node_status 3 | jq -c .tunnel)"
[ "$(in_node 3 ip -4 route show table all dev br-phy | grep -cv -e "^default via" -e "^172.18.0.0/16 via" -e "^local $(node_ip 3) ")" = 0 ] ||
    fail "node 3: br-phy should have only its two routes and the /32's local one (the cover makes none): $(in_node 3 ip -4 route show table all dev br-phy)"
s=$(node_status 3)
jq -e '[.peers[] | select(.via == "172.18.1.1" and .route and .neighbour)] | length == 2' <<<"$s" >/dev/null ||
    fail "node 3 should reach both peers via the router: $(jq -c '.peers' <<<"$s")"
out=$(kovsctl 3 doctor) || fail "doctor on node 3 (/32) failed: $out"
pass "node 3 (/32, onlink gateway): routes moved as they were, cover $cover on br-phy (no kernel route), both peers via the router, doctor passes"

for n in 1 2 3; do for p in 1 2; do pod_add "$n" "$p"; done; done
start_servers 3 2
connectivity_matrix 3 2
[ "$matrix_failed" -eq 0 ] || fail "connectivity matrix across the router has failures"
demo_services_up 3 || fail "Services setup"
services_matrix 3 2
[ "$matrix_failed" -eq 0 ] || fail "Services or egress across the router have failures"
pass "the demo's matrix across the router ($(cluster_families | sed 's/ / and IPv/;s/^/IPv/')): pods, nodes, Docker host, Services, egress"

# Without the cover (the agent stopped, so nothing repairs): vswitchd refuses
# the route a /32 node needs, and node 3's pods lose the others.
agent_stop 3
in_node 3 ip addr del "$cover" dev br-phy
appctl 3 ovs/route/del "$(node_ip 1)/32"
refused=$(appctl 3 ovs/route/add "$(node_ip 1)/32" br-phy 172.18.1.1 2>&1) && fail "vswitchd took a /32 node's route without the cover: $refused"
grep -q "Error while inserting route" <<<"$refused" || fail "unexpected answer from vswitchd: $refused"
tcp_ok "$(pod_ip 1 1)" in_pod 3 1 && fail "n3/p1 -> n1/p1 worked without node 3's OVS route"
agent_start 3
wait_for "node 3 to program its peers again" 15 node_ready 3 || fail "node 3 not ready after its restart: $(node_status 3 | jq -c '.tunnel, .peers')"
has_cover || fail "node 3: the agent did not put the cover back"
tcp_ok "$(pod_ip 1 1)" in_pod 3 1 && tcp_ok "$(pod_ip 2 1)" in_pod 3 1 || fail "n3/p1 -> n1/p1, n2/p1 after the agent's repair"
pass "without the cover vswitchd refuses node 3's route (\"Error while inserting route.\") and n3 -> n1 fails; the agent puts it back and both peers answer"

# The router's leg towards nodes 1 and 3 is replaced: a new MAC, announced by
# gratuitous ARP (arp_notify). Traffic n1/p1 -> n2/p1 is probed every 10 ms.
new_mac=02:00:00:00:fe:01
in_pod 1 1 ping -i 0.01 -W 1 -c 600 "$(pod_ip 2 1)" > "$CLUSTER_DIR/ping.log" 2>&1 &
pinger=$!
sleep 1   # the probe runs before the change (a pause, not a wait for state)
t0=$(ms_now)
in_router ip link set net1 address "$new_mac"
# Polled every 10 ms (wait_for's 50 ms would blur the figure printed below).
deadline=$(( $(ms_now) + 10000 ))
while [ "$(tunnel_neighbour 1 172.18.1.1)" != "$new_mac" ]; do
    (( $(ms_now) < deadline )) || fail "node 1 did not follow the router's new MAC within 10 s: $(appctl 1 tnl/neigh/show)"
    sleep 0.01
done
followed=$(( $(ms_now) - t0 ))
wait "$pinger" || true
received=$(grep -oE '[0-9]+ received' "$CLUSTER_DIR/ping.log" | cut -d' ' -f1)
gap=$(( (600 - ${received:-0}) * 10 ))
tcp_ok "$(pod_ip 2 1)" in_pod 1 1 || fail "n1/p1 -> n2/p1 TCP after the router's MAC change"
[ "$(tunnel_neighbour 3 172.18.1.1)" = "$new_mac" ] || fail "node 3 did not follow the router's new MAC: $(appctl 3 tnl/neigh/show)"
echo "router MAC change: node 1's tunnel neighbour followed in ${followed} ms; pod traffic lost ${gap} ms of 6 s (10 ms probes)"
pass "the router's new MAC followed on nodes 1 and 3 (${followed} ms), traffic across it back"

# Node 1 loses its route to node 2's subnet: an unreachable route for it,
# more specific than the uplink's (deleting the uplink's own routes is
# repaired at once by the uplink guard: they are the node's identity).
in_node 1 ip route add unreachable 172.18.2.0/24
no_route_reported() { node_status "$1" | jq -e --arg p "$2" '.peers[] | select(.name == $p) | .problem | test("no route")' >/dev/null; }
wait_for "node 1 to report node 2 without a route" 10 no_route_reported 1 node2 ||
    fail "node 1 does not report node 2's missing route: $(node_status 1 | jq -c .peers)"
metrics_has 1 'kovs_tunnel_peers_unprogrammed{reason="no_route"} 1' || fail "no metric for the peer without a route"
out=$(kovsctl 1 doctor) && fail "doctor passed with node 2 unroutable: $out"
grep -q "peer node2 ($(node_ip 2)): the kernel has no route to it" <<<"$out" || fail "doctor does not name node 2's missing route: $out"
tcp_ok "$(pod_ip 3 1)" in_pod 1 1 || fail "n1/p1 -> n3/p1 (on-link) broke while node 2 had no route"
pass "node 2 without a route from node 1: reported (status, doctor, metric), node 3 unaffected"
in_node 1 ip route del unreachable 172.18.2.0/24
wait_for "node 1 to program node 2 again" 10 node_ready 1 || fail "node 2 not programmed again: $(node_status 1 | jq -c .peers)"
tcp_ok "$(pod_ip 2 1)" in_pod 1 1 || fail "n1/p1 -> n2/p1 after the route came back"
pass "the routes back: node 2 programmed via the router and reached again"

# A narrower path: the router's leg to node 2's subnet has MTU 1400 (a VPN or
# overlay hop on the way), and the routes across it say so (mtu 1400, as an
# admin or DHCP's interface-MTU option tells the kernel). The userspace
# datapath sends tunnel packets with DF and never shrinks them: a pod at the
# uplink's 1450 loses its large packets to node 2, which is what every pod
# did before kovs followed the path (n1/p1 below, made before, still shows
# it). The agents lower gw0 to 1400 - 50 and new pods get that; doctor names
# the pod made before; with the routes gone gw0 is back at 1450.
old_pod_mtu=$(in_pod 1 1 ip -j link show eth0 | jq '.[0].mtu')
[ "$old_pod_mtu" = 1450 ] || fail "n1/p1 should have the uplink's 1450 before the narrow path, has $old_pod_mtu"
in_router ip link set veth-n2 mtu 1400
in_router ip link set net2 mtu 1400
in_node 1 ip route add 172.18.2.0/24 via 172.18.1.1 dev br-phy mtu 1400
in_node 2 ip route add 172.18.1.0/24 via 172.18.2.1 dev br-phy mtu 1400
path_mtu() { [ "$(node_status 1 | jq '.peers[] | select(.name == "node2") | .pathMtu')" = 1400 ]; }
wait_for "node 1's status to show node 2's path MTU 1400" 10 path_mtu || fail "no path MTU in status: $(node_status 1 | jq -c .peers)"
gateway_mtu() { [ "$(in_node "$1" cat /sys/class/net/gw0/mtu)" = "$2" ] && [ "$(node_status "$1" | jq '.gateway.mtu')" = "$2" ]; }
wait_for "node 1's gw0 to go down to 1350" 10 gateway_mtu 1 1350 || fail "node 1's gw0: $(in_node 1 cat /sys/class/net/gw0/mtu), status $(node_status 1 | jq -c '{gateway: .gateway.mtu, tunnel: .tunnel.narrowestPath}')"
wait_for "node 2's gw0 to go down to 1350" 10 gateway_mtu 2 1350 || fail "node 2's gw0: $(in_node 2 cat /sys/class/net/gw0/mtu)"
node_status 1 | jq -e --arg ip "$(node_ip 2)" '.tunnel.narrowestPath == {peer: $ip, mtu: 1400}' >/dev/null ||
    fail "node 1's status should name node 2's path as the narrowest: $(node_status 1 | jq -c .tunnel)"
pod_add 1 3
new_pod_mtu=$(in_pod 1 3 ip -j link show eth0 | jq '.[0].mtu')
[ "$new_pod_mtu" = 1350 ] || fail "a pod made on node 1 now should get gw0's 1350, got $new_pod_mtu"
# Full-size packets with DF, as TCP sends them: through from the new pod,
# lost from the one made before (the failure without the fix).
big_ping() { in_pod 1 "$1" ping -M do -s "$2" -c 2 -W 2 -q "$(pod_ip 2 1)" >/dev/null 2>&1; }
big_ping 3 $((1350 - 28)) || fail "n1/p3 (MTU 1350) -> n2/p1: 1350-byte packets with DF lost across the 1400-byte hop"
big_ping 1 $((1450 - 28)) && fail "n1/p1 (MTU 1450) -> n2/p1: 1450-byte packets crossed a 1400-byte hop; the test bed's narrow hop is not narrow"
tcp_ok "$(pod_ip 2 1)" in_pod 1 3 || fail "n1/p3 -> n2/p1 TCP across the narrow hop"
out=$(kovsctl 1 doctor) && fail "doctor passed with a pod at 1450 over a 1400-byte path: $out"
grep -q "MTU above gw0's 1350: pod .*(1450)" <<<"$out" || fail "doctor does not name the pod made before gw0 went down: $out"
grep -q "the path's MTU is 1400" <<<"$out" && fail "doctor still reports node 2's path, which gw0 now fits: $out"
pass "a 1400-byte hop to node 2's subnet: gw0 down to 1350 on both sides, a new pod at 1350 sends full-size DF packets across (the pod made before at 1450 loses them, named by doctor)"
pod_del 1 3
in_node 1 ip route del 172.18.2.0/24 via 172.18.1.1 dev br-phy
in_node 2 ip route del 172.18.1.0/24 via 172.18.2.1 dev br-phy
in_router ip link set veth-n2 mtu "$UNDERLAY_MTU"
in_router ip link set net2 mtu "$UNDERLAY_MTU"
wait_for "node 1's gw0 to be back at 1450" 10 gateway_mtu 1 1450 || fail "node 1's gw0 stayed at $(in_node 1 cat /sys/class/net/gw0/mtu)"
wait_for "node 2's gw0 to be back at 1450" 10 gateway_mtu 2 1450 || fail "node 2's gw0 stayed at $(in_node 2 cat /sys/class/net/gw0/mtu)"
big_ping 1 $((1450 - 28)) || fail "n1/p1 -> n2/p1 at 1450 after the narrow hop went"
pass "the narrow hop gone: gw0 back at 1450 on both nodes, full-size packets from n1/p1 across again"

agent_stop 1
in_node 1 "$KOVS_BIN/kovs-agent" --config "$(node_dir 1)/agent.yaml" --cleanup >/dev/null 2>&1 || fail "kovs-agent --cleanup on node 1"
routes=$(in_node 1 ip -4 route show dev eth0)
grep -q "^default via 172.18.1.1" <<<"$routes" && grep -q "^172.18.0.0/16 via 172.18.1.1 .*metric 10" <<<"$routes" ||
    fail "node 1 after --cleanup: both routes should be back on eth0: $(in_node 1 ip route)"
ping_ok "$(node_ip 1)" in_underlay || fail "node 1 not reachable from the Docker host after --cleanup"
pass "kovs-agent --cleanup: node 1's default and /16 routes back on eth0, reachable across the router"
agent_stop 3
in_node 3 "$KOVS_BIN/kovs-agent" --config "$(node_dir 3)/agent.yaml" --cleanup >/dev/null 2>&1 || fail "kovs-agent --cleanup on node 3"
routes=$(in_node 3 ip -4 route show dev eth0)
grep -q "^default via 172.18.1.1 onlink" <<<"$routes" && grep -q "^172.18.0.0/16 via 172.18.1.1 .*onlink" <<<"$routes" ||
    fail "node 3 after --cleanup: the onlink routes should be back on eth0: $(in_node 3 ip route)"
[ "$(in_node 3 ip -4 -j addr show dev eth0 | jq -r '[.[0].addr_info[] | "\(.local)/\(.prefixlen)"] | join(" ")')" = "$(node_ip 3)/32" ] ||
    fail "node 3 after --cleanup: eth0 should hold exactly $(node_ip 3)/32: $(in_node 3 ip -4 addr show dev eth0)"
ping_ok "$(node_ip 3)" in_underlay || fail "node 3 not reachable from the Docker host after --cleanup"
pass "kovs-agent --cleanup: node 3's /32 and onlink routes back on eth0 as they were, no cover there"
echo "$checks passed, 0 failed"
