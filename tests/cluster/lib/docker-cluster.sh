# shellcheck shell=bash source-path=SCRIPTDIR
# The "docker" node provider: nodes are Docker containers on a user-defined
# Docker network, as kind makes them (a host-side veth with default offloads
# per node, Docker's NAT and embedded DNS), so kovs meets what it meets on kind.
#   <prefix>-dockerhost  a network namespace playing the Docker host: a private
#                        dockerd runs in it, with its bridges and iptables rules;
#                        in_underlay runs here (Docker host -> node traffic)
#   network "kind"       172.18.0.0/16, gateway 172.18.0.1, as kind's (ipv6 and
#                        dual: fc00:f853:ccd:e793::/64 beside it, gateway ::1)
#   <prefix>-nN          node N: container, hostname nodeN, eth0 = 172.18.0.(N+1);
#                        runs its own ovsdb-server, ovs-vswitchd and kovs-agent
#   pods                 network namespaces inside the node container (ip netns)
#
# Why a private dockerd, even when the machine runs one: a dockerd in the
# machine's own network namespace would add a bridge, iptables rules and
# ip_forward to the machine's network, which is shared (CI runs here). The
# private one lives in a network namespace that cluster_down deletes, and it
# uses its own containerd, sockets and run directories; only its data root
# (/var/lib/kovs/docker, where the node image is cached) outlives a cluster.
# One private dockerd runs at a time (one data root): a second cluster waits
# for the first one's to stop.
#
# Nodes get exactly the capabilities the agent needs (NET_ADMIN, SYS_ADMIN,
# NET_RAW, IPC_LOCK, SYS_NICE, SYS_PTRACE: docs/kind.md) and /dev/net/tun; --privileged
# is refused on the machines this runs on. The kovs binaries are bind-mounted
# read-only, so a rebuild needs no new image; CLUSTER_DIR is bind-mounted at
# the same path, so configs, logs, leases and the peer list are shared.
#
# Same functions as netns-cluster.sh; select it with KOVS_PROVIDER=docker.

# shellcheck source=cluster-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster-common.sh"

KOVS_BIN=/opt/kovs/bin
KOVS_STATE=${KOVS_STATE:-/var/lib/kovs}
KOVS_DOCKER_ROOT=$KOVS_STATE/docker
KOVS_DOCKER_RUN=/run/kovs
KOVS_DOCKER_SOCK=$KOVS_DOCKER_RUN/docker.sock
KOVS_NODE_IMAGE_REPO=kovs-node
DOCKER_NETWORK=kind
KOVS_NODE_IMAGE=""        # repo:tag, set by node_image_ensure
_docker_prepared=0
_image_build_pid=""
_image_build_dir=""

# What the nodes run besides the kovs binaries (whose libraries are added
# from the binaries themselves: _kovs_library_packages).
KOVS_NODE_PACKAGES=(
    openvswitch-switch iproute2 ethtool iperf3 socat jq procps iputils-ping
    containernetworking-plugins systemd dbus python3 curl iptables tcpdump
    nftables conntrack dnsmasq-base bind9-dnsutils
    ovn-central ovn-host   # tests/cluster/lib/ovn.sh: a real OVN datapath next to kovs
)

# The container engine the nodes run on: docker (a private dockerd), or
# podman (KOVS_ENGINE=podman, kind's KIND_EXPERIMENTAL_PROVIDER=podman; the
# kind-node provider only: private-podman.sh).
KOVS_ENGINE=${KOVS_ENGINE:-docker}
case $KOVS_ENGINE in
    docker) ;;
    podman) [ "${KOVS_PROVIDER:-}" = kind-node ] || die "KOVS_ENGINE=podman: only the kind-node provider runs on podman (got provider ${KOVS_PROVIDER:-docker})" ;;
    *) die "KOVS_ENGINE=$KOVS_ENGINE: expected docker or podman" ;;
esac
dk() { docker -H "unix://$KOVS_DOCKER_SOCK" "$@"; }
# Arguments every `dk run` of a node gets from the engine (podman: rlimits,
# cgroup parent, /dev/console: private-podman.sh).
engine_run_args() { :; }
dockerhost_ns() { echo "$CLUSTER_PREFIX-dockerhost"; }
node_container() { echo "$CLUSTER_PREFIX-n$1"; }

# Sanitizer settings reach the binaries in the nodes (docker exec starts with
# the container's environment, not ours).
_exec_env() {
    local -n _e=$1
    local v
    _e=()
    for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
        [ -n "${!v:-}" ] && _e+=(-e "$v=${!v}")
    done
    return 0
}

