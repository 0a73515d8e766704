#!/usr/bin/env bash
# 3 nodes x 2 pods: every pod pair over TCP and UDP, pod <-> node, host -> node,
# kovsctl doctor clean on every node and finding each injected fault (TX
# offload on in a pod; tunnel neighbours flushed and gw0 flushed while the
# agent is stopped), /metrics parsing as Prometheus text with the repairs
# and the CNI commands counted, and a bad pod row in OVSDB costing only its
# own flow.
source "$(dirname "$0")/lib.sh"

cluster_up 3
for n in 1 2 3; do for p in 1 2; do pod_add "$n" "$p"; done; done
start_servers 3 2
pass "3 nodes ready, 6 pods attached through kovs-cni"

connectivity_matrix 3 2
[ "$matrix_failed" -eq 0 ] || fail "connectivity matrix has failures"
pass "connectivity matrix: all pod pairs, pod<->node, host->node over TCP"

# Each packet is delivered once: the node's kernel must not forward pod
# traffic next to OVS (it did while it answered ARP on the pods' host veths).
out=$(in_pod 1 1 ping -c4 -i0.2 -W1 "$(pod_ip 2 1)")
if ! grep -q " 0% packet loss" <<<"$out" || grep -q "duplicates" <<<"$out"; then
    fail "cross-node ping lost or duplicated packets:
$out"
fi
pass "cross-node ping: every packet delivered exactly once"

for n in 1 2 3; do in_pod "$n" 1 socat UDP-RECVFROM:9090,fork EXEC:cat >/dev/null 2>&1 & done
for n in 1 2 3; do wait_for "UDP echo in pod $n/1" 10 in_pod "$n" 1 bash -c "ss -Hlun 'sport = :9090' | grep -q ."; done
for src in 1 2 3; do for dst in 1 2 3; do
    [ "$src" = "$dst" ] && continue
    got=$(echo "kovs-$src-$dst" | in_pod "$src" 2 timeout 5 socat -t2 - "UDP:$(pod_ip "$dst" 1):9090" 2>/dev/null | head -1 || true)
    [ "$got" = "kovs-$src-$dst" ] || fail "UDP n$src/p2 -> n$dst/p1: got '$got'"
done; done
pass "UDP between pods on all node pairs"

