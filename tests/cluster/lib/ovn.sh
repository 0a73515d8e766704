# shellcheck shell=bash
# A real OVN datapath on the local cluster, shaped as OVN-Kubernetes runs it on
# kind, from Debian's OVN 23.03 packages (ovn-central, ovn-host):
#   node 1     OVN_Northbound and OVN_Southbound (ovsdb-server, TCP on the node IP,
#              as ovnkube-db serves them) and ovn-northd
#   every node ovsdb-server + ovs-vswitchd started before any CNI (as OVN-K's
#              ovs-node does), ovn-controller with ovn-bridge-datapath-type=netdev
#              and ovn-encap-type=geneve (it creates br-int itself)
#   NB         ovn_cluster_router; per node a logical switch nodeN (10.244.N.0/24)
#              joined to the router at 10.244.N.1 (rtos-nodeN / stor-nodeN), and
#              the management port k8s-nodeN (ovn-k8s-mp0, 10.244.N.2, an OVS
#              internal port with mtu_request, as ovnkube-node makes it)
#   pods       a veth whose host end is a br-int port carrying
#              external_ids:iface-id=<logical switch port>, the pod end at
#              10.244.N.(10+P) with the port's MAC, default route via .1, MTU
#              1400 (OVN-K's default on a 1500-byte network), TX checksum
#              offload left as the kernel made it (on)
# Nothing here runs kovs: tests start it with ovn_kovs_start. Sourced after
# cluster.sh; the node provider's node_up builds the nodes, but their agent is
# held back (OVS and OVN must run first, and kovs joins a working OVN).
# Every daemon runs inside its node, with its files under the node's directory.

OVN_SCHEMA_DIR=${OVN_SCHEMA_DIR:-/usr/share/ovn}
OVN_POD_MTU=${OVN_POD_MTU:-1400}
OVN_MP=ovn-k8s-mp0

for _b in ovn-controller ovn-northd ovn-nbctl ovn-sbctl ovsdb-tool; do
    command -v "$_b" >/dev/null || { echo "the OVN scenario needs $_b (scripts/install-deps.sh installs ovn-central and ovn-host); skipped"; exit 77; }
done

ovn_dir() { echo "$(node_dir "$1")/ovn"; }
# shellcheck disable=SC2046 # the env words are meant to split
in_ovn() { local n=$1; shift; in_node "$n" env OVN_RUNDIR="$(ovn_dir "$n")" OVN_LOGDIR="$(node_dir "$n")/log" OVN_DBDIR="$(ovn_dir "$n")" "$@"; }
ovn_nb() { in_ovn 1 ovn-nbctl --db="unix:$(ovn_dir 1)/ovnnb_db.sock" "$@"; }
ovn_sb() { in_ovn 1 ovn-sbctl --db="unix:$(ovn_dir 1)/ovnsb_db.sock" "$@"; }
ovn_vsctl() { local n=$1; shift; in_node "$n" ovs-vsctl --db="unix:$(node_dir "$n")/run/db.sock" "$@"; }
ovn_ofctl() { local n=$1; shift; in_node "$n" ovs-ofctl "$@"; }
ovn_mac() { printf '0a:58:0a:f4:%02x:%02x\n' "$1" "$2"; }   # OVN-K derives MACs from IPs
ovn_pod_ip() { echo "10.244.$1.$(( 10 + $2 ))"; }
ovn_pod_port() { echo "default_pod-n$1-p$2"; }
ovn_pod_host_end() { echo "ovnpod$2"; }

# The node provider builds each node (netns or container, eth0 on the
# underlay) and would start kovs-agent at its end: held back while _ovn_hold
# is set. The agent's config is the companion one (ovn_agent_config).
eval "$(declare -f agent_start | sed '1s/^agent_start/_provider_agent_start/')"
_ovn_hold=1
agent_start() { [ "$_ovn_hold" = 1 ] && return 0; _provider_agent_start "$@"; }

