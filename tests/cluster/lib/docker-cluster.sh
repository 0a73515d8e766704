# shellcheck shell=bash source-path=SCRIPTDIR
# The "docker" node provider: nodes are Docker containers on a user-defined
# Docker network, as kind makes them (a host-side veth with default offloads
# per node, Docker's NAT and embedded DNS), so kovs meets what it meets on kind.
#   <prefix>-dockerhost  a network namespace playing the Docker host: a private
#                        dockerd runs in it, with its bridges and iptables rules;
#                        in_underlay runs here (Docker host -> node traffic)
#   network "kind"       172.18.0.0/16, gateway 172.18.0.1, as kind's
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

dk() { docker -H "unix://$KOVS_DOCKER_SOCK" "$@"; }
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

# --- the private Docker engine ------------------------------------------------

# The private dockerd's pid while it runs (a stale pid file's pid may belong to anything by now).
_dockerd_pid() {
    local p
    p=$(cat "$KOVS_DOCKER_RUN/docker.pid" 2>/dev/null) && [ -n "$p" ] &&
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dockerd ] && echo "$p"
}
_dockerd_owner() { cat "$KOVS_DOCKER_RUN/docker.owner" 2>/dev/null || echo unknown; }
_dockerd_ours() { _dockerd_pid >/dev/null && [ "$(_dockerd_owner)" = "$CLUSTER_PREFIX" ]; }

# Runs dockerd in the dockerhost network namespace. Not with `ip netns exec`:
# that mounts a fresh /sys for the namespace, which hides /sys/fs/cgroup, and
# dockerd refuses to start without the cgroup mounts ("Devices cgroup isn't
# mounted"). So: a private mount namespace (slave: nothing dockerd mounts
# reaches the machine's), the cgroup tree moved onto a fresh sysfs that shows
# this namespace's interfaces, and a tmpfs on /run/containerd so dockerd never
# sees (and uses) a containerd of the machine: it starts its own, a child in
# this namespace, with its socket under the exec root.
# shellcheck disable=SC2016 # expanded by the inner shell
_dockerhost_shell='
set -e
stash=$1; shift
mount --rbind /sys/fs/cgroup "$stash"
umount -l /sys
mount -t sysfs kovs-dockerhost /sys
mount --move "$stash" /sys/fs/cgroup
mount -t tmpfs -o mode=0711 kovs-dockerhost /run/containerd
exec "$@"'

