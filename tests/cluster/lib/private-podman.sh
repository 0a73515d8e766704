# shellcheck shell=bash source-path=SCRIPTDIR
# The kind-node provider's podman engine (KOVS_ENGINE=podman; docker-cluster.sh
# sources this instead of private-dockerd.sh): the node containers run on a
# rootful podman (Debian 12's 4.3, runc, CNI networking), as kind runs them
# with KIND_EXPERIMENTAL_PROVIDER=podman, and nothing of it reaches the machine:
#
#   <prefix>-dockerhost   the network namespace playing the podman host, as
#                         for dockerd: podman's CNI bridge, its veths and its
#                         iptables rules land there
#   a mount namespace     held by one process (the "holder") in that network
#                         namespace; every podman command, and the conmon
#                         monitors it leaves behind, runs in it (nsenter
#                         --target holder). It has a sysfs of the namespace
#                         (cgroups kept, as for dockerd), tmpfs on /run (netns
#                         pins, runc's and libpod's state), /dev/shm (libpod's
#                         lock segment) and /var/tmp, and /var/lib overlaid
#                         with a directory of ours (CNI's result cache and
#                         host-local leases in /var/lib/cni), so podman's
#                         defaults cannot write into the machine's
#   KOVS_PODMAN_DIR       /tmp/<prefix>-podman: the graph root, run root,
#                         tmp dir, network config dir and our own
#                         containers.conf, storage.conf and registries.conf;
#                         removed by podman_stop
#   bin/podman            the engine's command line (dk, and the `podman`
#                         kovs-kind finds on PATH): refuses to run unless the
#                         holder is alive in our network namespace
#   cgroups               every container under /kovs-podman-<prefix> of each
#                         hierarchy (its own, not libpod_parent), removed by
#                         podman_stop
#
# Images outlive a cluster only as archives in $KOVS_STATE/podman-images
# (podman save of the node image and the Debian bases, loaded into the next
# fresh graph root), so a run rebuilds nothing it built before.
#
# What podman 4.3 needs here that Docker does not (docs/kind.md, podman):
#  - rlimits: podman asks runc for nofile 1048576 (and nproc as high), and
#    this machine runs without CAP_SYS_RESOURCE in its bounding set, so runc
#    may lower a limit but not raise it ("error setting rlimit type 7:
#    operation not permitted"); 4.3 does not honour `--ulimit host` (the spec
#    still asks 1048576). Every run and build asks for this shell's nofile
#    (what Docker's containers inherit) and nproc 32768: podman starts conmon,
#    and so runc, with nproc 32768 (conmon's /proc/PID/limits), and asking
#    this shell's 96370 fails as type 6 (engine_build_args);
#  - /dev/console in the nodes' devices cgroup (engine_run_args);
#  - the network's bridge before any node (podman_bridge_up);
#  - --init is tini (containers.conf init_path): Debian 12 ships no
#    catatonit, and Docker's docker-init is tini too; no pids limit, as Docker.
#
# Functions as private-dockerd.sh's: dockerd_start, dockerd_stop, _dockerd_ours.

KOVS_PODMAN_DIR=/tmp/$CLUSTER_PREFIX-podman
KOVS_PODMAN_CACHE=$KOVS_STATE/podman-images
KOVS_PODMAN_CGROUP=kovs-podman-$CLUSTER_PREFIX
KOVS_PODMAN_BIN=$KOVS_PODMAN_DIR/bin/podman
# Docker's run directory, which only the image build's apt relay uses with podman.
# shellcheck disable=SC2034 # read by kind-node-images.sh
KOVS_DOCKER_RUN=$KOVS_PODMAN_DIR/run

# As Docker's CLI says it: import and load quietly (podman reports their
# progress on stderr), exec -d without the exec session's id on stdout.
dk() {
    case "$1 ${2:-}" in
        "import "*|"load "*) "$KOVS_PODMAN_BIN" "$1" --quiet "${@:2}" ;;
        "exec -d") "$KOVS_PODMAN_BIN" "$@" >/dev/null ;;
        *) "$KOVS_PODMAN_BIN" "$@" ;;
    esac
}