# kovs next to OVN as the kind companion overlay configures it, with the
# management port as the gateway it guards (its addresses are OVN-K's, read
# when it appears), OVS run by someone else, the uplink moved to br-phy
# through the shim, and peers from a file (on kind: Node InternalIPs, which are
# OVN's encap IPs there). No node.podCIDRs: OVN allocates the node subnets.
ovn_agent_config() {
    local n=$1 d; d=$(node_dir "$n")
    cat <<YAML
node: {name: node$n}
mode: companion
ovs: {manage: false, rundir: $d/run}
bridge: {integration: br-int, gateway: $OVN_MP}
gateway: {networkdDropinDir: $d/networkd}
uplink: {mode: ${KOVS_UPLINK_MODE:-shim}, interface: eth0}
peers: {source: file, file: $CLUSTER_DIR/peers.yaml}
statusSocket: $d/run/kovs-agent.sock
YAML
}
agent_config() { ovn_agent_config "$@"; }

# OVS as OVN-K's ovs-node runs it: before the CNI, under its own monitor
# process (ovs-ctl's --monitor), which restarts it after a crash but not after
# a SIGKILL: then it is the supervisor's turn (ovn_vswitchd_start, as systemd
# or kubelet restarting the ovs-node container would).
ovn_vswitchd_start() {
    local n=$1 d; d=$(node_dir "$n")
    in_node "$n" ovs-vswitchd "unix:$d/run/db.sock" --pidfile="$d/run/ovs-vswitchd.pid" --detach --monitor -vconsole:off \
        --log-file="$d/log/ovs-vswitchd.log"
    wait_for "node $n: ovs-vswitchd" 20 in_node "$n" ovs-appctl -t ovs-vswitchd version
}
ovn_ovs_up() {
    local n=$1 d; d=$(node_dir "$n")
    in_node "$n" ovsdb-tool create "$d/run/conf.db" /usr/share/openvswitch/vswitch.ovsschema
    in_node "$n" ovsdb-server "$d/run/conf.db" --remote="punix:$d/run/db.sock" --pidfile="$d/run/ovsdb-server.pid" \
        --detach --monitor -vconsole:off --log-file="$d/log/ovsdb-server.log"
    ovn_vsctl "$n" --no-wait init
    ovn_vswitchd_start "$n"
}

ovn_central_up() {
    local o; o=$(ovn_dir 1)
    local ip; ip=$(node_ip 1)
    local db
    for db in nb sb; do
        in_ovn 1 ovsdb-tool create "$o/ovn${db}_db.db" "$OVN_SCHEMA_DIR/ovn-$db.ovsschema"
    done
    in_ovn 1 ovsdb-server "$o/ovnnb_db.db" --remote="punix:$o/ovnnb_db.sock" --remote="ptcp:6641:$ip" \
        --pidfile="$o/ovnnb_db.pid" --unixctl="$o/ovnnb_db.ctl" --detach -vconsole:off --log-file="$(node_dir 1)/log/ovsdb-server-nb.log"
    in_ovn 1 ovsdb-server "$o/ovnsb_db.db" --remote="punix:$o/ovnsb_db.sock" --remote="ptcp:6642:$ip" \
        --pidfile="$o/ovnsb_db.pid" --unixctl="$o/ovnsb_db.ctl" --detach -vconsole:off --log-file="$(node_dir 1)/log/ovsdb-server-sb.log"
    in_ovn 1 ovn-northd --ovnnb-db="unix:$o/ovnnb_db.sock" --ovnsb-db="unix:$o/ovnsb_db.sock" \
        --pidfile="$o/ovn-northd.pid" --detach -vconsole:off --log-file="$(node_dir 1)/log/ovn-northd.log"
    wait_for "OVN NB" 20 ovn_nb show
    ovn_nb lr-add ovn_cluster_router
}