dockerd_start() {
    local timeout=${KOVS_DOCKER_WAIT:-900} waited=0 pid lock t0
    for b in dockerd containerd runc docker-init docker nsenter unshare flock; do
        command -v "$b" >/dev/null || die "$b not found: the docker provider needs docker.io (scripts/install-deps.sh installs it)"
    done
    mkdir -p "$KOVS_DOCKER_RUN/dockerhost.cgroup" "$KOVS_DOCKER_ROOT" "$CLUSTER_DIR"
    # The mount point of the tmpfs that hides a machine's containerd; removed
    # again by dockerd_stop when it was made here.
    if [ ! -d /run/containerd ]; then mkdir /run/containerd && : > "$KOVS_DOCKER_RUN/run-containerd.made"; fi
    exec {lock}>"$KOVS_DOCKER_RUN/docker.lock"
    flock "$lock"
    local grace
    while true; do
        while pid=$(_dockerd_pid); do
            if (( waited == 0 )); then
                _log "  the private Docker engine (pid $pid, data root $KOVS_DOCKER_ROOT) is in use by cluster $(_dockerd_owner); waiting up to ${timeout}s."
                _log "  A cluster left up with --keep is removed with: tests/cluster/local-cluster down --prefix $(_dockerd_owner)"
            fi
            (( waited >= timeout )) && { exec {lock}>&-; die "the private Docker engine is still in use by cluster $(_dockerd_owner) after ${timeout}s"; }
            flock -u "$lock"; sleep 2; waited=$(( waited + 2 )); flock "$lock"
        done
        # The engine just stopped: its cluster's dockerd_stop removes the owner
        # file and the exec root next (copies of this file older than the lock
        # in dockerd_stop do it without the lock). Wait for the owner file to
        # go, at most 20 s in case that cluster died before cleaning up.
        grace=0
        while [ -e "$KOVS_DOCKER_RUN/docker.owner" ] && [ "$(_dockerd_owner)" != "$CLUSTER_PREFIX" ] &&
            (( grace < 20 )) && ! _dockerd_pid >/dev/null; do
            flock -u "$lock"; sleep 1; grace=$(( grace + 1 )); flock "$lock"
        done
        _dockerd_pid >/dev/null || break
    done
    t0=$(date +%s%N)
    printf '%s\n' "$CLUSTER_PREFIX" > "$KOVS_DOCKER_RUN/docker.owner"
    rm -f "$KOVS_DOCKER_RUN/docker.pid" "$KOVS_DOCKER_SOCK"
    ip netns add "$(dockerhost_ns)"
    in_underlay ip link set lo up
    # An empty config file: a daemon.json of the machine's own Docker is not
    # ours. (dockerd 20.10 still writes its identity to /etc/docker/key.json;
    # no option moves it.)
    echo '{}' > "$KOVS_DOCKER_RUN/daemon.json"
    _log "  starting a private dockerd in network namespace $(dockerhost_ns) (socket $KOVS_DOCKER_SOCK, data root $KOVS_DOCKER_ROOT)"
    # setsid: a Ctrl-C at the terminal is for this script, which then stops
    # the engine in order (dockerd would otherwise catch the SIGINT itself).
    setsid nsenter --net="/run/netns/$(dockerhost_ns)" -- unshare --mount --propagation slave -- \
        bash -c "$_dockerhost_shell" kovs-dockerhost "$KOVS_DOCKER_RUN/dockerhost.cgroup" \
        dockerd --config-file "$KOVS_DOCKER_RUN/daemon.json" --data-root "$KOVS_DOCKER_ROOT" \
            --exec-root "$KOVS_DOCKER_RUN/docker-exec" --pidfile "$KOVS_DOCKER_RUN/docker.pid" \
            -H "unix://$KOVS_DOCKER_SOCK" >>"$CLUSTER_DIR/dockerd.log" 2>&1 {lock}>&- &
    local daemon=$! deadline=$(( $(date +%s) + 60 ))
    # The engine is ours once it runs: later clusters see its pid file.
    until dk version >/dev/null 2>&1; do
        if ! kill -0 "$daemon" 2>/dev/null || (( $(date +%s) > deadline )); then
            tail -20 "$CLUSTER_DIR/dockerd.log" >&2
            exec {lock}>&-
            die "the private dockerd did not start (log above: $CLUSTER_DIR/dockerd.log)"
        fi
        sleep 0.1
    done
    exec {lock}>&-
    _log "  dockerd $(dk version -f '{{.Server.Version}}') up (pid $daemon) in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    # Leftovers of a run that could not clean up (killed -9, machine reset):
    # the data root is ours alone while our dockerd runs, so they are stale.
    local stale
    stale=$(dk ps -aq --filter label=kovs.cluster)
    if [ -n "$stale" ]; then
        _log "  removing $(wc -w <<<"$stale") stale node container(s) of earlier runs"
        # shellcheck disable=SC2086
        dk rm -f $stale >/dev/null
    fi
    stale=$(dk network ls -q --filter label=kovs.cluster)
    # shellcheck disable=SC2086
    [ -z "$stale" ] || dk network rm $stale >/dev/null
}

