#!/usr/bin/env bash
# kovs-kind's podman path (KIND_EXPERIMENTAL_PROVIDER=podman) against a real,
# rootful podman (Debian 12's 4.3): the commands kovs-kind sends the engine,
# and the shapes it reads back, are podman's own, not a fake's.
#
#   - preflight: `podman info` read as podman prints it (Host.* fields), and
#     a podman network made with --opt mtu=1400 found at MTU 1400;
#   - load --no-build: `podman image inspect` and `podman exec <node> uname -m`
#     on real containers standing in for kind's nodes: an image whose
#     architecture is not the nodes' is refused with the fixing command; one
#     that is is saved with `podman save` into the archive kind loads.
#
# What cannot run here, and stands in: kind itself (no Debian 12 package; its
# release downloads and kindest/node need github.com and registry-1.docker.io,
# which this machine cannot resolve) and kubectl. The stand-ins on PATH take
# kind's and kubectl's command lines as kovs-kind gives them: `kind get nodes
# --name N` lists the node containers, `kind load image-archive FILE --name N`
# checks that FILE is a docker-archive holding the image (as kind's loader
# reads it) and copies it into every node; kubectl's rollout answers. The
# nodes run busybox with no network (--network none): nothing of this
# machine's own networking changes. Skipped (77) without root or podman.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "needs root (rootful podman, as kind's podman provider)"; exit 77; }
command -v podman >/dev/null || { echo "podman not installed (scripts/install-deps.sh installs it)"; exit 77; }
busybox=$(command -v busybox) || { echo "busybox not installed (scripts/install-deps.sh installs busybox-static)"; exit 77; }
file "$busybox" 2>/dev/null | grep -q "statically linked" || [ ! -x /usr/bin/file ] ||
    { echo "$busybox is not static: it cannot run alone in a node image"; exit 77; }

prefix=kovs-podman-test   # every container, image and network of this test
name=$prefix              # the "kind cluster"
nodes=("$name-control-plane" "$name-worker")
work=$(mktemp -d /tmp/$prefix.XXXXXX)
checks=0
pass() { checks=$((checks + 1)); echo "ok $checks - $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
    podman rm --force --time 0 "${nodes[@]}" >/dev/null 2>&1 || true
    podman rmi --force "localhost/$prefix:amd64" "localhost/$prefix:arm64" >/dev/null 2>&1 || true
    podman network rm --force "$prefix-net" >/dev/null 2>&1 || true
    [[ $work == /tmp/$prefix.* ]] && rm -rf "$work"
    rm -f "/tmp/kovs-kind-$name.tar"
}
trap cleanup EXIT
cleanup

# Images, built by podman from nothing but a static busybox (no registry):
# one claims linux/amd64, one linux/arm64 (only the metadata differs, which
# is all kovs-kind's check reads).
mkdir -p "$work/ctx/rootfs/bin"
cp "$busybox" "$work/ctx/rootfs/bin/busybox"
for tool in sh sleep test uname; do ln -s busybox "$work/ctx/rootfs/bin/$tool"; done
printf 'FROM scratch\nCOPY rootfs/ /\nENV PATH=/bin\n' > "$work/ctx/Containerfile"
for arch in amd64 arm64; do
    podman build --quiet --no-cache --arch "$arch" --tag "localhost/$prefix:$arch" --file "$work/ctx/Containerfile" "$work/ctx" >/dev/null
done
[ "$(podman image inspect --format '{{.Architecture}}' "localhost/$prefix:arm64")" = arm64 ] || fail "podman build --arch arm64 did not record arm64"
# Low rlimits: podman asks for its defaults (nofile 1048576, nproc 4194304)
# or the host's, and this machine's runc may lower limits but not raise
# them ("error setting rlimit type 7"); the nodes only sleep.
for n in "${nodes[@]}"; do
    podman run --detach --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --name "$n" \
        "localhost/$prefix:amd64" sleep 600 >/dev/null
done
node_arch=$(podman exec "${nodes[0]}" uname -m)

