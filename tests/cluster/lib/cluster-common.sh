# shellcheck shell=bash
# The provider-neutral half of the local cluster harness: names and addresses,
# the agent's config, the peer list, readiness, CNI calls. A node provider
# (netns-cluster.sh, docker-cluster.sh) sources this and supplies:
#   KOVS_BIN                  where the kovs binaries are, as seen inside a node
#   underlay_up               kind's Docker network and the Docker host
#   node_up N                 node N on the underlay, agent started
#   agent_start N / agent_stop N [SIG]
#   in_node N CMD... / in_pod N P CMD... / in_underlay CMD...
#   pod_netns_add N P / pod_netns_del N P     an (empty) pod network namespace
#   provider_node_debug N     provider-specific lines for node_debug
#   cluster_down              everything removed, also after a partial cluster_up
# Every path under CLUSTER_DIR is the same on this machine and inside a node,
# so tests read logs, leases and CNI results directly.

: "${KOVS_BUILD:?set KOVS_BUILD to a meson build directory of kovs}"
CLUSTER_PREFIX=${CLUSTER_PREFIX:-kovs$$}
# The prefix names network namespaces, containers and labels, and becomes
# CLUSTER_DIR, which cluster_down removes with rm -rf, and patterns for the
# processes it kills: letters and digits only, so it can mean nothing else.
if ! [[ $CLUSTER_PREFIX =~ ^[A-Za-z][A-Za-z0-9]{0,19}$ ]]; then
    printf -- '--prefix / CLUSTER_PREFIX: expected a letter, then up to 19 letters or digits, got %q\n' "$CLUSTER_PREFIX" >&2
    exit 2
fi
CLUSTER_DIR=${CLUSTER_DIR:-/tmp/$CLUSTER_PREFIX}
if ! [[ $CLUSTER_DIR =~ ^/[A-Za-z0-9._/-]+$ && $CLUSTER_DIR != *..* && $(realpath -m "$CLUSTER_DIR") != / ]]; then
    printf 'CLUSTER_DIR: expected an absolute path of letters, digits, ".", "_", "-" (not /), got %q\n' "$CLUSTER_DIR" >&2
    exit 2
fi
CNI_PLUGIN_DIR=${CNI_PLUGIN_DIR:-/usr/lib/cni}
# kind's Docker network MTU; 9000 is a jumbo network (`docker network create
# kind -o com.docker.network.driver.mtu=9000`): gw0 and the pods follow it.
UNDERLAY_MTU=${KOVS_UNDERLAY_MTU:-1500}
if ! [[ $UNDERLAY_MTU =~ ^[0-9]{4}$ ]] || (( UNDERLAY_MTU < 1280 || UNDERLAY_MTU > 9000 )); then
    printf 'KOVS_UNDERLAY_MTU: expected 1280-9000, got %s\n' "$UNDERLAY_MTU" >&2
    exit 2
fi
# kind's networking.ipFamily: ipv4 (the default), ipv6 or dual, with the
# addresses kind and kubeadm give: the network's ULA beside 172.18.0.0/16,
# pod CIDRs fd00:10:244:N::/64 after (dual) or instead of (ipv6) the /24.
IP_FAMILY=${KOVS_IP_FAMILY:-ipv4}
case $IP_FAMILY in
    ipv4|ipv6|dual) ;;
    *) printf 'KOVS_IP_FAMILY: expected ipv4, ipv6 or dual, got %s\n' "$IP_FAMILY" >&2; exit 2 ;;
esac
# The underlay's shape: "flat" (kind's one Docker network: every node on
# 172.18.0.0/16) or "routed" (netns provider only): the nodes in two subnets,
# 172.18.1.0/24 and 172.18.2.0/24 (fc00:f853:ccd:e791::/64, e792::/64),
# joined by a router namespace, the Docker host behind the router on
# 172.18.0.0/24 (e793::/64); nodes 1 and 3 share a subnet, node 2 is routed
# from both. Node 3 has a cloud VM's shape (GCE's): its IPv4 address is a /32
# with an on-link default gateway, so even node 1, on its segment, is reached
# through the router.
TOPOLOGY=${KOVS_TOPOLOGY:-flat}
case $TOPOLOGY in
    flat|routed) ;;
    *) printf 'KOVS_TOPOLOGY: expected flat or routed, got %s\n' "$TOPOLOGY" >&2; exit 2 ;;
esac
CLUSTER_NODES=0

_log() { printf '%s\n' "$*" >&2; }
die() { _log "error: $*"; exit 1; }

