# shellcheck shell=bash source-path=SCRIPTDIR
# The "netns" node provider: a kind-shaped cluster on one machine, every part
# a network namespace:
#   <prefix>-uly       the underlay: a Linux bridge "kind" at 172.18.0.1/16, playing
#                      kind's Docker network and the Docker host (host -> node traffic)
#   <prefix>-nN        node N: eth0 = 172.18.0.(N+1)/16, its own ovsdb-server,
#                      ovs-vswitchd (userspace) and kovs-agent; pod CIDR 10.244.N.0/24
#   <prefix>-nN-pM     pod M of node N, attached through the real CNI protocol
#                      (kovs-cni main mode + host-local IPAM)
#   <prefix>-rtr       KOVS_TOPOLOGY=routed only: the router between the node
#                      subnets (bridges net1, net2) and the Docker host's (rtr0)
# Nothing is created in the machine's own network namespace: veths are made
# inside the underlay (or router) namespace and moved into the node namespaces.
#
# Source this file, set KOVS_BUILD (a meson build directory of this repo),
# then: cluster_up N; pod_add N M; ...; cluster_down.
# docker-cluster.sh offers the same functions with nodes as Docker containers.

# shellcheck source=cluster-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster-common.sh"

# The binaries as a node has them: the CNI plugin under its type name "kovs".
KOVS_BIN=$CLUSTER_DIR/bin

uly() { echo "$CLUSTER_PREFIX-uly"; }
rtr() { echo "$CLUSTER_PREFIX-rtr"; }
in_router() { ip netns exec "$(rtr)" "$@"; }
# Where a node's eth0 is plugged in: kind's bridge, or the router's bridge of its subnet.
attach_ns() { if [ "$TOPOLOGY" = routed ]; then rtr; else uly; fi; }
attach_bridge() { if [ "$TOPOLOGY" = routed ]; then echo "net$(node_subnet "$1")"; else echo kind; fi; }
node_ns() { echo "$CLUSTER_PREFIX-n$1"; }
# shellcheck disable=SC2046 # node_env's words are meant to split
in_node() { local n=$1; shift; ip netns exec "$(node_ns "$n")" env $(node_env "$n") "$@"; }
in_pod() { local n=$1 p=$2; shift 2; ip netns exec "$(pod_ns "$n" "$p")" "$@"; }
in_underlay() { ip netns exec "$(uly)" "$@"; }

install_binaries() {
    mkdir -p "$KOVS_BIN"
    ln -sf "$(realpath "$KOVS_BUILD/agent/kovs-agent")" "$KOVS_BIN/kovs-agent"
    ln -sf "$(realpath "$KOVS_BUILD/ctl/kovsctl")" "$KOVS_BIN/kovsctl"
    ln -sf "$(realpath "$KOVS_BUILD/cni/kovs-cni")" "$KOVS_BIN/kovs"
}

underlay_up() {
    mkdir -p "$CLUSTER_DIR"
    install_binaries
    ip netns add "$(uly)"
    in_underlay ip link set lo up
    in_underlay ip link add kind mtu "$UNDERLAY_MTU" type bridge
    in_underlay ip addr add "172.18.0.1/$(node_ip_plen)" dev kind
    [ "$IP_FAMILY" = ipv4 ] || in_underlay ip addr add fc00:f853:ccd:e793::1/64 dev kind nodad
    in_underlay ip link set kind up
    [ "$TOPOLOGY" = routed ] && router_up
    return 0
}

# The routed underlay's router: one leg on the Docker host's network, a
# bridge per node subnet; it forwards both families and announces a new MAC
# (gratuitous ARP, unsolicited NA) as a real router (VRRP, a replaced box) does.
router_up() {
    local s
    ip netns add "$(rtr)"
    in_router ip link set lo up
    in_router sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 net.ipv4.conf.all.arp_notify=1 \
        net.ipv6.conf.all.ndisc_notify=1
    in_underlay ip link add rtr0 mtu "$UNDERLAY_MTU" type veth peer name up0 mtu "$UNDERLAY_MTU" netns "$(rtr)"
    in_underlay ip link set rtr0 master kind up
    in_router ip addr add 172.18.0.254/24 dev up0
    in_router ip link set up0 up
    in_underlay ip route add 172.18.0.0/16 via 172.18.0.254
    if [ "$IP_FAMILY" != ipv4 ]; then
        in_router ip addr add fc00:f853:ccd:e793::fe/64 dev up0 nodad
        in_underlay ip -6 route add fc00:f853:ccd:e790::/60 via fc00:f853:ccd:e793::fe
    fi
    for s in 1 2; do
        in_router ip link add "net$s" mtu "$UNDERLAY_MTU" type bridge
        in_router ip addr add "172.18.$s.1/24" dev "net$s"
        [ "$IP_FAMILY" = ipv4 ] || in_router ip addr add "fc00:f853:ccd:e79$s::1/64" dev "net$s" nodad
        in_router ip link set "net$s" up
    done
}