# The stand-ins for kind and kubectl (see above).
mkdir -p "$work/bin"
cat > "$work/bin/kind" <<EOF
#!/bin/bash
printf 'kind %s\n' "\$*" >> "$work/calls"
case "\$1 \$2" in
  "version ") echo "kind v0.23.0 go1.22 linux/amd64 (stand-in: tests/integration/kind/podman_engine_test.sh)" ;;
  "get clusters") echo "$name" ;;
  "get nodes") [ "\$4" = "$name" ] && printf '%s\n' ${nodes[*]} ;;
  "load image-archive")
     archive=\$3
     tar -xOf "\$archive" manifest.json > "$work/manifest.json" || { echo "ERROR: \$archive is not a docker-archive" >&2; exit 1; }
     for n in ${nodes[*]}; do podman cp "\$archive" "\$n:/loaded.tar" || exit 1; done ;;
  *) echo "stand-in kind: \$* not handled" >&2; exit 1 ;;
esac
EOF
cat > "$work/bin/kubectl" <<EOF
#!/bin/bash
printf 'kubectl %s\n' "\$*" >> "$work/calls"
case " \$* " in
  *" version --client "*) echo "Client Version: v1.30.0 (stand-in)" ;;
  *" rollout "*) echo "daemonset.apps/kovs-agent rolled out (stand-in)" ;;
  *) echo "stand-in kubectl: \$* not handled" >&2; exit 1 ;;
esac
EOF
chmod +x "$work/bin/kind" "$work/bin/kubectl"
kovs_kind() { PATH="$work/bin:$PATH" KIND_EXPERIMENTAL_PROVIDER=podman "$root/kind/kovs-kind" "$@"; }

# preflight reads podman's own info and network shapes.
podman network create --opt mtu=1400 "$prefix-net" >/dev/null
out=$(KIND_EXPERIMENTAL_PODMAN_NETWORK=$prefix-net kovs_kind preflight --name "$name" 2>&1) || true
grep -q "the daemon does not answer" <<<"$out" && fail "preflight could not read podman info: $out"
grep -Eq "ok +podman +podman version 4" <<<"$out" || fail "preflight does not name podman's version: $out"
grep -Eq "ok +network +$prefix-net: MTU 1400 \(gw0 and pods 1350\)" <<<"$out" ||
    fail "preflight does not read the podman network's MTU 1400: $out"
pass "preflight on podman $(podman --version | awk '{print $3}'): its info and a network made with --opt mtu=1400 read as podman prints them"

# An image for another architecture than the nodes' is refused, nothing loaded.
: > "$work/calls"
out=$(kovs_kind load --no-build --name "$name" --image "localhost/$prefix:arm64" 2>&1) && fail "an arm64 image was loaded onto $node_arch nodes: $out"
want=amd64; [ "$node_arch" = aarch64 ] && want=arm64
grep -q "image localhost/$prefix:arm64 is built for linux/arm64, but node ${nodes[0]} is linux/$want: it cannot run there. Build it for the nodes, then load it: podman build --platform linux/$want" <<<"$out" ||
    fail "load does not refuse the arm64 image with the fix: $out"
grep -q "^kind load" "$work/calls" && fail "kind load ran for a refused image: $(cat "$work/calls")"
pass "load --no-build refuses localhost/$prefix:arm64 on linux/$want nodes (podman image inspect, podman exec uname -m) and says how to build it"

# The nodes' architecture: saved by podman, loaded by kind's loader, restarted.
out=$(kovs_kind load --no-build --name "$name" --image "localhost/$prefix:amd64" 2>&1) || fail "load of the amd64 image failed: $out"
grep -q "image localhost/$prefix:amd64 is linux/amd64, as every node (2)" <<<"$out" || fail "load does not report the matching architecture: $out"
grep -q "^kind load image-archive /tmp/kovs-kind-$name.tar --name $name" "$work/calls" || fail "kind was not given podman's archive: $(cat "$work/calls")"
jq -e --arg t "localhost/$prefix:amd64" '.[0].RepoTags | index($t)' "$work/manifest.json" >/dev/null ||
    fail "podman save's archive does not hold the image kind would load: $(cat "$work/manifest.json")"
for n in "${nodes[@]}"; do podman exec "$n" test -s /loaded.tar || fail "the archive did not reach node $n"; done
[ ! -e "/tmp/kovs-kind-$name.tar" ] || fail "load left /tmp/kovs-kind-$name.tar behind"
grep -q "rollout restart daemonset/kovs-agent" "$work/calls" || fail "the agents were not restarted: $(cat "$work/calls")"
pass "load --no-build of localhost/$prefix:amd64: podman save's docker-archive (RepoTags as kind reads them) reached both nodes, the archive removed, the agents restarted"
echo "$checks passed, 0 failed"
