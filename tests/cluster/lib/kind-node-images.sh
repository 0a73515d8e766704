# shellcheck shell=bash
# Images of the kind-node provider (kind-node-cluster.sh), all made in the
# private Docker engine of docker-cluster.sh, none fetched from a registry:
#
#   debian:<tag>, debian:<tag>-slim   the bases kind/Dockerfile names (Docker Hub
#                      is unreachable here): debootstrap --variant=minbase of the
#                      same suite, laid out as Debian's official images are (deb822
#                      apt sources, the slim variant's dpkg path excludes), imported
#                      under exactly those tags. Built once and cached.
#   kovs:dev           kind/Dockerfile itself, built with --build-arg KOVS_BINARIES=prebuilt:
#                      the binaries of KOVS_BUILD instead of a compile in the image;
#                      the runtime stage is the shipped one, which installs its
#                      Debian packages with apt from the Debian mirror (through a
#                      relay: the engine's network namespace has no way out).
#   kovs-pod:1         the test pods' image: busybox (Debian's busybox-static), which
#                      serves HTTP on port 8000 as the pods' workload.
# and the load into every node's containerd, as `kind load docker-image` does
# (docker save | ctr --namespace k8s.io images import).

KOVS_IMAGE=${KOVS_IMAGE:-kovs:dev}
# The build whose binaries go into the image: KOVS_BUILD unless that is a
# sanitizer build (its kovs-cni cannot be the static binary the image ships).
KOVS_IMAGE_BUILD=${KOVS_IMAGE_BUILD:-$KOVS_BUILD}
KOVS_POD_IMAGE=kovs-pod:1
# BuildKit (kind users' builder; it builds only the stages the target needs,
# so the compile stage is skipped) through the engine's own CLI: the docker.io
# package's 20.10 client speaks BuildKit's session protocol by itself, where a
# newer CLI would need the buildx plugin.
KOVS_BUILD_CLI=${KOVS_BUILD_CLI:-/usr/bin/docker}