# ovs-vswitchd's AF_PACKET sockets (2 pod ports + the uplink, and its send
# socket) carry the agent's 4 MiB buffers, not the kernel's 208 KiB.
for n in 1 2 3; do
    pid=$(in_node "$n" cat "$(node_dir "$n")/run/ovs-vswitchd.pid")
    sizes=$(in_node "$n" ss -0 -a -m -p | awk -v pid="pid=$pid," '
        index($0, pid) { want = 1 }
        want && match($0, /rb[0-9]+/) { print substr($0, RSTART + 2, RLENGTH - 2); want = 0 }')
    [ "$(wc -w <<<"$sizes")" -ge 3 ] || fail "node $n: expected at least 3 AF_PACKET sockets of ovs-vswitchd, got: $sizes
$(node_status "$n" | jq -c .socketBuffers)"
    for s in $sizes; do
        [ "$s" -ge 4194304 ] || fail "node $n: an ovs-vswitchd packet socket has a ${s}-byte receive buffer
$(node_status "$n" | jq -c .socketBuffers)"
    done
done
pass "ovs-vswitchd's packet sockets have 4 MiB receive buffers on every node"

for n in 1 2 3; do
    out=$(kovsctl "$n" doctor) || fail "doctor on node $n failed on a healthy cluster:
$out"
done
grep -q "ok    egress .*(the rules the egress job would install)" <<<"$out" ||
    fail "doctor's egress check is not the egress job's dry run: $out"
pass "kovsctl doctor passes on every node"

# Faults are injected while the agent cannot run (SIGSTOP), since it repairs
# them itself, some at once and the rest at its next resync: doctor has to
# find the damage without the agent's help (it reads the peer file itself).
doctor_finds() {
    local what=$1 pattern=$2 out
    if out=$(kovsctl 1 doctor); then fail "doctor passed with $what:
$out"; fi
    grep -q "$pattern" <<<"$out" || fail "doctor did not report $what:
$out"
}

# TX checksum offload back on inside a pod.
agent_signal 1 STOP
in_pod 1 1 ethtool -K eth0 tx on >/dev/null 2>&1
doctor_finds "TX checksum on in pod 1/1" "FAIL  tx-checksum.*pod default/pod-1-1"
pass "kovsctl doctor finds TX checksum turned back on in a pod (non-zero exit, names the pod)"
agent_signal 1 CONT

# The agent's periodic sweep repairs it; the repair shows up in its metrics.
wait_for "the offload guard to turn TX checksum off again in pod 1/1" 60 \
    in_pod 1 1 bash -c "ethtool -k eth0 | grep -q '^tx-checksumming: off'"
pass "the offload guard repaired the pod"

agent_signal 1 STOP
in_node 1 ovs-appctl tnl/neigh/flush >/dev/null
doctor_finds "the tunnel neighbours flushed" "FAIL  peers .*node2 (172.18.0.3): no tunnel neighbour"
pass "kovsctl doctor finds a flushed tunnel neighbour with the tunnel reconciler paused (agent stopped)"

# Doctor's gateway check is the guard's own plan: a peer's pod-CIDR route
# gone from gw0 is found, not only the addresses and their prefix routes.
in_node 1 ip route del 10.244.2.0/24 dev gw0
doctor_finds "the route to node 2's pods deleted" "FAIL  gateway .*route 10.244.2.0/24 missing (the guard would add it)"
pass "kovsctl doctor finds a peer's pod-CIDR route gone from gw0 (the gateway guard's plan, agent stopped)"

gw_address_count=$(in_node 1 ip -4 -o addr show dev gw0 | wc -l)
in_node 1 ip addr flush dev gw0
doctor_finds "gw0 flushed" "FAIL  gateway .*address 10.244.1.1/24 missing"
pass "kovsctl doctor finds gw0 flushed with the gateway guard paused (agent stopped)"

# A port added while the agent cannot run gets vswitchd's default 208 KiB socket.
in_node 1 ip link add kvtest0 type veth peer name kvtest0p
in_node 1 ip link set kvtest0 up
in_node 1 ovs-vsctl add-port br-int kvtest0
doctor_finds "a packet socket at the kernel default" "FAIL  socket-buffers .*kvtest0 (208 KiB)"
pass "kovsctl doctor finds a vswitchd packet socket left at the kernel default (agent stopped)"

# One rule of the egress table deleted: doctor counts the table against the
# egress job's own plan.
handle=$(in_node 1 nft -a list chain ip kovs postrouting | awk '/masquerade/ {print $NF; exit}')
in_node 1 nft delete rule ip kovs postrouting handle "$handle"
doctor_finds "an egress rule deleted" "FAIL  egress .*table ip kovs has [0-9]* rules where the egress job would install"
pass "kovsctl doctor finds a rule gone from table ip kovs (the egress job's plan, agent stopped)"

# The egress masquerade table flushed with the rest of the ruleset.
in_node 1 nft flush ruleset
doctor_finds "table ip kovs gone" "FAIL  egress .*table ip kovs (the egress masquerade) is missing"
pass "kovsctl doctor finds the egress masquerade table gone (agent stopped)"

# Every flow deleted from br-int: doctor renders the flow job's table from
# OVSDB and the peer file, as the job would, and counts what br-int holds.
in_node 1 ovs-ofctl del-flows br-int
doctor_finds "br-int's flows deleted" "FAIL  flows .*br-int has 0 flows where the flow job would install [1-9]"
pass "kovsctl doctor finds br-int's flow table deleted (agent stopped: the table rendered from OVSDB and the peer file)"

agent_signal 1 CONT
wait_for "the resumed agent to repair gw0, the tunnel neighbours, the socket, the egress table and the flows (doctor clean)" 60 kovsctl 1 doctor
[ "$(in_node 1 ip -4 -o addr show dev gw0 | wc -l)" -eq "$gw_address_count" ] || fail "gw0 addresses not restored"
in_node 1 ovs-vsctl del-port br-int kvtest0
in_node 1 ip link del kvtest0
pass "the resumed agent repaired all five; doctor passes again"

# Every CNI command on node 1 reached the agent's metrics: 2 pod ADDs, then
# an ADD for a netns that does not exist, which fails.
if cni_exec ADD 1 9 >/dev/null 2>&1; then fail "CNI ADD into a missing netns succeeded"; fi
wait_for "the agent to count the failed CNI ADD" 10 metrics_has 1 '^kovs_cni_errors_total{command="ADD"} 1$'
text=$(agent_metrics 1)
python3 - "$text" <<'PY' || fail "/metrics is not valid Prometheus text"
# Line syntax, and each family's samples in one block right after its TYPE line.
import re, sys
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.e+-]+(Inf)?$')
family, kind, seen = None, None, set()
for line in sys.argv[1].splitlines():
    if line.startswith("# TYPE "):
        family, kind = line.split()[2:4]
        if family in seen:
            print("family declared twice:", family); sys.exit(1)
        seen.add(family)
        continue
    if line.startswith("# HELP ") or not line:
        continue
    m = sample.match(line)
    if not m:
        print("bad line:", line); sys.exit(1)
    name = m.group(1)
    if kind == "histogram":
        name = re.sub(r'_(bucket|sum|count)$', '', name)
    if name != family:
        print("sample outside its family's block:", line); sys.exit(1)
