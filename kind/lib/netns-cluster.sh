# shellcheck shell=bash
# A kind-shaped cluster on one machine, every part a network namespace:
#   <prefix>-uly       the underlay: a Linux bridge "kind" at 172.18.0.1/16, playing
#                      kind's Docker network and the Docker host (host -> node traffic)
#   <prefix>-nN        node N: eth0 = 172.18.0.(N+1)/16, its own ovsdb-server,
#                      ovs-vswitchd (userspace) and kovs-agent; pod CIDR 10.244.N.0/24
#   <prefix>-nN-pM     pod M of node N, attached through the real CNI protocol
#                      (kovs-cni main mode + host-local IPAM)
# Nothing is created in the machine's own network namespace: veths are made
# inside the underlay namespace and moved into the node namespaces.
#
# Source this file, set KOVS_BUILD (a meson build directory of this repo),
# then: cluster_up N; pod_add N M; ...; cluster_down.

: "${KOVS_BUILD:?set KOVS_BUILD to a meson build directory of kovs}"
CLUSTER_PREFIX=${CLUSTER_PREFIX:-kovs$$}
CLUSTER_DIR=${CLUSTER_DIR:-/tmp/$CLUSTER_PREFIX}
# The binaries as a node has them: the CNI plugin under its type name "kovs".
KOVS_BIN=$CLUSTER_DIR/bin
CNI_PLUGIN_DIR=${CNI_PLUGIN_DIR:-/usr/lib/cni}
CLUSTER_NODES=0

_log() { printf '%s\n' "$*" >&2; }
die() { _log "error: $*"; exit 1; }

uly() { echo "$CLUSTER_PREFIX-uly"; }
node_ns() { echo "$CLUSTER_PREFIX-n$1"; }
pod_ns() { echo "$CLUSTER_PREFIX-n$1-p$2"; }
node_ip() { echo "172.18.0.$(( $1 + 1 ))"; }
node_pod_cidr() { echo "10.244.$1.0/24"; }
node_gw_ip() { echo "10.244.$1.1"; }
node_dir() { echo "$CLUSTER_DIR/n$1"; }
node_env() { local d; d=$(node_dir "$1"); echo "OVS_RUNDIR=$d/run OVS_DBDIR=$d/run OVS_LOGDIR=$d/log OVS_SYSCONFDIR=$d/etc"; }
# shellcheck disable=SC2046 # node_env's words are meant to split
in_node() { local n=$1; shift; ip netns exec "$(node_ns "$n")" env $(node_env "$n") "$@"; }
in_pod() { local n=$1 p=$2; shift 2; ip netns exec "$(pod_ns "$n" "$p")" "$@"; }
in_underlay() { ip netns exec "$(uly)" "$@"; }

# Polls a command until it succeeds; prints what the last attempt said on timeout.
wait_for() {
    local what=$1 timeout=$2; shift 2
    local deadline=$(( $(date +%s%N) / 1000000 + timeout * 1000 )) out
    while true; do
        if out=$("$@" 2>&1); then return 0; fi
        if (( $(date +%s%N) / 1000000 > deadline )); then
            _log "timed out after ${timeout}s waiting for $what; last attempt said: $out"
            return 1
        fi
        sleep 0.05
    done
}

install_binaries() {
    mkdir -p "$KOVS_BIN"
    ln -sf "$(realpath "$KOVS_BUILD/agent/kovs-agent")" "$KOVS_BIN/kovs-agent"
    ln -sf "$(realpath "$KOVS_BUILD/agent/kovsctl")" "$KOVS_BIN/kovsctl"
    ln -sf "$(realpath "$KOVS_BUILD/offload/kovs-cni")" "$KOVS_BIN/kovs"
}

underlay_up() {
    mkdir -p "$CLUSTER_DIR"
    install_binaries
    ip netns add "$(uly)"
    in_underlay ip link set lo up
    in_underlay ip link add kind type bridge
    in_underlay ip addr add 172.18.0.1/16 dev kind
    in_underlay ip link set kind up
}

write_peers() {
    local f=$CLUSTER_DIR/peers.yaml.tmp n
    : > "$f"
    for n in $(seq 1 "$CLUSTER_NODES"); do
        [ -e "$(node_dir "$n")/left" ] && continue
        printf -- '- name: node%s\n  nodeIP: %s\n  podCIDRs: [%s]\n' "$n" "$(node_ip "$n")" "$(node_pod_cidr "$n")" >> "$f"
    done
    mv "$f" "$CLUSTER_DIR/peers.yaml"   # atomic: the agents' inotify sees one complete file
}

agent_config() {
    local n=$1 d; d=$(node_dir "$n")
    cat <<YAML
node: {name: node$n, podCIDR: $(node_pod_cidr "$n")}
ovs: {manage: true, rundir: $d/run, dbPath: $d/run/conf.db}
gateway: {networkdDropinDir: $d/networkd}
uplink: {mode: ${KOVS_UPLINK_MODE:-shim}, interface: eth0}
peers: {source: file, file: $CLUSTER_DIR/peers.yaml}
statusSocket: $d/run/kovs-agent.sock
YAML
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
    wait "$pid" 2>/dev/null || true
    rm -f "$(node_dir "$n")/agent.pid"
}