dk_build() { DOCKER_BUILDKIT=1 "$KOVS_BUILD_CLI" -H "unix://$KOVS_DOCKER_SOCK" build "$@"; }
# With podman, its own build (buildah): stages the target does not need are
# skipped too (--skip-unused-stages, the default); nothing is pulled (the
# bases are local); rlimits and cgroup parent as the nodes'.
if [ "$KOVS_ENGINE" = podman ]; then
    dk_build() {
        local a=() x
        # --progress is BuildKit's; podman build has no such option.
        while [ $# -gt 0 ]; do
            if [ "$1" = --progress ]; then shift 2; else a+=("$1"); shift; fi
        done
        mapfile -t x < <(engine_build_args)
        dk build "${x[@]}" --pull=never "${a[@]}"
    }
fi

# The Debian tag kind/Dockerfile builds from (its DEBIAN_TAG default) and the suite in it.
_dockerfile_debian_tag() {
    sed -n 's/^ARG DEBIAN_TAG=\([a-z0-9.-]*\)$/\1/p' "$KOVS_REPO/kind/Dockerfile" | head -1
}

# debian:<tag> and debian:<tag>-slim from one debootstrap --variant=minbase.
debian_base_ensure() {
    local tag suite mirror rootfs t0
    tag=$(_dockerfile_debian_tag)
    [ -n "$tag" ] || die "kind/Dockerfile: no 'ARG DEBIAN_TAG=...' line to take the base image's tag from"
    suite=${tag%%-*}
    if dk image inspect "debian:$tag" >/dev/null 2>&1 && dk image inspect "debian:$tag-slim" >/dev/null 2>&1; then
        _log "  base images debian:$tag and debian:$tag-slim cached"
        return 0
    fi
    command -v debootstrap >/dev/null || die "debootstrap not found (scripts/install-deps.sh installs it)"
    mirror=$(_debian_mirror "$suite") || exit 1
    t0=$(date +%s)
    _debootstrap_rootfs "debian:$tag (+ -slim) for kind/Dockerfile" "$suite" "$mirror" || return 1
    # shellcheck disable=SC2154 # set by node-image.sh's _debootstrap_rootfs
    rootfs=$_rootfs
    # As Debian's official images have them: deb822 sources (the Dockerfile's
    # DEBIAN_SNAPSHOT sed rewrites exactly these URIs), no sources.list.
    rm -f "$rootfs/etc/apt/sources.list"
    cat > "$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    _debootstrap_trim
    _debian_import "$rootfs" "debian:$tag" "$suite"
    # The slim variant: what Debian's slim images leave out, and keep out.
    cat > "$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
    find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
    find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    _debian_import "$rootfs" "debian:$tag-slim" "$suite"
    _debootstrap_done
    [ "$KOVS_ENGINE" = docker ] || podman_cache_save "debian:$tag" "debian:$tag-slim"
    _log "  base images built in $(( $(date +%s) - t0 ))s"
}

_debian_import() {
    local rootfs=$1 tag=$2 suite=$3
    tar -C "$rootfs" --numeric-owner --one-file-system -cf - . |
        dk import -m "kovs: debootstrap --variant=minbase $suite, standing in for Docker Hub's $tag" \
            -c 'CMD ["bash"]' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            -c "LABEL kovs.stand-in=$tag" - "$tag" >/dev/null
}

# --- the apt relay for the image build -------------------------------------------
# The build's RUN steps live in the engine's network namespace, which has no
# route out (by design: nothing of it touches the machine's network). They
# reach deb.debian.org through a relay: a TCP listener on 127.0.0.1:80 of that
# namespace (the build uses --network host and --add-host deb.debian.org:127.0.0.1)
# hands each connection over a unix socket to a process in the machine's
# namespace, which connects to the real mirror. Nothing is configured on the
# machine; the relay only lives while the image builds.
_apt_relay_pids=()
apt_relay_up() {
    local sock=$KOVS_DOCKER_RUN/apt-relay.$CLUSTER_PREFIX.sock
    rm -f "$sock"
    # Own process groups: apt_relay_down ends each listener with its forked children.
    setsid socat "UNIX-LISTEN:$sock,fork,mode=600" TCP:deb.debian.org:80 2>>"$CLUSTER_DIR/apt-relay.log" &
    _apt_relay_pids+=($!)
    wait_for "the apt relay's socket" 10 test -S "$sock" || die "the apt relay did not start (log $CLUSTER_DIR/apt-relay.log)"
    setsid ip netns exec "$(dockerhost_ns)" socat TCP-LISTEN:80,bind=127.0.0.1,fork,reuseaddr "UNIX-CONNECT:$sock" \
        2>>"$CLUSTER_DIR/apt-relay.log" &
    _apt_relay_pids+=($!)
    wait_for "the apt relay's listener" 10 in_underlay bash -c 'exec 3<>/dev/tcp/127.0.0.1/80' ||
        die "the apt relay did not listen (log $CLUSTER_DIR/apt-relay.log)"
}
apt_relay_down() {
    local p
    for p in "${_apt_relay_pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
    for p in "${_apt_relay_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    _apt_relay_pids=()
    rm -f "$KOVS_DOCKER_RUN/apt-relay.$CLUSTER_PREFIX.sock"
}

# --- kovs:dev from kind/Dockerfile ------------------------------------------------

# The build context of the Dockerfile's prebuilt stage: the /out layout its
# source stage makes, from the binaries of KOVS_BUILD and kind/kovs-node-init.
_prebuilt_context() {
    local ctx=$1 b
    if ldd "$KOVS_IMAGE_BUILD/cni/kovs-cni" >/dev/null 2>&1; then
        _log "$KOVS_IMAGE_BUILD/cni/kovs-cni is dynamically linked (a sanitizer build?): the image ships a static one."
        _log "Build without -Dsanitize=true and name it in KOVS_IMAGE_BUILD (scripts/test.sh does)."
        return 1
    fi
    mkdir -p "$ctx/usr/local/bin"
    for b in agent/kovs-agent cni/kovs-cni ctl/kovsctl; do
        install -m 0755 "$KOVS_IMAGE_BUILD/$b" "$ctx/usr/local/bin/${b##*/}" || return 1
    done
    install -m 0755 "$KOVS_REPO/kind/kovs-node-init" "$ctx/usr/local/bin/kovs-node-init"
    # What the source stage derives with ldd + dpkg -S inside the build image,
    # derived the same way here, where these binaries were linked.
    KOVS_BUILD=$KOVS_IMAGE_BUILD _kovs_library_packages > "$ctx/runtime-packages" || return 1
}

kovs_image_build() {
    local ctx t0 log=$CLUSTER_DIR/kovs-image-build.log
    debian_base_ensure || die "building the base images failed"
    ctx=$CLUSTER_DIR/kovs-image-context
    rm -rf "$ctx"
    _prebuilt_context "$ctx" || die "preparing the prebuilt binaries for kind/Dockerfile failed"
    t0=$(date +%s)
    _log "  docker build --file kind/Dockerfile --build-arg KOVS_BINARIES=prebuilt --tag $KOVS_IMAGE (log $log)"
    apt_relay_up
    local rc=0
    dk_build --file "$KOVS_REPO/kind/Dockerfile" --build-arg KOVS_BINARIES=prebuilt \
        --network host --add-host deb.debian.org:127.0.0.1 --progress plain \
        --tag "$KOVS_IMAGE" "$ctx" >"$log" 2>&1 || rc=$?
    apt_relay_down
    if [ $rc -ne 0 ]; then
        tail -25 "$log" | sed 's/^/      /' >&2
        die "docker build of kind/Dockerfile failed (exit $rc; log $log)"
    fi
    rm -rf "$ctx"
    _log "  $KOVS_IMAGE built in $(( $(date +%s) - t0 ))s ($(dk image inspect -f '{{.Size}}' "$KOVS_IMAGE" | awk '{printf "%d MB", $1 / 1000000}'))"
}

# The test pods' image: busybox only, its HTTP server on port 8000 as the workload.
pod_image_ensure() {
    local work bb
    dk image inspect "$KOVS_POD_IMAGE" >/dev/null 2>&1 && return 0
    bb=$(command -v busybox || true)
    if [ -z "$bb" ] || ldd "$bb" >/dev/null 2>&1; then die "a static busybox is needed for the pod image (Debian's busybox-static; scripts/install-deps.sh installs it)"; fi
    work=$(mktemp -d "$KOVS_STATE/pod-image.XXXXXX")
    mkdir -p "$work/bin" "$work/srv" "$work/etc" "$work/proc" "$work/sys" "$work/dev" "$work/tmp"
    cp "$bb" "$work/bin/busybox"
    for a in sh ls cat ip ping nc wget httpd sleep hostname; do ln -s busybox "$work/bin/$a"; done
    echo "kovs test pod" > "$work/srv/index.html"
    echo 'root:x:0:0:root:/:/bin/sh' > "$work/etc/passwd"
    tar -C "$work" --numeric-owner -cf - . |
        dk import -m "kovs test pod: busybox" -c 'CMD ["/bin/busybox", "httpd", "-f", "-p", "8000", "-h", "/srv"]' \
            - "$KOVS_POD_IMAGE" >/dev/null
    rm -rf --one-file-system "$work"
}

# What `kind load docker-image` does: the image into the node's containerd, in
# the k8s.io namespace kubelet's pods use.
image_load() {
    local n=$1 image=$2
    if [ "$KOVS_ENGINE" = podman ]; then
        # podman names a local image localhost/NAME and saves it so; the
        # harness's own images go in under the name a pod spec's NAME means
        # (docker.io/library/NAME), as with docker. (kovs:dev goes through
        # kovs-kind's own podman path: kind_step_load_image.)
        dk tag "$image" "docker.io/library/$image" || die "podman tag $image docker.io/library/$image failed"
        image=docker.io/library/$image
    fi
    dk save "$image" | dk exec -i "$(node_container "$n")" ctr --namespace k8s.io images import --digests - >/dev/null ||
        die "loading $image into node $n's containerd failed"
}
