# shellcheck shell=bash
# The reference network the cluster benchmarks measure kovs against: a cluster
# of the same shape as a kovs cluster, on the same underlay, built only from
# the kernel's own parts the way flannel's vxlan backend builds it:
#
#   node N   eth0 on the underlay at node_ip N, no OVS, no kovs-agent;
#            Linux bridge "cni0" holding the pod veths, with the gateway
#            node_gw_ip N /24 on it and the pods' default route through it (made by the reference CNI plugin
#            "bridge", isGateway, host-local IPAM: the plugin flannel delegates to);
#            VXLAN device "vxlan0" (VNI 1, UDP 4789 like kovs's tun0, learning
#            off), MTU = underlay MTU - 50, with 10.244.N.0/32 on it;
#            for every peer M: route 10.244.M.0/24 via 10.244.M.0 onlink,
#            a permanent neighbour 10.244.M.0 -> M's vxlan0 MAC, and an FDB
#            entry M's vxlan0 MAC -> node_ip M.
#   pod      a veth with the bridge plugin's defaults: TX checksum offload and
#            TSO stay on, as with any kernel CNI (kovs must turn them off).
#
# Source netns-cluster.sh first (its provider functions: in_node, in_pod,
# node_ip, node_pod_cidr, node_gw_ip, node_dir) and bring the underlay up
# (underlay_up, or cluster_up for kovs nodes next to these). Reference nodes
# take node numbers the kovs nodes do not use; cluster_down removes them too.
#
#   ref_node_up N [MTU]      a bare node with cni0 and vxlan0 (MTU: underlay MTU, default 1500)
#   ref_connect N M ...      full mesh of VXLAN routes between these reference nodes
#   ref_pod_add N P          pod P on node N through the bridge plugin; pod_ip N P works on it
#
# Everything past node creation runs through the provider's functions
# (in_node, in_pod, pod_netns_add), so another provider (KOVS_PROVIDER=docker)
# only needs its case in _ref_node_create below.

REF_BRIDGE=cni0
REF_VXLAN=vxlan0
REF_VNI=1
REF_VXLAN_PORT=4789

# Provider-specific: a node namespace on the underlay with eth0 addressed as
# netns-cluster.sh's node_up does it, minus OVS and the agent.
_ref_node_create() {
    local n=$1 mtu=$2
    case ${KOVS_PROVIDER:-netns} in
    netns)
        ip netns add "$(node_ns "$n")"
        in_node "$n" ip link set lo up
        in_underlay ip link add "veth-n$n" mtu "$mtu" type veth peer name eth0 mtu "$mtu" netns "$(node_ns "$n")"
        in_underlay ip link set "veth-n$n" master kind up
        in_node "$n" ip addr add "$(node_ip "$n")/16" dev eth0
        in_node "$n" ip link set eth0 up
        in_node "$n" ip route add default via 172.18.0.1
        ;;
    *) die "kernel-vxlan reference: no bare node for provider '${KOVS_PROVIDER}' yet (add it to _ref_node_create in ${BASH_SOURCE[0]})" ;;
    esac
}

# An empty pod network namespace at /run/netns/<pod_ns> as seen inside the
# node (where cni_exec also looks): the provider's pod_netns_add where the
# harness has one, else the netns provider's way.
_ref_pod_create() {
    local n=$1 p=$2
    if declare -F pod_netns_add >/dev/null; then
        pod_netns_add "$n" "$p"
    else
        ip netns add "$(pod_ns "$n" "$p")"
        in_pod "$n" "$p" ip link set lo up
    fi
}

ref_node_up() {
    local n=$1 mtu=${2:-1500} d; d=$(node_dir "$n")
    mkdir -p "$d/ipam" "$d/log"
    _ref_node_create "$n" "$mtu"
    in_node "$n" sysctl -qw net.ipv4.ip_forward=1
    in_node "$n" ip link add "$REF_VXLAN" type vxlan id "$REF_VNI" local "$(node_ip "$n")" dev eth0 \
        dstport "$REF_VXLAN_PORT" nolearning
    in_node "$n" ip link set "$REF_VXLAN" mtu $(( mtu - 50 )) up
    in_node "$n" ip addr add "$(_ref_vtep_ip "$n")/32" dev "$REF_VXLAN"
    _ref_conf "$n" $(( mtu - 50 )) > "$d/10-ref.conf"
}

# flannel's convention: the network address of a node's pod CIDR names its VTEP.
_ref_vtep_ip() { node_pod_cidr "$1" | cut -d/ -f1; }

ref_connect() {
    local n m mac
    for m in "$@"; do
        mac=$(in_node "$m" cat "/sys/class/net/$REF_VXLAN/address")
        for n in "$@"; do
            [ "$n" = "$m" ] && continue
            in_node "$n" ip neigh replace "$(_ref_vtep_ip "$m")" lladdr "$mac" dev "$REF_VXLAN" nud permanent
            in_node "$n" bridge fdb append "$mac" dev "$REF_VXLAN" dst "$(node_ip "$m")"
            in_node "$n" ip route replace "$(node_pod_cidr "$m")" via "$(_ref_vtep_ip "$m")" dev "$REF_VXLAN" onlink
        done
    done
}

# The bridge plugin's network config: cni0 as the pods' gateway, no masquerade
# (pod IPs stay visible across nodes, as with kovs).
_ref_conf() {
    local n=$1 mtu=$2
    cat <<JSON
{"cniVersion": "1.0.0", "name": "kernel-vxlan-reference", "type": "bridge", "bridge": "$REF_BRIDGE",
 "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "mtu": $mtu,
 "ipam": {"type": "host-local", "dataDir": "$(node_dir "$n")/ipam",
          "ranges": [[{"subnet": "$(node_pod_cidr "$n")", "gateway": "$(node_gw_ip "$n")"}]]}}
JSON
}

ref_pod_add() {
    local n=$1 p=$2 d; d=$(node_dir "$n")
    _ref_pod_create "$n" "$p"
    in_node "$n" env CNI_COMMAND=ADD CNI_CONTAINERID="ref-$n-$p" CNI_NETNS="/run/netns/$(pod_ns "$n" "$p")" CNI_IFNAME=eth0 \
        CNI_PATH="$CNI_PLUGIN_DIR" "$CNI_PLUGIN_DIR/bridge" < "$d/10-ref.conf" > "$d/pod-$p.result" 2>>"$d/log/ref-cni.log" ||
        { _log "reference pod $n/$p: bridge plugin ADD failed: $(cat "$d/pod-$p.result") $(tail -3 "$d/log/ref-cni.log")"; return 1; }
}