PY
grep -q '^kovs_offload_repairs_total{kind="tx_checksum"} [1-9]' <<<"$text" || fail "offload repair not counted:
$(grep offload <<<"$text")"
grep -q '^kovs_repairs_total{kind="gateway"} [1-9]' <<<"$text" || fail "gateway start-up repair not counted"
grep -q '^kovs_gateway_restore_seconds_count [1-9]' <<<"$text" || fail "restore latency histogram empty"
grep -q '^kovs_gateway_repairs_total{family="ipv4",kind="address"} [1-9]' <<<"$text" || fail "the gw0 address restored after the flush was not counted"
grep -q '^kovs_cni_requests_total{code="0",command="ADD"} 2$' <<<"$text" || fail "2 successful CNI ADDs not counted:
$(grep kovs_cni <<<"$text")"
grep -q '^kovs_cni_errors_total{command="ADD"} 1$' <<<"$text" || fail "the failed CNI ADD not counted:
$(grep kovs_cni <<<"$text")"
grep -q '^kovs_cni_add_seconds_count 2$' <<<"$text" || fail "CNI ADD latency histogram does not hold the 2 ADDs"
pass "/metrics parses as Prometheus text and counts the repairs (offload, gateway) and CNI ADDs and errors"

# A pod row in OVSDB with an unusable address (anyone with the database can
# write one) loses only its own flow: the agent still installs the table,
# stays ready, and a pod added afterwards gets its flows.
in_node 1 ip link add kvbad0 type veth peer name kvbad0p
in_node 1 ip link set kvbad0 up
in_node 1 ovs-vsctl add-port br-int kvbad0 -- set Interface kvbad0 \
    external_ids:attached-mac='"0a:58:bad"' external_ids:ip-address='"10.244.1.200/24"' external_ids:kovs-owner=kovs-cni
bad_row_left_out() { grep -q "not a MAC address" <<<"$(node_status 1 | jq -r '.flows.podsLeftOut[]')"; }
wait_for "the agent to leave the bad row out of its flow table" 15 bad_row_left_out || fail "the bad row was never reported"
status=$(node_status 1)
[ "$(jq -r '.flows.error' <<<"$status")" = "" ] || fail "one bad pod row failed the whole flow table: $(jq -c .flows <<<"$status")"
out=$(kovsctl 1 status)
grep -q "left out: flow table: pod kvbad0: not a MAC address: '0a:58:bad'" <<<"$out" || fail "kovsctl status does not show the pod left out:
$out"
pod_add 1 3
out=$(in_pod 2 1 ping -c2 -W2 -q "$(pod_ip 1 3)") || fail "a pod added next to the bad row is not reachable from node 2:
$out"
in_node 1 ovs-vsctl del-port br-int kvbad0
in_node 1 ip link del kvbad0
pass "a pod row with a bad address loses only its own flow; the node stays ready and new pods get flows"

# A row claiming a running pod's address (pod 1/1's) gets none of its
# traffic: the pod holds the address, the newcomer is refused and named by
# status and doctor, and pod 1/1 stays reachable throughout.
victim=$(pod_ip 1 1)
in_node 1 ip link add kvthief0 type veth peer name kvthief0p
in_node 1 ip link set kvthief0 up
in_node 1 ip link set kvthief0p up
in_node 1 ovs-vsctl add-port br-int kvthief0 -- set Interface kvthief0 external_ids:kovs-owner=kovs-cni \
    external_ids:attached-mac='"0a:58:0a:f4:01:66"' external_ids:ip-address="\"$victim/24\""