# What every podman build gets besides its own arguments: this shell's
# rlimits (see above) and our cgroup parent.
engine_build_args() {
    printf '%s\n' --ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit nproc=32768:32768 \
        --cgroup-parent "/$KOVS_PODMAN_CGROUP"
}
# And every node: also /dev/console (c 5:1) in its devices cgroup, as Docker
# allows it and podman does not. A cgroup v1 child may only allow what its
# parent allows, and containerd's default spec, which the nodes' runc applies
# to every pod, allows it: without it each pod fails with 'failed to write
# "c 5:1 rwm": write .../devices.allow: operation not permitted'.
engine_run_args() {
    engine_build_args
    printf '%s\n' --device-cgroup-rule 'c 5:1 rwm'
}

_podman_holder_pid() {
    local p
    p=$(cat "$KOVS_PODMAN_DIR/holder.pid" 2>/dev/null) && [ -n "$p" ] &&
        [ "$(stat -L -c %d:%i "/proc/$p/ns/net" 2>/dev/null)" = "$(stat -L -c %d:%i "/run/netns/$(dockerhost_ns)" 2>/dev/null)" ] &&
        echo "$p"
}
_dockerd_ours() { _podman_holder_pid >/dev/null; }

# The holder's mount namespace (nsenter --net=<ns> unshare --mount
# --propagation slave: nothing mounted here reaches the machine).
# shellcheck disable=SC2016 # expanded by the inner shell
_podmanhost_shell='
set -e
dir=$1
mount --rbind /sys/fs/cgroup "$dir/cgroup.stash"
umount -l /sys
mount -t sysfs kovs-podmanhost /sys
mount --move "$dir/cgroup.stash" /sys/fs/cgroup
mount -t tmpfs -o mode=0755 kovs-podmanhost /run
mount -t tmpfs -o mode=1777 kovs-podmanhost /dev/shm
mount -t tmpfs -o mode=1777 kovs-podmanhost /var/tmp
mount -t overlay -o "lowerdir=/var/lib,upperdir=$dir/varlib/upper,workdir=$dir/varlib/work" kovs-podmanhost /var/lib
echo $$ > "$dir/holder.pid.tmp" && mv "$dir/holder.pid.tmp" "$dir/holder.pid"
exec sleep infinity'

# What the machine's own networking looks like (the check that the engine
# left it as it was): links, routes, rules, forwarding. Counters left out.
machine_network_state() {
    {
        ip -d link show | sed -e 's/ link-netns\(id\)\? [^ ]*//' -e 's/^[0-9]*: //'
        ip route show table all; ip -6 route show table all
        iptables-save 2>&1 | sed -e '/^#/d' -e 's/ \[[0-9]*:[0-9]*\]$//'
        ip6tables-save 2>&1 | sed -e '/^#/d' -e 's/ \[[0-9]*:[0-9]*\]$//'
        nft list ruleset 2>&1 | sed 's/counter packets [0-9]* bytes [0-9]*/counter/'
        sysctl net.ipv4.ip_forward net.ipv6.conf.all.forwarding
        ls /var/lib/cni /run/netns/netns-* /etc/cni/net.d 2>&1 || true
    } | sed 's/\t/ /g'
}