ovn_controller_start() {
    local n=$1 d; d=$(node_dir "$n")
    in_ovn "$n" ovn-controller "unix:$d/run/db.sock" --pidfile="$(ovn_dir "$n")/ovn-controller.pid" --detach -vconsole:off \
        --log-file="$d/log/ovn-controller.log"
}
_ovn_gone() { ! in_node "$1" kill -0 "$2" 2>/dev/null; }
ovn_controller_stop() {
    local n=$1 pid; pid=$(cat "$(ovn_dir "$n")/ovn-controller.pid" 2>/dev/null) || return 0
    in_node "$n" kill -9 "$pid" 2>/dev/null || true
    wait_for "node $n: ovn-controller $pid gone" 10 _ovn_gone "$n" "$pid"
}

_ovn_chassis_registered() { [ "$(ovn_sb --bare --columns=name find Chassis name="node$1")" = "node$1" ]; }
ovn_chassis_up() {
    local n=$1
    mkdir -p "$(ovn_dir "$n")"
    ovn_vsctl "$n" set Open_vSwitch . external_ids:system-id="node$n" external_ids:hostname="node$n" \
        external_ids:ovn-remote="tcp:$(node_ip 1):6642" external_ids:ovn-encap-type=geneve \
        external_ids:ovn-encap-ip="$(node_ip "$n")" external_ids:ovn-bridge-datapath-type=netdev
    ovn_controller_start "$n"
    wait_for "node $n: chassis in the SB" 30 _ovn_chassis_registered "$n"
    wait_for "node $n: br-int made by ovn-controller" 30 ovn_vsctl "$n" br-exists br-int
}

# The node's logical switch, its router port and the management port, as
# ovnkube-master and ovnkube-node make them.
ovn_node_network() {
    local n=$1
    ovn_nb ls-add "node$n" -- set Logical_Switch "node$n" other_config:subnet="10.244.$n.0/24"
    ovn_nb lrp-add ovn_cluster_router "rtos-node$n" "$(ovn_mac "$n" 1)" "10.244.$n.1/24"
    ovn_nb lsp-add "node$n" "stor-node$n" -- lsp-set-type "stor-node$n" router \
        -- lsp-set-addresses "stor-node$n" router -- lsp-set-options "stor-node$n" router-port="rtos-node$n"
    ovn_nb lsp-add "node$n" "k8s-node$n" -- lsp-set-addresses "k8s-node$n" "$(ovn_mac "$n" 2) 10.244.$n.2"
    ovn_vsctl "$n" add-port br-int "$OVN_MP" -- set Interface "$OVN_MP" type=internal mtu_request="$OVN_POD_MTU" \
        external_ids:iface-id="k8s-node$n"
    wait_for "node $n: $OVN_MP device" 20 in_node "$n" ip link show "$OVN_MP"
    in_node "$n" ip link set "$OVN_MP" address "$(ovn_mac "$n" 2)"
    in_node "$n" ip addr add "10.244.$n.2/24" dev "$OVN_MP"
    in_node "$n" ip link set "$OVN_MP" up
    in_node "$n" ip route add 10.244.0.0/16 via "10.244.$n.1" dev "$OVN_MP"
}