# shellcheck disable=SC2046 # node_env's words are meant to split
in_node() {
    local n=$1 e; shift
    _exec_env e
    dk exec -i "${e[@]}" "$(node_container "$n")" env $(node_env "$n") "$@"
}
in_pod() {
    local n=$1 p=$2 e; shift 2
    _exec_env e
    dk exec -i "${e[@]}" "$(node_container "$n")" ip netns exec "$(pod_ns "$n" "$p")" "$@"
}
in_underlay() { ip netns exec "$(dockerhost_ns)" "$@"; }

if [ "$KOVS_ENGINE" = podman ]; then
    # shellcheck source=private-podman.sh
    source "$(dirname "${BASH_SOURCE[0]}")/private-podman.sh"
else
    # shellcheck source=private-dockerd.sh
    source "$(dirname "${BASH_SOURCE[0]}")/private-dockerd.sh"
fi
# shellcheck source=node-image.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-image.sh"

# The engine and the image; cluster_up does it too, tests/cluster/local-cluster first
# (to report it as a step of its own).
docker_prepare() {
    [ "$_docker_prepared" -eq 1 ] && return 0
    dockerd_start
    node_image_ensure
    [ "$KOVS_ENGINE" = docker ] || podman_cache_save "$KOVS_NODE_IMAGE"
    _docker_prepared=1
}

# --- the provider interface -----------------------------------------------------

underlay_up() {
    mkdir -p "$CLUSTER_DIR"
    docker_prepare
    # As kind makes its network (kind picks a free /16; inside our namespace
    # 172.18/16 is always free), with its IPv6 ULA in ipv6 and dual clusters.
    local v6=()
    [ "$IP_FAMILY" = ipv4 ] || v6=(--ipv6 --subnet fc00:f853:ccd:e793::/64 --gateway fc00:f853:ccd:e793::1)
    # podman's CNI bridge masquerades by default and takes the MTU as "mtu"
    # (kind's podman provider makes its network so).
    local opts=(--opt com.docker.network.bridge.enable_ip_masquerade=true --opt com.docker.network.driver.mtu="$UNDERLAY_MTU")
    [ "$KOVS_ENGINE" = docker ] || opts=(--opt mtu="$UNDERLAY_MTU")
    dk network create --driver bridge --subnet 172.18.0.0/16 --gateway 172.18.0.1 "${v6[@]}" \
        "${opts[@]}" --label "kovs.cluster=$CLUSTER_PREFIX" "$DOCKER_NETWORK" >/dev/null
    [ "$KOVS_ENGINE" = docker ] || podman_bridge_up
}

# `docker run` arguments of node N's address(es) on the network, as kind's
# nodes have them: in ipv6 and dual clusters an IPv6 one too, forwarding on.
node_address_args() {
    printf '%s\n' --network "$DOCKER_NETWORK" --ip "$(node_ip "$1")" --sysctl net.ipv4.ip_forward=1
    [ "$IP_FAMILY" = ipv4 ] ||
        printf '%s\n' --ip6 "$(node_ip6 "$1")" --sysctl net.ipv6.conf.all.disable_ipv6=0 --sysctl net.ipv6.conf.all.forwarding=1
}

node_up() {
    local n=$1 c security=() addresses; c=$(node_container "$n")
    mapfile -t addresses < <(node_address_args "$n")
    node_files "$n"
    # Docker's AppArmor profile forbids mount(2), which `ip netns add` (pods)
    # needs; kind's privileged nodes are unconfined too. Seccomp stays on.
    if [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ]; then
        security=(--security-opt apparmor=unconfined)
    fi
    # --init: tini as PID 1 reaps the OVS daemons an agent killed with -9
    # leaves behind, so the restarted agent does not adopt a zombie.
    # /run and /tmp are tmpfs, as on kind's nodes; pods' namespaces live in /run/netns.
    dk run -d --name "$c" --hostname "node$n" \
        --label "kovs.cluster=$CLUSTER_PREFIX" --label "kovs.node=$n" \
        "${addresses[@]}" \
        --cap-add NET_ADMIN --cap-add SYS_ADMIN --cap-add NET_RAW --cap-add IPC_LOCK --cap-add SYS_NICE \
        --cap-add SYS_PTRACE \
        --device /dev/net/tun --init "${security[@]}" \
        --tmpfs /run --tmpfs /tmp \
        -v "$CLUSTER_DIR:$CLUSTER_DIR" \
        -v "$(realpath "$KOVS_BUILD/agent/kovs-agent"):$KOVS_BIN/kovs-agent:ro" \
        -v "$(realpath "$KOVS_BUILD/ctl/kovsctl"):$KOVS_BIN/kovsctl:ro" \
        -v "$(realpath "$KOVS_BUILD/cni/kovs-cni"):$KOVS_BIN/kovs:ro" \
        "$KOVS_NODE_IMAGE" >/dev/null
    local missing
    missing=$(in_node "$n" ldd "$KOVS_BIN/kovs-agent" "$KOVS_BIN/kovsctl" 2>&1 | grep 'not found' || true)
    [ -z "$missing" ] || die "node image $KOVS_NODE_IMAGE lacks libraries of the kovs binaries:
$missing"
    # Docker mounts /proc/sys read-only in an unprivileged container; kind's
    # privileged nodes have it writable, and what runs there writes the node's
    # per-netns net.* sysctls (portmap: route_localnet on the pods' gateway;
    # kube-proxy: its conntrack settings). Only this container's mount changes.
    in_node "$n" mount -o remount,rw,bind /proc/sys || die "node $n: cannot make /proc/sys writable"
    agent_start "$n"
}