# Ready when the agent says so (bridges converged, gw0 up, peers received,
# flows installed) and every peer has its OVS route and tunnel neighbour.
node_ready() {
    local n=$1 s
    s=$(in_node "$n" "$KOVS_BIN/kovsctl" --config "$(node_dir "$n")/agent.yaml" status --json) || return 1
    jq -e --argjson peers "$(( CLUSTER_NODES - $(ls "$CLUSTER_DIR"/n*/left 2>/dev/null | wc -l) - 1 ))" \
        '.ready and (.peers | length == $peers) and all(.peers[]; .route and .neighbour)' <<<"$s" >/dev/null ||
        { echo "$s" | jq -c '{ready, notReadyReason, peers: [.peers[] | {name, route}]}'; return 1; }
}

node_up() {
    local n=$1 d; d=$(node_dir "$n")
    mkdir -p "$d/run" "$d/log" "$d/etc" "$d/networkd" "$d/ipam"
    ip netns add "$(node_ns "$n")"
    in_node "$n" ip link set lo up
    # As on every kubeadm node (its preflight requires it).
    in_node "$n" sysctl -qw net.ipv4.ip_forward=1
    in_underlay ip link add "veth-n$n" type veth peer name eth0 netns "$(node_ns "$n")"
    in_underlay ip link set "veth-n$n" master kind up
    in_node "$n" ip addr add "$(node_ip "$n")/16" dev eth0
    in_node "$n" ip link set eth0 up
    in_node "$n" ip route add default via 172.18.0.1
    agent_config "$n" > "$d/agent.yaml"
    cni_conflist "$n" > "$d/10-kovs.conflist"
    agent_start "$n"
}

cluster_up() {
    CLUSTER_NODES=$1
    local n
    underlay_up
    for n in $(seq 1 "$CLUSTER_NODES"); do node_up "$n"; done
    write_peers
    for n in $(seq 1 "$CLUSTER_NODES"); do
        wait_for "node $n agent to build its bridges" 60 node_ready "$n" || { node_debug "$n"; return 1; }
    done
}

node_debug() {
    local n=$1 d; d=$(node_dir "$n")
    _log "--- node $n: kovs-agent log (last 30 lines)"; tail -30 "$d/log/kovs-agent.log" >&2 || true
    _log "--- node $n: ip addr"; in_node "$n" ip -br addr >&2 || true
}

# The conflist the kind manifests install, with this node's IPAM range.
cni_conflist() {
    local n=$1 d; d=$(node_dir "$n")
    cat <<JSON
{"cniVersion": "1.0.0", "name": "kovs", "plugins": [{
  "type": "kovs", "bridge": "br-int", "ovsdb": "unix:$d/run/db.sock",
  "ipam": {"type": "host-local", "dataDir": "$d/ipam",
           "ranges": [[{"subnet": "$(node_pod_cidr "$n")", "gateway": "$(node_gw_ip "$n")"}]]}
}]}
JSON
}

# Runs one CNI command of the conflist's first plugin, as containerd would
# (it passes IgnoreUnknown=1 so IPAM plugins accept the K8S_* args).
cni_exec() {
    local cmd=$1 n=$2 p=$3 d; d=$(node_dir "$n")
    jq -c '.plugins[0] + {cniVersion: .cniVersion, name: .name}' "$d/10-kovs.conflist" |
        in_node "$n" env CNI_COMMAND="$cmd" CNI_CONTAINERID="pod-$n-$p" CNI_NETNS="/run/netns/$(pod_ns "$n" "$p")" \
            CNI_IFNAME=eth0 CNI_PATH="$KOVS_BIN:$CNI_PLUGIN_DIR" \
            CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-$n-$p" "$KOVS_BIN/kovs"
}

pod_add() {
    local n=$1 p=$2
    ip netns add "$(pod_ns "$n" "$p")"
    in_pod "$n" "$p" ip link set lo up
    cni_exec ADD "$n" "$p" > "$(node_dir "$n")/pod-$p.result" 2>>"$(node_dir "$n")/log/kovs-cni.log" ||
        { cat "$(node_dir "$n")/pod-$p.result" >&2; tail -5 "$(node_dir "$n")/log/kovs-cni.log" >&2; return 1; }
}

pod_del() {
    local n=$1 p=$2
    cni_exec DEL "$n" "$p" >/dev/null 2>>"$(node_dir "$n")/log/kovs-cni.log" || true
    ip netns del "$(pod_ns "$n" "$p")" 2>/dev/null || true
}

pod_ip() { jq -r '.ips[0].address' "$(node_dir "$1")/pod-$2.result" | cut -d/ -f1; }

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