dockerd_stop() {
    local pid ns lock=""
    ns=$(dockerhost_ns)
    # Under the engine's lock: a cluster waiting in dockerd_start must not see
    # the engine gone and start its own before this cleanup, which removes the
    # owner file and the exec root (the waiting engine's sockets) too.
    # (Bounded: an interrupted dockerd_start of this very process may still hold it.)
    if [ -d "$KOVS_DOCKER_RUN" ]; then exec {lock}>"$KOVS_DOCKER_RUN/docker.lock"; flock -w 90 "$lock" || true; fi
    if [ "$(_dockerd_owner)" = "$CLUSTER_PREFIX" ]; then
        if pid=$(_dockerd_pid); then
            kill -TERM "$pid" 2>/dev/null || true
            wait_for "the private dockerd (pid $pid) to stop" 30 bash -c "! kill -0 $pid 2>/dev/null" ||
                kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$KOVS_DOCKER_RUN/docker.owner" "$KOVS_DOCKER_RUN/daemon.json"
        rm -rf --one-file-system "$KOVS_DOCKER_RUN/docker-exec"
        if [ -e "$KOVS_DOCKER_RUN/run-containerd.made" ]; then
            rmdir /run/containerd 2>/dev/null || true
            rm -f "$KOVS_DOCKER_RUN/run-containerd.made"
        fi
    fi
    [ -z "$lock" ] || exec {lock}>&-
    # containerd and its shims, if dockerd could not stop them.
    if ip netns list | grep -q "^$ns\b"; then
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    fi
}

# --- the node image -------------------------------------------------------------

# The Debian suite and mirror of this machine: the kovs binaries were linked
# against its libraries. KOVS_DEBIAN_SUITE / KOVS_DEBIAN_MIRROR override them.
_debian_suite() {
    local suite=${KOVS_DEBIAN_SUITE:-}
    [ -n "$suite" ] || suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null | tr -d '"')
    [ -n "$suite" ] || die "cannot tell this machine's Debian suite from /etc/os-release: set KOVS_DEBIAN_SUITE"
    echo "$suite"
}

_debian_mirror() {
    local suite=$1 m
    if [ -n "${KOVS_DEBIAN_MIRROR:-}" ]; then echo "$KOVS_DEBIAN_MIRROR"; return; fi
    # deb822 (*.sources) and one-line (*.list) apt sources; the first "deb"
    # entry serving the suite wins.
    m=$(python3 - "$suite" <<'PY'
import glob, re, sys
suite = sys.argv[1]
files = glob.glob("/etc/apt/sources.list") + sorted(glob.glob("/etc/apt/sources.list.d/*.list")) \
      + sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
for path in files:
    text = open(path, errors="replace").read()
    if path.endswith(".sources"):
        for stanza in re.split(r"\n\s*\n", text):
            f = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                k, v = line.split(":", 1)
                f[k.strip().lower()] = v.split()
            if "deb" in f.get("types", []) and suite in f.get("suites", []) \
                    and f.get("enabled", ["yes"])[0] != "no" and f.get("uris"):
                print(f["uris"][0]); sys.exit(0)
    else:
        for line in text.splitlines():
            w = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
            if len(w) >= 3 and w[0] == "deb" and w[2] == suite:
                print(w[1]); sys.exit(0)
sys.exit(1)
PY
) || die "no apt source for suite '$suite' in /etc/apt/sources.list*: set KOVS_DEBIAN_MIRROR (e.g. http://deb.debian.org/debian)"
    echo "$m"
}

