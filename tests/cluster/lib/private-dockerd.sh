# shellcheck shell=bash source-path=SCRIPTDIR
# The docker node provider's private Docker engine (docker-cluster.sh sources
# this; see its header for why the engine is private): dockerd_start and
# dockerd_stop, one engine at a time for the one data root.

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
    # Our own config file: a daemon.json of the machine's own Docker is not
    # ours. (dockerd 20.10 still writes its identity to /etc/docker/key.json;
    # no option moves it.) For ipv6 and dual clusters, IPv6 as kind needs it:
    # dockerd 20.10 NATs IPv6 (ip6tables) only as an experimental feature.
    if [ "$IP_FAMILY" = ipv4 ]; then
        echo '{}' > "$KOVS_DOCKER_RUN/daemon.json"
    else
        echo '{"ipv6": true, "fixed-cidr-v6": "fd00:d0c:ce::/64", "experimental": true, "ip6tables": true}' > "$KOVS_DOCKER_RUN/daemon.json"
    fi
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