agent_start() {
    local n=$1 d; d=$(node_dir "$n")
    # A simple command, not a function, in the background: $! is then the
    # agent itself (ip and env exec into it), so agent_stop signals the agent.
    # shellcheck disable=SC2046
    ip netns exec "$(node_ns "$n")" env $(node_env "$n") "$KOVS_BIN/kovs-agent" --config "$d/agent.yaml" \
        --log-level "${KOVS_LOG_LEVEL:-info}" >>"$d/log/kovs-agent.log" 2>&1 &
    echo $! > "$d/agent.pid"
}

agent_stop() {
    local n=$1 sig=${2:-TERM} pid
    pid=$(cat "$(node_dir "$n")/agent.pid" 2>/dev/null) || return 0
    kill "-$sig" "$pid" 2>/dev/null || true
    # An agent a failed test left SIGSTOPped takes the signal only once resumed.
    kill -CONT "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$(node_dir "$n")/agent.pid"
}

node_up() {
    local n=$1
    node_files "$n"
    ip netns add "$(node_ns "$n")"
    in_node "$n" ip link set lo up
    # As on every kubeadm node (its preflight requires it).
    in_node "$n" sysctl -qw net.ipv4.ip_forward=1
    ip netns exec "$(attach_ns)" ip link add "veth-n$n" mtu "$UNDERLAY_MTU" type veth peer name eth0 mtu "$UNDERLAY_MTU" netns "$(node_ns "$n")"
    ip netns exec "$(attach_ns)" ip link set "veth-n$n" master "$(attach_bridge "$n")" up
    in_node "$n" ip addr add "$(node_ip "$n")/$(node_ip_plen "$n")" dev eth0
    in_node "$n" ip link set eth0 up
    # A /32 node reaches its gateway on-link, as a cloud VM does.
    local onlink=()
    node_is_slash32 "$n" && onlink=(onlink)
    in_node "$n" ip route add default via "$(node_gateway "$n")" dev eth0 "${onlink[@]}"
    # Routed nodes have a more specific route too (the underlay's supernet):
    # the uplink moves every route of eth0, not just the default.
    [ "$TOPOLOGY" = flat ] || in_node "$n" ip route add 172.18.0.0/16 via "$(node_gateway "$n")" dev eth0 "${onlink[@]}" metric 10
    if [ "$IP_FAMILY" != ipv4 ]; then
        # kind's network has IPv6 in ipv6 and dual clusters; its nodes forward it.
        in_node "$n" sysctl -qw net.ipv6.conf.all.forwarding=1
        in_node "$n" ip addr add "$(node_ip6 "$n")/64" dev eth0 nodad
        in_node "$n" ip -6 route add default via "$(node_gateway6 "$n")"
    fi
    agent_start "$n"
}

pod_netns_add() {
    ip netns add "$(pod_ns "$1" "$2")"
    in_pod "$1" "$2" ip link set lo up
}
pod_netns_del() { ip netns del "$(pod_ns "$1" "$2")" 2>/dev/null || true; }

provider_node_debug() { :; }

# The number of nodes of a cluster this process did not create (tests/cluster/local-cluster down).
cluster_existing_nodes() { ip netns list | grep -c "^$CLUSTER_PREFIX-n[0-9]* " || true; }

# How to look around in a cluster left up.
cluster_hint() {
    echo "ip netns exec $(node_ns 1) ovs-vsctl --db=unix:$(node_dir 1)/run/db.sock show"
}

cluster_down() {
    local n ns
    for n in $(seq 1 "$CLUSTER_NODES"); do agent_stop "$n" TERM; done
    # OVS daemons run inside the node namespaces; kill what is left there.
    for ns in $(ip netns list | awk '{print $1}' | grep "^$CLUSTER_PREFIX-"); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    done
    for ns in $(ip netns list | awk '{print $1}' | grep "^$CLUSTER_PREFIX-"); do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$CLUSTER_DIR"
}