_podman_write_config() {
    local d=$KOVS_PODMAN_DIR
    # The machine's podman binary (bin/podman is also `podman` on kovs-kind's PATH).
    _podman_exe=$(command -v podman)
    mkdir -p "$d/root" "$d/runroot" "$d/tmp" "$d/net.d" "$d/bin" "$d/run" "$d/cgroup.stash" "$d/varlib/upper" "$d/varlib/work"
    # No daemon reads these: every podman command gets them (bin/podman).
    # pids_limit 0: Docker sets no pids limit on the nodes; podman's default is 2048.
    cat > "$d/containers.conf" <<EOF
[containers]
init_path = "/usr/bin/tini-static"
pids_limit = 0
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$d/events.log"
image_copy_tmp_dir = "$d/tmp"
tmp_dir = "$d/tmp"
[network]
network_backend = "cni"
network_config_dir = "$d/net.d"
EOF
    cat > "$d/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$d/root"
runroot = "$d/runroot"
EOF
    # Images are only ever local (imported, built, loaded); a short name is
    # Docker Hub's, as for docker.
    printf 'unqualified-search-registries = ["docker.io"]\nshort-name-mode = "permissive"\n' > "$d/registries.conf"
    cat > "$KOVS_PODMAN_BIN" <<EOF
#!/bin/sh
# podman of kovs cluster $CLUSTER_PREFIX (tests/cluster/lib/private-podman.sh):
# its own storage and config, run in the mount and network namespaces of the
# holder process, never in the machine's.
pid=\$(cat '$d/holder.pid' 2>/dev/null) &&
    [ "\$(stat -L -c %d:%i "/proc/\$pid/ns/net" 2>/dev/null)" = "\$(stat -L -c %d:%i '/run/netns/$(dockerhost_ns)' 2>/dev/null)" ] ||
    { echo "podman of kovs cluster $CLUSTER_PREFIX: its namespaces are gone (holder not running)" >&2; exit 125; }
wd=\$PWD; case \$wd in /run|/run/*|/var/tmp|/var/tmp/*) wd=/ ;; esac
exec env CONTAINERS_CONF='$d/containers.conf' CONTAINERS_STORAGE_CONF='$d/storage.conf' \\
    CONTAINERS_REGISTRIES_CONF='$d/registries.conf' TMPDIR='$d/tmp' \\
    nsenter --target "\$pid" --mount --net --wd="\$wd" -- \\
    '$_podman_exe' --root '$d/root' --runroot '$d/runroot' --tmpdir '$d/tmp' --network-config-dir '$d/net.d' \\
        --cgroup-manager cgroupfs --events-backend file --storage-driver overlay "\$@"
EOF
    chmod 0755 "$KOVS_PODMAN_BIN"
}

dockerd_start() {
    local b t0 f deadline
    for b in podman conmon runc nsenter unshare tini-static iptables; do
        command -v "$b" >/dev/null || die "$b not found: KOVS_ENGINE=podman needs podman, conmon, runc and tini (scripts/install-deps.sh installs them)"
    done
    grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || die "KOVS_ENGINE=podman: no overlay filesystem"
    if [ -d "$KOVS_PODMAN_DIR" ]; then
        _log "  removing the podman directory of an earlier run of cluster $CLUSTER_PREFIX"
        dockerd_stop
    fi
    t0=$(date +%s%N)
    mkdir -p "$CLUSTER_DIR"
    machine_network_state > "$CLUSTER_DIR/machine-network.before"
    _podman_write_config
    ip netns add "$(dockerhost_ns)"
    in_underlay ip link set lo up
    _log "  starting podman's namespaces: network $(dockerhost_ns), a mount namespace of their own (state in $KOVS_PODMAN_DIR)"
    setsid nsenter --net="/run/netns/$(dockerhost_ns)" -- unshare --mount --propagation slave -- \
        bash -c "$_podmanhost_shell" kovs-podmanhost "$KOVS_PODMAN_DIR" >>"$CLUSTER_DIR/podman-holder.log" 2>&1 &
    disown   # dockerd_stop kills it with the namespace's other processes
    deadline=$(( $(date +%s) + 20 ))
    until _podman_holder_pid >/dev/null; do
        (( $(date +%s) <= deadline )) || { cat "$CLUSTER_DIR/podman-holder.log" >&2; die "podman's mount namespace did not come up"; }
        sleep 0.1
    done
    dk info --format '{{.Host.NetworkBackend}} {{.Store.GraphRoot}}' >"$CLUSTER_DIR/podman-info.log" 2>&1 ||
        { cat "$CLUSTER_DIR/podman-info.log" >&2; die "podman info failed in its namespaces"; }
    [ "$(cut -d' ' -f2 "$CLUSTER_DIR/podman-info.log")" = "$KOVS_PODMAN_DIR/root" ] ||
        die "podman does not use its own graph root: $(cat "$CLUSTER_DIR/podman-info.log")"
    # Images of earlier runs (node image, Debian bases).
    for f in "$KOVS_PODMAN_CACHE"/*.tar; do
        [ -e "$f" ] || continue
        dk load < "$f" >/dev/null 2>&1 || { _log "  cached image $f does not load; removing it"; rm -f "$f"; }
    done
    _log "  $(dk --version) ready in $(( ($(date +%s%N) - t0) / 1000000 )) ms (holder pid $(_podman_holder_pid))"
}

# podman_cache_save IMAGE...: each image as an archive for the next run,
# replacing the archive of an older image of the same name.
podman_cache_save() {
    local image id file base f
    mkdir -p "$KOVS_PODMAN_CACHE"
    for image in "$@"; do
        id=$(dk image inspect --format '{{.Id}}' "$image" 2>/dev/null | cut -c1-12) || continue
        # repository_tag_id.tar: '_' appears in none of the parts.
        base=$(tr -c 'A-Za-z0-9.:-' - <<<"${image##*/}" | sed 's/-$//'); base=${base/:/_}
        file=$KOVS_PODMAN_CACHE/${base}_$id.tar
        [ -e "$file" ] && continue
        _log "  saving $image for later runs ($file)"
        # Through stdout: podman's /var/lib is an overlay (its writes stay ours).
        if dk save --quiet "$image" > "$file.tmp" 2>/dev/null; then mv "$file.tmp" "$file"; else rm -f "$file.tmp"; continue; fi
        for f in "$KOVS_PODMAN_CACHE/${base}_"*.tar; do [ "$f" = "$file" ] || rm -f "$f"; done
    done
}