# The Debian packages holding the shared libraries the kovs binaries link,
# so the image runs whatever build is mounted (an ASan build from gcc needs
# libasan, clang's is static).
_kovs_library_packages() {
    local libs files paths=() f out
    libs=$(ldd "$KOVS_BUILD/agent/kovs-agent" "$KOVS_BUILD/ctl/kovsctl" 2>/dev/null | awk '/=>/ {print $1, $3}') || true
    if grep -q ' not$' <<<"$libs"; then
        die "kovs binaries in $KOVS_BUILD need libraries this machine lacks: $(awk '$2 == "not" {print $1}' <<<"$libs" | tr '\n' ' ')"
    fi
    # /lib and /usr/lib are one directory (merged /usr); dpkg knows each file
    # under one of the two names. Exact paths: dpkg -S with globs takes seconds.
    mapfile -t files < <(awk '{sub("^/usr", "", $2); print $2}' <<<"$libs" | sort -u)
    [ ${#files[@]} -gt 0 ] || return 0
    for f in "${files[@]}"; do paths+=("$f" "/usr$f"); done
    out=$(dpkg -S "${paths[@]}" 2>/dev/null) || true
    for f in "${files[@]}"; do
        grep -q -e ": $f\$" -e ": /usr$f\$" <<<"$out" ||
            die "$f (linked by the kovs binaries) belongs to no Debian package: the node image cannot provide it"
    done
    sed -n 's/^\([^:, ]*\)\(:[a-z0-9]*\)\?: .*/\1/p' <<<"$out" | sort -u
}

# Runs a long command with its output in a log; prints the log's latest
# "I: ..." line every 10 s, and the log's tail when it fails. Killed by
# cluster_down when the script is interrupted.
_run_logged() {
    local what=$1 log=$2; shift 2
    local t0 last=0 now rc=0
    t0=$(date +%s)
    setsid "$@" >>"$log" 2>&1 &
    _image_build_pid=$!
    while kill -0 "$_image_build_pid" 2>/dev/null; do
        sleep 1
        now=$(date +%s)
        if (( now - last >= 10 )); then
            last=$now
            _log "    [$(( now - t0 ))s] $what: $(grep -a '^[IW]: ' "$log" | tail -1 | cut -c1-100)"
        fi
    done
    wait "$_image_build_pid" || rc=$?
    _image_build_pid=""
    if [ $rc -ne 0 ]; then
        _log "    $what failed (exit $rc); last lines of $log:"
        tail -15 "$log" | sed 's/^/      /' >&2
    fi
    return $rc
}

# Builds the node image from Debian packages: debootstrap --variant=minbase in
# two stages, the second (package scripts) chrooted in private mount, network
# and pid namespaces with a policy-rc.d, so no package script can start a
# daemon or touch this machine's network; then docker import.
_node_image_build() {
    local tag=$1 suite=$2 mirror=$3; shift 3
    local pkgs=("$@") work rootfs log t0 attempt
    t0=$(date +%s)
    mkdir -p "$KOVS_STATE/debootstrap-cache"
    work=$(mktemp -d "$KOVS_STATE/image-build.XXXXXX")
    _image_build_dir=$work
    rootfs=$work/rootfs log=$work/debootstrap.log
    _log "  building node image $tag: debootstrap --variant=minbase $suite from $mirror, ${#pkgs[@]} packages"
    _log "    (once per package list: the image is cached in $KOVS_DOCKER_ROOT; log $log)"
    for attempt in 1 2; do
        rm -rf --one-file-system "$rootfs"
        # Downloads and unpacks only; a private mount namespace in case
        # debootstrap mounts anything.
        _run_logged "download + unpack (attempt $attempt)" "$log" \
            unshare --mount --propagation private -- \
            debootstrap --foreign --variant=minbase --components=main --include="$(IFS=,; echo "${pkgs[*]}")" \
                --cache-dir="$KOVS_STATE/debootstrap-cache" "$suite" "$rootfs" "$mirror" && break
        [ "$attempt" -eq 2 ] && return 1
        _log "    retrying once (network hiccup?)"
    done
    printf '#!/bin/sh\n# kovs image build: no package may start a service\nexit 101\n' > "$rootfs/usr/sbin/policy-rc.d"
    chmod +x "$rootfs/usr/sbin/policy-rc.d"
    # A throwaway root: dpkg need not fsync every file (halves the time).
    echo force-unsafe-io > "$rootfs/etc/dpkg/dpkg.cfg.d/kovs-unsafe-io"
    _run_logged "configure packages" "$log" \
        unshare --mount --net --pid --fork --kill-child --propagation private -- \
        chroot "$rootfs" /debootstrap/debootstrap --second-stage || return 1
    rm -f "$rootfs/usr/sbin/policy-rc.d" "$rootfs/etc/dpkg/dpkg.cfg.d/kovs-unsafe-io"
    # kovs-agent runs OVS itself (ovs.manage: true); once a node boots systemd,
    # the package's own OVS services must not start a second one.
    chroot "$rootfs" systemctl mask --quiet openvswitch-switch.service ovs-vswitchd.service ovsdb-server.service \
        ovs-record-hostname.service 2>>"$log" || true
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
    _log "    importing into the private Docker engine ($(du -sm --one-file-system "$rootfs" | cut -f1) MB)"
    tar -C "$rootfs" --numeric-owner --one-file-system -cf - . |
        dk import -m "kovs node: debootstrap --variant=minbase $suite + ${pkgs[*]}" \
            -c 'CMD ["sleep", "infinity"]' -c "LABEL kovs.suite=$suite" -c "LABEL kovs.packages=\"${pkgs[*]}\"" \
            - "$tag" >/dev/null
    rm -rf --one-file-system "$work"
    _image_build_dir=""
    _log "  node image $tag built in $(( $(date +%s) - t0 ))s"
}

# Builds the node image unless the tag for this package list is cached.
node_image_ensure() {
    local suite mirror libs pkgs key tag old
    suite=$(_debian_suite) || exit 1
    # The kind-node provider's nodes run no kovs binary but the static kovs-cni.
    libs=""
    if [ "${KOVS_NODE_RUNS_KOVS:-1}" = 1 ]; then libs=$(_kovs_library_packages) || exit 1; fi
    mapfile -t pkgs < <(printf '%s\n' "${KOVS_NODE_PACKAGES[@]}" "$libs" | sed '/^$/d' | sort -u)
    # The tag names the recipe: suite, packages and the build steps themselves.
    key=$( { echo "$suite"; printf '%s\n' "${pkgs[@]}"; declare -f _node_image_build; } | sha256sum | cut -c1-12)
    tag=$KOVS_NODE_IMAGE_REPO:$key
    KOVS_NODE_IMAGE=$tag
    if dk image inspect "$tag" >/dev/null 2>&1; then
        _log "  node image $tag cached"
        return 0
    fi
    command -v debootstrap >/dev/null || die "debootstrap not found (scripts/install-deps.sh installs it)"
    mirror=$(_debian_mirror "$suite") || exit 1
    _node_image_build "$tag" "$suite" "$mirror" "${pkgs[@]}" || die "building the node image failed"
    # Older recipes' images only take space.
    for old in $(dk images "$KOVS_NODE_IMAGE_REPO" --format '{{.Repository}}:{{.Tag}}'); do
        [ "$old" = "$tag" ] || dk rmi "$old" >/dev/null 2>&1 || true
    done
}

# The engine and the image; cluster_up does it too, tests/cluster/local-cluster first
# (to report it as a step of its own).
docker_prepare() {
    [ "$_docker_prepared" -eq 1 ] && return 0
    dockerd_start
    node_image_ensure
    _docker_prepared=1
}

# --- the provider interface -----------------------------------------------------

underlay_up() {
    mkdir -p "$CLUSTER_DIR"
    docker_prepare
    # As kind makes its network (kind picks a free /16; inside our namespace 172.18/16 is always free).
    dk network create --driver bridge --subnet 172.18.0.0/16 --gateway 172.18.0.1 \
        --opt com.docker.network.bridge.enable_ip_masquerade=true --opt com.docker.network.driver.mtu="$UNDERLAY_MTU" \
        --label "kovs.cluster=$CLUSTER_PREFIX" "$DOCKER_NETWORK" >/dev/null
}

node_up() {
    local n=$1 c security=(); c=$(node_container "$n")
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
        --network "$DOCKER_NETWORK" --ip "$(node_ip "$n")" \
        --cap-add NET_ADMIN --cap-add SYS_ADMIN --cap-add NET_RAW --cap-add IPC_LOCK --cap-add SYS_NICE \
        --cap-add SYS_PTRACE \
        --device /dev/net/tun --sysctl net.ipv4.ip_forward=1 --init "${security[@]}" \
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
    rm -rf "$CLUSTER_DIR"
}