pod_ns() { echo "$CLUSTER_PREFIX-n$1-p$2"; }
# A node's underlay subnet: 0 on a flat underlay, 1 or 2 when routed.
node_subnet() { if [ "$TOPOLOGY" = routed ]; then echo $(( ($1 - 1) % 2 + 1 )); else echo 0; fi; }
node_ip() { echo "172.18.$(node_subnet "$1").$(( $1 + 1 ))"; }
# The prefix length of node N's IPv4 address (of the underlay's subnets without N).
node_ip_plen() {
    if [ "$TOPOLOGY" = flat ]; then echo 16; elif node_is_slash32 "${1:-0}"; then echo 32; else echo 24; fi
}
node_is_slash32() { [ "$TOPOLOGY" = routed ] && [ "$1" -eq 3 ]; }
# Its default gateway: the Docker host on kind's network, else the router's leg in its subnet.
node_gateway() { if [ "$TOPOLOGY" = routed ]; then echo "172.18.$(node_subnet "$1").1"; else echo 172.18.0.1; fi; }
node_gateway6() { if [ "$TOPOLOGY" = routed ]; then echo "fc00:f853:ccd:e79$(node_subnet "$1")::1"; else echo fc00:f853:ccd:e793::1; fi; }
node_pod_cidr() { echo "10.244.$1.0/24"; }
node_gw_ip() { echo "10.244.$1.1"; }
node_ip6() {
    if [ "$TOPOLOGY" = routed ]; then echo "fc00:f853:ccd:e79$(node_subnet "$1")::$(( $1 + 1 ))"; else echo "fc00:f853:ccd:e793::$(( $1 + 1 ))"; fi
}
node_pod_cidr6() { echo "fd00:10:244:$1::/64"; }
node_gw_ip6() { echo "fd00:10:244:$1::1"; }
# The Node's spec.podCIDRs, in kind's order, as a YAML flow list's items.
node_pod_cidrs() {
    case $IP_FAMILY in
        ipv4) node_pod_cidr "$1" ;;
        ipv6) node_pod_cidr6 "$1" ;;
        dual) echo "$(node_pod_cidr "$1"), $(node_pod_cidr6 "$1")" ;;
    esac
}
# The Node's InternalIPs in ipv6 and dual clusters, the tunnel's first (IPv6
# in an ipv6 cluster), as a YAML flow list's items; kind's nodes have an IPv4
# address in every family.
node_ips() {
    case $IP_FAMILY in
        ipv6) echo "'$(node_ip6 "$1")', $(node_ip "$1")" ;;
        dual) echo "$(node_ip "$1"), '$(node_ip6 "$1")'" ;;
    esac
}
node_dir() { echo "$CLUSTER_DIR/n$1"; }
node_env() { local d; d=$(node_dir "$1"); echo "OVS_RUNDIR=$d/run OVS_DBDIR=$d/run OVS_LOGDIR=$d/log OVS_SYSCONFDIR=$d/etc"; }

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

write_peers() {
    local f=$CLUSTER_DIR/peers.yaml.tmp n
    : > "$f"
    for n in $(seq 1 "$CLUSTER_NODES"); do
        [ -e "$(node_dir "$n")/left" ] && continue
        if [ "$IP_FAMILY" = ipv4 ]; then
            printf -- '- name: node%s\n  nodeIP: %s\n' "$n" "$(node_ip "$n")" >> "$f"
        else
            printf -- '- name: node%s\n  nodeIPs: [%s]\n' "$n" "$(node_ips "$n")" >> "$f"
        fi
        printf -- '  podCIDRs: [%s]\n' "$(node_pod_cidrs "$n")" >> "$f"
    done
    mv "$f" "$CLUSTER_DIR/peers.yaml"   # atomic: the agents' inotify sees one complete file
}

agent_config() {
    local n=$1 d; d=$(node_dir "$n")
    cat <<YAML
node: {name: node$n, podCIDRs: [$(node_pod_cidrs "$n")]}
ovs: {manage: true, rundir: $d/run, database: $d/run/conf.db}
gateway: {networkdDropinDir: $d/networkd}
uplink: {mode: ${KOVS_UPLINK_MODE:-shim}, interface: eth0}
peers: {source: file, file: $CLUSTER_DIR/peers.yaml}
statusSocket: $d/run/kovs-agent.sock
YAML
}

# A node's directory with its agent config and conflist, before the node exists.
node_files() {
    local n=$1 d; d=$(node_dir "$n")
    mkdir -p "$d/run" "$d/log" "$d/etc" "$d/networkd" "$d/ipam"
    agent_config "$n" > "$d/agent.yaml"
    cni_conflist "$n" > "$d/10-kovs.conflist"
}

# The body of node N's agent /metrics (bash's /dev/tcp: nodes need no HTTP
# client); fails when the agent does not answer within 5 s.
# shellcheck disable=SC2016
agent_metrics() {
    in_node "$1" timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9474 && printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3' |
        sed '1,/^\r$/d'
}