agent_start() {
    local n=$1 d e; d=$(node_dir "$n")
    rm -f "$d/agent.pid"
    _exec_env e
    # Detached: the container's runtime shim is the agent's parent, and the
    # agent's pid (in the node's pid namespace) goes to agent.pid for agent_stop.
    # shellcheck disable=SC2046,SC2016
    dk exec -d "${e[@]}" "$(node_container "$n")" env $(node_env "$n") \
        sh -c 'echo $$ > "$1"; log=$2; shift 2; exec "$@" >>"$log" 2>&1' kovs-agent "$d/agent.pid" "$d/log/kovs-agent.log" \
        "$KOVS_BIN/kovs-agent" --config "$d/agent.yaml" --log-level "${KOVS_LOG_LEVEL:-info}"
    wait_for "kovs-agent to start on node $n" 10 test -s "$d/agent.pid"
}

_node_pid_gone() { ! dk exec "$(node_container "$1")" kill -0 "$2" 2>/dev/null; }

agent_stop() {
    local n=$1 sig=${2:-TERM} pid d; d=$(node_dir "$n")
    pid=$(cat "$d/agent.pid" 2>/dev/null) || return 0
    dk exec "$(node_container "$n")" kill "-$sig" "$pid" 2>/dev/null || true
    # An agent a failed test left SIGSTOPped takes the signal only once resumed.
    dk exec "$(node_container "$n")" kill -CONT "$pid" 2>/dev/null || true
    wait_for "kovs-agent (pid $pid on node $n) to exit after SIG$sig" 30 _node_pid_gone "$n" "$pid" || true
    rm -f "$d/agent.pid"
}

pod_netns_add() {
    # shellcheck disable=SC2016
    in_node "$1" sh -c 'ip netns add "$1" && ip netns exec "$1" ip link set lo up' pod "$(pod_ns "$1" "$2")"
}
pod_netns_del() { in_node "$1" ip netns del "$(pod_ns "$1" "$2")" 2>/dev/null || true; }

provider_node_debug() {
    _log "--- node $1: container $(dk ps -a --filter "name=^$(node_container "$1")\$" --format '{{.Names}} {{.Status}}' 2>&1)"
}

cluster_existing_nodes() {
    if _dockerd_ours; then dk ps -aq --filter "label=kovs.cluster=$CLUSTER_PREFIX" | wc -l; else echo 0; fi
}

cluster_hint() {
    echo "DOCKER_HOST=unix://$KOVS_DOCKER_SOCK docker exec -it $(node_container 1) ovs-vsctl --db=unix:$(node_dir 1)/run/db.sock show"
}

cluster_down() {
    local c
    if [ -n "$_image_build_pid" ]; then
        kill -TERM -- "-$_image_build_pid" 2>/dev/null || true
        wait "$_image_build_pid" 2>/dev/null || true
    fi
    [ -z "$_image_build_dir" ] || rm -rf --one-file-system "$_image_build_dir"
    if _dockerd_ours; then
        c=$(dk ps -aq --filter "label=kovs.cluster=$CLUSTER_PREFIX")
        # shellcheck disable=SC2086
        [ -z "$c" ] || dk rm -f $c >/dev/null 2>&1 || true
        dk network rm "$DOCKER_NETWORK" >/dev/null 2>&1 || true
    fi
    dockerd_stop
    _docker_prepared=0
    rm -rf "$CLUSTER_DIR"
}
