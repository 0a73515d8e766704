# shellcheck shell=bash
# The second reference the throughput benchmark measures kovs against: the
# OVS userspace (netdev) datapath set up by hand, the way the seed reports did
# it before kovs, on the same underlay:
#
#   node N   its own ovsdb-server and ovs-vswitchd; br-phy (netdev) holding eth0
#            directly, with the node IP and eth0's MAC moved onto it; the
#            underlay-side (Docker host) veth with TX checksum offload off, as
#            the seeds did by hand on the host; br-int (netdev, fail_mode
#            secure) with gw0 (internal, node_gw_ip N/24, TX off) and a
#            flow-based VXLAN port tun0; ovs/route/add + tnl/neigh/set per peer;
#            the same L3 flows kovs started from, by hand: NORMAL, peer pod
#            CIDR -> tunnel, tunnel -> local pod (MACs rewritten), tunnel drop.
#   pod      a veth into br-int, the pod end TX checksum off, MTU underlay - 50.
#
# None of kovs's own tuning: no socket buffers, no shim, no NOARP host end.
# Source netns-cluster.sh and kernel-vxlan-reference.sh (its bare nodes and
# pod namespaces) first and bring the underlay up; nodes take numbers
# the kovs nodes do not use; cluster_down removes them too (their OVS daemons
# run inside the node namespaces).
#
#   netdev_ref_node_up N [MTU]
#   netdev_ref_connect N M ...
#   netdev_ref_pod_add N P       pod_ip N P works on it

netdev_ref_node_up() {
    local n=$1 mtu=${2:-1500} d mac; d=$(node_dir "$n")
    mkdir -p "$d/run" "$d/log" "$d/etc"
    _ref_node_create "$n" "$mtu"
    in_node "$n" sysctl -qw net.ipv4.ip_forward=1
    in_underlay ethtool -K "veth-n$n" tx off >/dev/null
    in_node "$n" ovsdb-tool create "$d/run/conf.db" /usr/share/openvswitch/vswitch.ovsschema
    in_node "$n" ovsdb-server "$d/run/conf.db" --remote="punix:$d/run/db.sock" --pidfile="$d/run/ovsdb-server.pid" \
        --unixctl="$d/run/ovsdb-server.ctl" --detach --log-file="$d/log/ovsdb-server.log" -vconsole:off
    in_node "$n" ovs-vsctl --db="unix:$d/run/db.sock" --no-wait init
    in_node "$n" ovs-vswitchd "unix:$d/run/db.sock" --pidfile="$d/run/ovs-vswitchd.pid" --detach -vconsole:off \
        --log-file="$d/log/ovs-vswitchd.log"
    mac=$(in_node "$n" cat /sys/class/net/eth0/address)
    in_node "$n" ovs-vsctl --db="unix:$d/run/db.sock" \
        -- add-br br-phy -- set bridge br-phy datapath_type=netdev other_config:hwaddr="$mac" \
        -- add-port br-phy eth0 \
        -- add-br br-int -- set bridge br-int datapath_type=netdev fail_mode=secure \
        -- add-port br-int gw0 -- set interface gw0 type=internal ofport_request=1 \
        -- add-port br-int tun0 -- set interface tun0 type=vxlan options:remote_ip=flow options:key=flow \
           options:dst_port=4789 ofport_request=2
    in_node "$n" ip addr flush dev eth0
    in_node "$n" ip addr add "$(node_ip "$n")/16" dev br-phy
    in_node "$n" ip link set br-phy up
    in_node "$n" ip route replace default via 172.18.0.1 dev br-phy
    in_node "$n" ip addr add "$(node_gw_ip "$n")/24" dev gw0
    in_node "$n" ip link set gw0 mtu $(( mtu - 50 )) up
    for dev in gw0 br-phy; do in_node "$n" ethtool -K "$dev" tx off >/dev/null; done
    echo $(( mtu - 50 )) > "$d/pod-mtu"
}

netdev_ref_pod_add() {
    local n=$1 p=$2 d host ip mac; d=$(node_dir "$n")
    host="nref$n-$p"
    ip="10.244.$n.$(( 10 + p ))"
    _ref_pod_create "$n" "$p"
    in_node "$n" ip link add "$host" type veth peer name eth0 netns "/run/netns/$(pod_ns "$n" "$p")"
    in_node "$n" ip link set "$host" up
    in_pod "$n" "$p" ip link set eth0 mtu "$(cat "$d/pod-mtu")" up
    in_pod "$n" "$p" ip addr add "$ip/24" dev eth0
    in_pod "$n" "$p" ip route add default via "$(node_gw_ip "$n")"
    in_pod "$n" "$p" ethtool -K eth0 tx off >/dev/null
    in_node "$n" ovs-vsctl --db="unix:$d/run/db.sock" add-port br-int "$host" -- set interface "$host" ofport_request=$(( 10 + p ))
    mac=$(in_pod "$n" "$p" cat /sys/class/net/eth0/address)
    printf '{"ips": [{"address": "%s/24"}], "interfaces": [{}, {"mac": "%s"}]}\n' "$ip" "$mac" > "$d/pod-$p.result"
}

# Flows and tunnel entries for a full mesh of these nodes (and their pods so far).
netdev_ref_connect() {
    local n m d p ofport ip pmac gwmac
    for n in "$@"; do
        d=$(node_dir "$n")
        gwmac=$(in_node "$n" cat /sys/class/net/gw0/address)
        {
            echo "priority=10 actions=NORMAL"
            echo "priority=90,in_port=2 actions=drop"
            for m in "$@"; do
                [ "$n" = "$m" ] && continue
                echo "priority=100,ip,nw_dst=$(node_pod_cidr "$m") actions=set_field:$(node_ip "$m")->tun_dst,output:2"
            done
            for f in "$d"/pod-*.result; do
                [ -e "$f" ] || continue
                p=$(basename "$f" .result); p=${p#pod-}
                ip=$(jq -r '.ips[0].address' "$f" | cut -d/ -f1)
                pmac=$(jq -r '.interfaces[1].mac' "$f")
                ofport=$(( 10 + p ))
                echo "priority=100,in_port=2,ip,nw_dst=$ip actions=set_field:$gwmac->eth_src,set_field:$pmac->eth_dst,output:$ofport"
            done
        } > "$d/ref.flows"
        in_node "$n" ovs-ofctl --bundle replace-flows "unix:$d/run/br-int.mgmt" "$d/ref.flows"
        for m in "$@"; do
            [ "$n" = "$m" ] && continue
            in_node "$n" ovs-appctl ovs/route/add "$(node_ip "$m")/32" br-phy >/dev/null
            in_node "$n" ovs-appctl tnl/neigh/set br-phy "$(node_ip "$m")" "$(in_node "$m" cat /sys/class/net/br-phy/address)" >/dev/null
        done
    done
}