# A pod as ovnkube-node's CNI server attaches it: veth, the host end on br-int
# with the logical switch port's name as iface-id, the port in the NB.
ovn_pod_add() {
    local n=$1 p=$2 ip mac lsp host
    ip=$(ovn_pod_ip "$n" "$p"); mac=$(ovn_mac "$n" $(( 10 + p ))); lsp=$(ovn_pod_port "$n" "$p"); host=$(ovn_pod_host_end "$n" "$p")
    pod_netns_add "$n" "$p"
    ovn_nb lsp-add "node$n" "$lsp" -- lsp-set-addresses "$lsp" "$mac $ip" -- lsp-set-port-security "$lsp" "$mac $ip"
    in_node "$n" ip link add "$host" mtu "$OVN_POD_MTU" type veth peer name eth0 mtu "$OVN_POD_MTU" netns "$(pod_ns "$n" "$p")"
    in_node "$n" ip link set "$host" up
    in_pod "$n" "$p" ip link set eth0 address "$mac"
    in_pod "$n" "$p" ip addr add "$ip/24" dev eth0
    in_pod "$n" "$p" ip link set eth0 up
    in_pod "$n" "$p" ip route add default via "10.244.$n.1"
    ovn_vsctl "$n" add-port br-int "$host" -- set Interface "$host" external_ids:iface-id="$lsp" \
        external_ids:attached_mac="$mac" external_ids:ip_addresses="$ip/24" external_ids:sandbox="pod-n$n-p$p"
    wait_for "pod $n/$p: ovn-installed" 30 _ovn_installed "$n" "$host"
}
_ovn_installed() { [ "$(ovn_vsctl "$1" --if-exists get Interface "$2" external_ids:ovn-installed)" = '"true"' ]; }

ovn_cluster_up() {
    CLUSTER_NODES=$1
    local n
    underlay_up
    for n in $(seq 1 "$CLUSTER_NODES"); do node_up "$n"; done
    for n in $(seq 1 "$CLUSTER_NODES"); do ovn_ovs_up "$n"; mkdir -p "$(ovn_dir "$n")"; done
    ovn_central_up
    for n in $(seq 1 "$CLUSTER_NODES"); do ovn_chassis_up "$n"; done
    for n in $(seq 1 "$CLUSTER_NODES"); do ovn_node_network "$n"; done
    write_peers
}

# kovs joins: the agent starts on every node and is ready with a route and a
# tunnel neighbour for every peer.
ovn_kovs_start() {
    local n
    _ovn_hold=0
    for n in "$@"; do agent_start "$n"; done
    for n in "$@"; do wait_for "node $n agent ready next to OVN" 60 node_ready "$n" || { node_debug "$n"; return 1; }; done
}

# What is OVN's on a node, in a stable text form, for before/after checks:
#   flows     every OpenFlow flow, group and meter on br-int (ovn-controller owns
#             br-int's whole table; kovs installs none in companion mode), sorted,
#             without statistics
#   rows      the Open_vSwitch row's external_ids, and br-int's Bridge, Port and
#             Interface rows (configuration columns) that carry no kovs-owner
# OVN's databases are dumped by ovn_central_snapshot.
ovn_node_snapshot() {
    local n=$1
    echo "## flows"
    ovn_ofctl "$n" --no-stats --sort dump-flows br-int
    echo "## groups"
    ovn_ofctl "$n" -O OpenFlow15 dump-groups br-int | sort
    echo "## meters"
    ovn_ofctl "$n" -O OpenFlow15 dump-meters br-int | sort
    echo "## Open_vSwitch external_ids"
    ovn_vsctl "$n" get Open_vSwitch . external_ids
    echo "## br-int rows without kovs-owner"
    ovn_vsctl "$n" --columns=name,datapath_type,fail_mode,external_ids,other_config,protocols list Bridge br-int
    local port iface
    for port in $(ovn_vsctl "$n" list-ports br-int | sort); do
        [ -n "$(ovn_vsctl "$n" --if-exists get Port "$port" external_ids:kovs-owner)" ] && continue
        ovn_vsctl "$n" --columns=name,external_ids,other_config,tag list Port "$port"
        for iface in $(ovn_vsctl "$n" list-ifaces br-int | sort); do
            [ "$iface" = "$port" ] || continue
            ovn_vsctl "$n" --columns=name,type,options,external_ids,other_config,mtu_request,ofport list Interface "$iface"
        done
    done
}
ovn_central_snapshot() {
    local db
    for db in nb sb; do
        echo "## OVN_${db^^}"
        in_ovn 1 ovsdb-client dump "unix:$(ovn_dir 1)/ovn${db}_db.sock"
    done
}