claimed() { grep -q "kvthief0: $victim is .*, which holds it: refused" <<<"$(node_status 1 | jq -r '.flows.podsLeftOut[]')"; }
wait_for "the agent to refuse the claim on $victim" 15 claimed || fail "the claim was not refused: $(node_status 1 | jq -c .flows)"
in_node 1 timeout 4 tcpdump -nli kvthief0p -c1 icmp > "$CLUSTER_DIR/thief.txt" 2>/dev/null &
sniffer=$!
sleep 0.5
out=$(in_pod 2 1 ping -c3 -i0.2 -W1 -q "$victim") || fail "pod 1/1 lost its traffic to a row claiming its address:
$out"
wait "$sniffer" || true
! grep -q "ICMP echo" "$CLUSTER_DIR/thief.txt" || fail "the row claiming $victim received its traffic:
$(cat "$CLUSTER_DIR/thief.txt")"
doctor_finds "a row claiming a pod's address" "FAIL  flows.*kvthief0: $victim is"
# The same for a pod's MAC (pod 1/2's, with a free address).
victim_mac=$(jq -r '.interfaces[1].mac' "$(node_dir 1)/pod-2.result")
in_node 1 ovs-vsctl set Interface kvthief0 external_ids:attached-mac="\"$victim_mac\"" external_ids:ip-address='"10.244.1.250/24"'
mac_claimed() { grep -q "kvthief0: $victim_mac is .*, which holds it: refused" <<<"$(node_status 1 | jq -r '.flows.podsLeftOut[]')"; }
wait_for "the agent to refuse the claim on $victim_mac" 15 mac_claimed || fail "the MAC claim was not refused: $(node_status 1 | jq -c .flows)"
out=$(in_pod 2 1 ping -c2 -i0.2 -W1 -q "$(pod_ip 1 2)") || fail "pod 1/2 lost its traffic to a row claiming its MAC:
$out"
in_node 1 ovs-vsctl del-port br-int kvthief0
in_node 1 ip link del kvthief0
pass "a port row claiming a running pod's address or MAC is refused: the pod keeps its traffic, the row gets none, status and doctor name it"

# A peer whose pod CIDR would capture node 1's own pods is refused by every
# agent (never installed), and named by status and doctor.
cp "$CLUSTER_DIR/peers.yaml" "$CLUSTER_DIR/peers.yaml.good"
printf -- '- name: hijacker\n  nodeIP: 172.18.0.99\n  podCIDRs: [10.244.0.0/16]\n' >> "$CLUSTER_DIR/peers.yaml"
refused() { grep -q '10.244.0.0/16 overlaps' <<<"$(node_status 1 | jq -r '.rejectedPeers[].reason')"; }
wait_for "node 1 to refuse the overlapping peer" 15 refused || fail "the overlapping peer was not refused: $(node_status 1 | jq -c .rejectedPeers)"
doctor_finds "a refused peer" "FAIL  peers-refused .*peer hijacker is not programmed: pod CIDR 10.244.0.0/16 overlaps"
flows=$(in_node 1 ovs-ofctl dump-flows "unix:$(node_dir 1)/run/br-int.mgmt")
! grep -q '10.244.0.0/16' <<<"$flows" || fail "the refused peer's CIDR is in node 1's flows"
grep -q 'tun_src=172.18.0.3' <<<"$flows" || fail "the good peers lost their flows"
mv "$CLUSTER_DIR/peers.yaml.good" "$CLUSTER_DIR/peers.yaml"
wait_for "doctor clean once the peer is gone" 30 kovsctl 1 doctor
pass "a peer with an overlapping pod CIDR is refused, shown by status and doctor, never installed"

