#!/usr/bin/env bash
# The shim uplink under br_netfilter, as on every kubeadm node
# (net.bridge.bridge-nf-call-iptables=1 is a preflight requirement): traffic
# that the node's kernel NATs and then sends out through br-phy must reach the
# underlay. Node 1 carries hand-written rules shaped like kube-proxy's
# iptables mode (v1.29+) for a NodePort Service whose endpoint is a pod on
# node 2 (DNAT + MASQUERADE), and like portmap's for a hostPort on a pod of
# node 1 (DNAT). A client on the underlay (the Docker host, kind's
# extraPortMappings) downloads 1 MiB through each.
#
# With a Linux bridge in the shim the replies died there: the un-NATed
# segment, already tracked once when the node's kernel routed it, met the
# same conntrack table again as a bridged frame (br_netfilter) and was
# dropped; only the handshake and the FIN got through.
source "$(dirname "$0")/lib.sh"

bytes=1048576
node_port=30080
host_port=8443
pod_port=9000

cluster_up 2
pod_add 1 1
pod_add 2 1
pass "2 nodes ready (uplink.mode ${KOVS_UPLINK_MODE:-shim}), a pod on each"

# A new network namespace starts with it at 1 where br_netfilter is loaded;
# a Docker node's /proc/sys may be read-only, so write it only if needed.
for n in 1 2; do
    in_node "$n" test -e /proc/sys/net/bridge/bridge-nf-call-iptables ||
        { echo "br_netfilter is not loaded on this machine: the scenario cannot happen here; skipped"; exit 77; }
    [ "$(in_node "$n" cat /proc/sys/net/bridge/bridge-nf-call-iptables)" = 1 ] ||
        in_node "$n" sysctl -qw net.bridge.bridge-nf-call-iptables=1 ||
        { echo "node $n: cannot set net.bridge.bridge-nf-call-iptables=1; skipped"; exit 77; }
done

for n in 1 2; do
    in_pod "$n" 1 socat "TCP-LISTEN:$pod_port,fork,reuseaddr" SYSTEM:"head -c $bytes /dev/zero" >/dev/null 2>&1 &
done
for n in 1 2; do wait_for "the 1 MiB server in pod $n/1" 10 port_listening "$pod_port" in_pod "$n" 1; done

backend=$(pod_ip 2 1)
local_pod=$(pod_ip 1 1)
in_node 1 iptables-restore <<RULES
*nat
:KUBE-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-EXT-NP - [0:0]
:KUBE-SVC-NP - [0:0]
:KUBE-SEP-NP - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-POSTROUTING - [0:0]
:CNI-HOSTPORT-DNAT - [0:0]
:CNI-DN-POD11 - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-NODEPORTS -p tcp -m tcp --dport $node_port -j KUBE-EXT-NP
-A KUBE-EXT-NP -j KUBE-MARK-MASQ
-A KUBE-EXT-NP -j KUBE-SVC-NP
-A KUBE-SVC-NP -j KUBE-SEP-NP
-A KUBE-SEP-NP -p tcp -m tcp -j DNAT --to-destination $backend:$pod_port
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -j MASQUERADE --random-fully
-A CNI-HOSTPORT-DNAT -p tcp -m multiport --dports $host_port -j CNI-DN-POD11
-A CNI-DN-POD11 -p tcp -m tcp --dport $host_port -j DNAT --to-destination $local_pod:$pod_port
COMMIT
*filter
:KUBE-FORWARD - [0:0]
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
COMMIT
RULES
pass "node 1: bridge-nf-call-iptables=1, NodePort $node_port -> $backend:$pod_port (DNAT + MASQUERADE), hostPort $host_port -> $local_pod:$pod_port"

# Downloads from the underlay; prints the byte count.
download() { { in_underlay timeout 30 socat -u "TCP:$(node_ip 1):$1,connect-timeout=5" - 2>/dev/null || true; } | wc -c; }
explain() {
    echo "node 1 conntrack:"; in_node 1 conntrack -L -p tcp 2>/dev/null | grep -E "dport=($node_port|$host_port) " || true
    echo "node 1 devices:"; in_node 1 ip -br link
}

got=$(download "$node_port")
[ "$got" = "$bytes" ] || fail "underlay -> NodePort $(node_ip 1):$node_port -> pod on node 2: $got of $bytes bytes
$(explain)"
pass "underlay -> NodePort on node 1 -> pod on node 2: $bytes bytes"

got=$(download "$host_port")
[ "$got" = "$bytes" ] || fail "underlay -> hostPort $(node_ip 1):$host_port -> pod on node 1: $got of $bytes bytes
$(explain)"
pass "underlay -> hostPort on node 1 -> pod on node 1: $bytes bytes"

# The fix must not cost the path the shim exists for: host -> node TCP with
# the host-side veth at its default offloads (partial checksums).
# The host side of node 1's eth0: the underlay's link whose index eth0's iflink names.
# (Read first: the docker provider's in_node reads stdin, which must not be the pipe.)
peer_index=$(in_node 1 cat /sys/class/net/eth0/iflink </dev/null)
host_veth=$(in_underlay ip -o link show | awk -F': ' -v i="$peer_index" '$1 == i { sub(/@.*/, "", $2); print $2 }')
in_underlay ethtool -k "$host_veth" | grep -q '^tx-checksumming: on' ||
    fail "the underlay's veth '$host_veth' does not have TX checksum offload on: the check would prove nothing"
in_node 1 socat "TCP-LISTEN:$pod_port,fork,reuseaddr" SYSTEM:'wc -c' >/dev/null 2>&1 &
wait_for "the byte counter on node 1" 10 port_listening "$pod_port" in_node 1
got=$(head -c "$bytes" /dev/zero | { in_underlay timeout 30 socat -t5 - "TCP:$(node_ip 1):$pod_port,connect-timeout=5" 2>/dev/null || true; } | tr -d ' \n')
[ "$got" = "$bytes" ] || fail "underlay -> node 1 itself: the node received $got of $bytes bytes"
pass "underlay -> node 1 itself: $bytes bytes sent through the host veth with TX checksum offload on"

echo "$checks passed, 0 failed"
