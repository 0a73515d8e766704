# shellcheck shell=bash source-path=SCRIPTDIR
# The docker node provider's node image (docker-cluster.sh sources this):
# debootstrapped from this machine's Debian suite with KOVS_NODE_PACKAGES and
# the kovs binaries' libraries, tagged by its recipe and cached in the
# private engine's data root (node_image_ensure).

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

# The one debootstrap both image kinds start from (this file's node image,
# kind-node-images.sh's debian:<tag> bases): a fresh work directory
# (_image_build_dir, removed by cluster_down if the script is interrupted)
# whose rootfs/ holds --variant=minbase of `suite` plus `pkgs`, in two stages,
# the second (package scripts) chrooted in private mount, network and pid
# namespaces with a policy-rc.d, so no package script can start a daemon or
# touch this machine's network. Sets _rootfs and _image_log; the caller
# finishes the rootfs, imports it and calls _debootstrap_done.
_debootstrap_rootfs() {
    local what=$1 suite=$2 mirror=$3; shift 3
    local pkgs=("$@") work attempt include=()
    [ ${#pkgs[@]} -eq 0 ] || include=(--include="$(IFS=,; echo "${pkgs[*]}")")
    mkdir -p "$KOVS_STATE/debootstrap-cache"
    work=$(mktemp -d "$KOVS_STATE/image-build.XXXXXX")
    _image_build_dir=$work
    _rootfs=$work/rootfs _image_log=$work/debootstrap.log
    _log "  building $what: debootstrap --variant=minbase $suite from $mirror${pkgs:+, ${#pkgs[@]} packages} (log $_image_log)"
    for attempt in 1 2; do
        rm -rf --one-file-system "$_rootfs"
        # Downloads and unpacks only; a private mount namespace in case
        # debootstrap mounts anything.
        _run_logged "download + unpack (attempt $attempt)" "$_image_log" \
            unshare --mount --propagation private -- \
            debootstrap --foreign --variant=minbase --components=main "${include[@]}" \
                --cache-dir="$KOVS_STATE/debootstrap-cache" "$suite" "$_rootfs" "$mirror" && break
        [ "$attempt" -eq 2 ] && return 1
        _log "    retrying once (network hiccup?)"
    done
    printf '#!/bin/sh\n# kovs image build: no package may start a service\nexit 101\n' > "$_rootfs/usr/sbin/policy-rc.d"
    chmod +x "$_rootfs/usr/sbin/policy-rc.d"
    # A throwaway root: dpkg need not fsync every file (halves the time).
    echo force-unsafe-io > "$_rootfs/etc/dpkg/dpkg.cfg.d/kovs-unsafe-io"
    _run_logged "configure packages" "$_image_log" \
        unshare --mount --net --pid --fork --kill-child --propagation private -- \
        chroot "$_rootfs" /debootstrap/debootstrap --second-stage || return 1
    rm -f "$_rootfs/usr/sbin/policy-rc.d" "$_rootfs/etc/dpkg/dpkg.cfg.d/kovs-unsafe-io"
}

# What no image keeps: downloaded packages, apt lists, logs.
_debootstrap_trim() {
    rm -rf "$_rootfs"/var/cache/apt/archives/*.deb "$_rootfs"/var/lib/apt/lists/* "$_rootfs"/var/log/*.log
}

_debootstrap_done() {
    rm -rf --one-file-system "$_image_build_dir"
    _image_build_dir=""
}

# The node image: the debootstrap above with the node's packages, then
# docker import.
_node_image_build() {
    local tag=$1 suite=$2 mirror=$3; shift 3
    local pkgs=("$@") t0
    t0=$(date +%s)
    _log "    (once per package list: the image $tag is cached in $KOVS_DOCKER_ROOT)"
    _debootstrap_rootfs "node image $tag" "$suite" "$mirror" "${pkgs[@]}" || return 1
    # kovs-agent runs OVS itself (ovs.manage: true); once a node boots systemd,
    # the package's own OVS services must not start a second one.
    chroot "$_rootfs" systemctl mask --quiet openvswitch-switch.service ovs-vswitchd.service ovsdb-server.service \
        ovs-record-hostname.service 2>>"$_image_log" || true
    _debootstrap_trim
    _log "    importing into the private Docker engine ($(du -sm --one-file-system "$_rootfs" | cut -f1) MB)"
    tar -C "$_rootfs" --numeric-owner --one-file-system -cf - . |
        dk import -m "kovs node: debootstrap --variant=minbase $suite + ${pkgs[*]}" \
            -c 'CMD ["sleep", "infinity"]' -c "LABEL kovs.suite=$suite" -c "LABEL kovs.packages=\"${pkgs[*]}\"" \
            - "$tag" >/dev/null
    _debootstrap_done
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
    key=$( { echo "$suite"; printf '%s\n' "${pkgs[@]}"; declare -f _debootstrap_rootfs _debootstrap_trim _node_image_build; } |
        sha256sum | cut -c1-12)
    tag=$KOVS_NODE_IMAGE_REPO:$key
    # shellcheck disable=SC2034 # docker-cluster.sh's node_up runs it
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