# Forged VXLAN: VXLAN has no authentication, so anything on the kind network
# can send to node 1 from node 2's address (scapy, from the underlay: the
# Docker host's side of the network, where any container sits). From peer X
# only X's pod CIDRs and X's node addresses may come; before that binding,
# every inner source here but the outside one was delivered to pod 1/1, and
# that one went into node 1's kernel through gw0. The genuine-looking packet
# (node 2's pod) is the control: it must arrive, or the forging proves nothing.
dev=$(in_underlay ip -j route get "$(node_ip 1)" | jq -r '.[0].dev')
br_phy_mac=$(in_node 1 cat /sys/class/net/br-phy/address)
target=$(pod_ip 1 1)
forge() {  # TAG INNER_SRC
    in_underlay /usr/bin/python3 "$root/tests/cluster/forge_vxlan.py" --dev "$dev" --dst-mac "$br_phy_mac" \
        --outer-src "$(node_ip 2)" --outer-dst "$(node_ip 1)" --inner-src "$2" --inner-dst "$target" --port 9999 --count 3 --tag "$1"
}
forged_drops() {  # 0 without the drop flow (a tree before it: tests/e2e/hostile_before_after.sh)
    local n
    n=$(in_node 1 ovs-ofctl dump-flows "unix:$(node_dir 1)/run/br-int.mgmt" table=40,cookie=0x6b03/-1 |
        grep -o 'n_packets=[0-9]*' | cut -d= -f2 | paste -sd+ | bc) || true
    echo "${n:-0}"
}
drops_before=$(forged_drops)
in_pod 1 1 timeout 40 tcpdump -nli eth0 -A -c 3 udp port 9999 > "$CLUSTER_DIR/forged.txt" 2> "$CLUSTER_DIR/forged.err" &
sniffer=$!
wait_for "tcpdump in pod 1/1 to listen" 10 grep -q "listening on" "$CLUSTER_DIR/forged.err"
forge forged-other-nodes-pod "$(pod_ip 3 1)"
forge forged-local-pod "$(pod_ip 1 2)"
forge forged-gateway "$(node_gw_ip 1)"
forge forged-this-node "$(node_ip 1)"
forge forged-outside 192.0.2.1
forge genuine-peer-pod "$(pod_ip 2 1)"
wait "$sniffer" || true
! grep -q forged- "$CLUSTER_DIR/forged.txt" || fail "a forged inner source was delivered to pod 1/1:
$(cat "$CLUSTER_DIR/forged.txt")"
grep -q genuine-peer-pod "$CLUSTER_DIR/forged.txt" || fail "pod 1/1 did not receive the control packets from node 2's pod address (the forging itself is broken):
$(cat "$CLUSTER_DIR/forged.txt")"
dropped=$(( $(forged_drops) - drops_before ))
[ "$dropped" -eq 15 ] || fail "br-int's forged-source drop flow counted $dropped packets, expected 15 (5 cases x 3)"
forged_metric() { agent_metrics 1 | awk '$1 == "kovs_flow_drops_total{reason=\"tunnel_forged_source\"}" && $2 >= 15 { ok = 1 } END { exit !ok }'; }
wait_for "node 1's metrics to count the 15 forged packets (at the next read-back)" 45 forged_metric
out=$(in_pod 2 1 ping -c2 -i0.2 -W1 -q "$target") || fail "pod 2/1 lost its traffic to pod 1/1 after the forged packets:
$out"
pass "forged VXLAN from a peer's address (another node's pod, a local pod, the gateway, the node, outside): dropped and counted (15), the control delivered"

# The uplink job after start-up: the node's address given back to eth0 behind
# the agent's back (a DHCP client, a person) is taken off again, and the node
# still reaches its peers; kovsctl status names the repair.
agent_signal 1 STOP
in_node 1 ip addr add "$(node_ip 1)/16" dev eth0
doctor_finds "the node's address on eth0" "FAIL  uplink .*the uplink job would remove address $(node_ip 1)/16 from eth0"
agent_signal 1 CONT
eth0_bare() { [ -z "$(in_node 1 ip -4 -o addr show dev eth0)" ]; }
wait_for "the uplink job to take node 1's address off eth0 again" 10 eth0_bare
ping_ok "$(node_ip 2)" in_node 1 || fail "node 1 cannot reach node 2 after the uplink repair"
out=$(kovsctl 1 status)
grep -q "^uplink .*repairs [1-9].*last: remove address $(node_ip 1)/16 from eth0" <<<"$out" ||
    fail "kovsctl status does not show the uplink repair:
$out"
pass "the node's address put back on eth0: doctor finds it (the uplink job's plan, agent stopped), the uplink job takes it off again, kovsctl status names the repair"

echo "$checks passed, 0 failed"