# The network's bridge with its gateway address(es), as Docker has it from
# `network create` on: CNI's bridge plugin makes it only at the first
# container's ADD (and adopts one that exists), and the podman host's side
# (the mock API server on 172.18.0.1) listens before any node runs.
podman_bridge_up() {
    local br
    br=$(dk network inspect --format '{{.NetworkInterface}}' "$DOCKER_NETWORK") || br=""
    [ -n "$br" ] || die "podman network $DOCKER_NETWORK: no bridge name"
    in_underlay ip link add "$br" mtu "$UNDERLAY_MTU" type bridge
    in_underlay ip addr add 172.18.0.1/16 dev "$br"
    [ "$IP_FAMILY" = ipv4 ] || in_underlay ip addr add fc00:f853:ccd:e793::1/64 dev "$br" nodad
    in_underlay ip link set "$br" up
}

# Processes of the cgroup tree of ours, in any hierarchy.
_podman_cgroup_pids() {
    local c
    for c in /sys/fs/cgroup/*/"$KOVS_PODMAN_CGROUP"; do
        [ -d "$c" ] && find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null
    done | sort -u
}

dockerd_stop() {
    local ns pid c d=$KOVS_PODMAN_DIR
    ns=$(dockerhost_ns)
    # The path this removes must be ours: /tmp/<prefix>-podman, prefix validated.
    [[ $d == /tmp/$CLUSTER_PREFIX-podman && $CLUSTER_PREFIX =~ ^[A-Za-z][A-Za-z0-9]{0,19}$ ]] ||
        die "refusing to remove podman directory '$d'"
    if _podman_holder_pid >/dev/null; then
        c=$(dk ps -aq 2>/dev/null) || c=""
        # shellcheck disable=SC2086
        [ -z "$c" ] || dk rm --force --volumes --time 5 $c >/dev/null 2>&1 || true
        dk network rm --force "$DOCKER_NETWORK" >/dev/null 2>&1 || true
    fi
    # The holder, the conmons (all in our network namespace), then whatever
    # still runs in our cgroups (a node podman could not stop).
    if ip netns list | grep -q "^$ns\b"; then
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    fi
    for pid in $(_podman_cgroup_pids); do kill -9 "$pid" 2>/dev/null || true; done
    wait_for "the podman cgroups ($KOVS_PODMAN_CGROUP) to empty" 10 bash -c "[ -z \"\$(find /sys/fs/cgroup/*/$KOVS_PODMAN_CGROUP -name cgroup.procs -exec cat {} + 2>/dev/null)\" ]" || true
    for c in /sys/fs/cgroup/*/"$KOVS_PODMAN_CGROUP"; do
        [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    if ip netns list | grep -q "^$ns\b"; then ip netns del "$ns" 2>/dev/null || true; fi
    # Our namespaces are gone with their last process: the mounts podman made
    # went with them (none was ever visible here), so this is plain files.
    if [ -d "$d" ]; then
        if grep -q " $d/" /proc/self/mountinfo; then
            _log "  podman directory $d has mounts in the machine's namespace; not removing it"
        else
            rm -rf --one-file-system "$d"
        fi
    fi
    if [ -s "$CLUSTER_DIR/machine-network.before" ]; then
        machine_network_state > "$CLUSTER_DIR/machine-network.after"
        if ! diff -u "$CLUSTER_DIR/machine-network.before" "$CLUSTER_DIR/machine-network.after" > "$CLUSTER_DIR/machine-network.diff"; then
            _log "error: the machine's own network state changed while podman ran (links, routes, iptables, nftables, forwarding):"
            cat "$CLUSTER_DIR/machine-network.diff" >&2
            # Kept where the caller can read it after CLUSTER_DIR is removed.
            cp "$CLUSTER_DIR/machine-network.diff" "/tmp/$CLUSTER_PREFIX-machine-network.diff"
        fi
    fi
}