# node_kovsctl N ARGS...: kovsctl on node N with its agent's config.
node_kovsctl() { local n=$1; shift; in_node "$n" "$KOVS_BIN/kovsctl" --config "$(node_dir "$n")/agent.yaml" "$@"; }

# Ready when the agent says so (bridges converged, gw0 up, peers received,
# flows installed) and every peer has its OVS route and tunnel neighbour.
node_ready() {
    local n=$1 s
    s=$(in_node "$n" "$KOVS_BIN/kovsctl" --config "$(node_dir "$n")/agent.yaml" status --json) || return 1
    jq -e --argjson peers "$(( CLUSTER_NODES - $(find "$CLUSTER_DIR" -mindepth 2 -maxdepth 2 -path "$CLUSTER_DIR/n*/left" | wc -l) - 1 ))" \
        '.ready and (.peers | length == $peers) and all(.peers[]; .route and .neighbour)' <<<"$s" >/dev/null ||
        { echo "$s" | jq -c '{ready, notReadyReason, peers: [.peers[] | {name, route}]}'; return 1; }
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
    provider_node_debug "$n"
    _log "--- node $n: kovs-agent log (last 30 lines)"; tail -30 "$d/log/kovs-agent.log" >&2 || true
    _log "--- node $n: ip addr"; in_node "$n" ip -br addr >&2 || true
}

# The conflist the kind manifests install (the same plugins: kovs, then
# portmap for hostPorts), with this node's paths and IPAM range.
cni_conflist() {
    local n=$1 d v4 v6 ranges; d=$(node_dir "$n")
    v4="[{\"subnet\": \"$(node_pod_cidr "$n")\", \"gateway\": \"$(node_gw_ip "$n")\"}]"
    v6="[{\"subnet\": \"$(node_pod_cidr6 "$n")\", \"gateway\": \"$(node_gw_ip6 "$n")\"}]"
    case $IP_FAMILY in ipv4) ranges=$v4 ;; ipv6) ranges=$v6 ;; dual) ranges="$v4, $v6" ;; esac
    cat <<JSON
{"cniVersion": "1.0.0", "name": "kovs", "plugins": [{
  "type": "kovs", "bridge": "br-int", "ovsdb": "unix:$d/run/db.sock", "agentSocket": "$d/run/kovs-agent.sock",
  "ipam": {"type": "host-local", "dataDir": "$d/ipam", "ranges": [$ranges]}
}, {
  "type": "portmap", "capabilities": {"portMappings": true}
}]}
JSON
}

# cni_exec CMD N P runs the conflist's plugin chain as containerd would (it
# passes IgnoreUnknown=1 so IPAM plugins accept the K8S_* args).
# shellcheck source=cni-chain.sh
source "$(dirname "${BASH_SOURCE[0]}")/cni-chain.sh"

# pod_add N P [PORT_MAPPINGS]: pod P on node N through the CNI chain;
# PORT_MAPPINGS is the CRI's hostPort list as JSON, e.g.
# '[{"hostPort": 8081, "containerPort": 8080, "protocol": "tcp"}]'.
pod_add() {
    local n=$1 p=$2 mappings=${3:-} d; d=$(node_dir "$n")
    if [ -n "$mappings" ]; then
        jq -e 'type == "array" and all(.[]; (.hostPort | type) == "number" and (.containerPort | type) == "number"
                 and (.protocol == "tcp" or .protocol == "udp"))' <<<"$mappings" >/dev/null 2>&1 ||
            { _log "pod $n/$p: port mappings must be [{hostPort, containerPort, protocol: tcp|udp}], got: $mappings"; return 1; }
        printf '%s\n' "$mappings" > "$d/pod-$p.portmappings"
    fi
    pod_netns_add "$n" "$p"
    cni_exec ADD "$n" "$p" > "$d/pod-$p.result" 2>>"$d/log/kovs-cni.log" ||
        { cat "$d/pod-$p.result" >&2; tail -5 "$d/log/kovs-cni.log" >&2; return 1; }
}

pod_del() {
    local n=$1 p=$2 d; d=$(node_dir "$n")
    cni_exec DEL "$n" "$p" >/dev/null 2>>"$d/log/kovs-cni.log" || true
    pod_netns_del "$n" "$p"
    rm -f "$d/pod-$p.result" "$d/pod-$p.portmappings"
}

# A pod's first address (kind's order: IPv4 first in dual); pod_ip6 its IPv6 one.
pod_ip() { jq -r '.ips[0].address' "$(node_dir "$1")/pod-$2.result" | cut -d/ -f1; }
pod_ip6() { jq -r '[.ips[].address | select(contains(":"))][0] // empty' "$(node_dir "$1")/pod-$2.result" | cut -d/ -f1; }
