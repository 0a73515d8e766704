#!/usr/bin/env bash
# Installs every Debian 12 package that kovs needs to build, test and run its
# demo. Idempotent: packages already present are skipped by apt, and the apt
# index is refreshed only when something is missing.
#
#   scripts/install-deps.sh            the amd64 build, tests and demo
#   scripts/install-deps.sh --arm64    also the aarch64 cross build run under
#                                      qemu-user (cross/aarch64-linux-gnu.ini)
set -euo pipefail

arm64=0
case ${1:-} in
  "") ;;
  --arm64) arm64=1 ;;
  *) echo "install-deps: unknown argument '$1' (expected --arm64 or nothing)" >&2; exit 2 ;;
esac

packages=(
  # build
  build-essential meson ninja-build pkg-config clang libclang-rt-14-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libnl-3-dev libnl-route-3-dev
  libnl-genl-3-dev libcli11-dev libyaml-cpp-dev
  libmbedtls-dev libcpp-httplib-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libnftnl-dev libmnl-dev
  # runtime and tests
  openvswitch-switch openvswitch-common containernetworking-plugins iproute2
  ethtool iperf3 bc procps systemd dbus python3 socat jq util-linux
  iputils-ping openssl curl
  # kovs-kind's podman path against a real rootful podman
  # (tests/integration/kind/podman_engine_test.sh), a static busybox its node images hold
  podman busybox-static
  # the Services e2e scenario: kube-proxy's two modes (iptables above), the
  # nodes' conntrack table, a CoreDNS-shaped DNS server and a DNS client
  nftables conntrack dnsmasq-base bind9-dnsutils tcpdump
  # the docker node provider of tests/cluster/local-cluster: a private Docker engine
  # (started by the harness inside its own network namespace, never as the
  # machine's service) and debootstrap for the node image
  docker.io containerd runc tini iptables debootstrap debian-archive-keyring
  # the kind-node provider: the test pods' image (static busybox), the kubelet
  # runner's manifest reader, conntrack for the leak checks
  busybox-static python3-yaml conntrack
  # hostile-input tests: forged VXLAN packets sent from the underlay
  python3-scapy
  # rebuilds: meson uses ccache by itself when it is installed
  ccache
  # the OVN companion scenario (tests/e2e/ovn_companion_test.sh): OVN 23.03 as
  # the foreign OVS-based CNI datapath (northd + NB/SB, ovn-controller); the
  # tests start their daemons inside the node namespaces, never as services
  ovn-central ovn-host
)

# The aarch64 cross build: Debian's cross toolchain (with its UBSan runtime),
# qemu-user to run the tests, and the :arm64 -dev packages of the libraries
# kovs links (Debian multiarch; the headers are shared with the amd64 ones).
# yaml-cpp's -dev package is not Multi-Arch: same and cannot be installed next
# to the amd64 one: its arm64 archive goes to /usr/local (below).
arm64_packages=(
  crossbuild-essential-arm64 qemu-user-static libubsan1:arm64
  libspdlog-dev:arm64 libfmt-dev:arm64 libnl-3-dev:arm64 libnl-route-3-dev:arm64
  libmbedtls-dev:arm64 libcpp-httplib-dev:arm64 libssl-dev:arm64 libgtest-dev:arm64
  libgmock-dev:arm64 libbenchmark-dev:arm64 libnftnl-dev:arm64 libmnl-dev:arm64
)
arm64_yaml=/usr/local/lib/aarch64-linux-gnu
if [ "$arm64" -eq 1 ]; then
  packages+=("${arm64_packages[@]}")
fi

# yaml-cpp for arm64, from Debian's own package of the version the amd64
# headers are (the static archive and a pkg-config file naming where it is).
install_arm64_yaml_cpp() {
  [ -f "$arm64_yaml/libyaml-cpp.a" ] && [ -f "$arm64_yaml/pkgconfig/yaml-cpp.pc" ] && return
  local version tmp
  version=$(dpkg-query -W -f='${Version}' libyaml-cpp-dev)
  tmp=$(mktemp -d)
  # apt-get download runs as _apt where it can: a directory it may write.
  chmod 755 "$tmp"
  (cd "$tmp" && apt-get download -qq "libyaml-cpp-dev:arm64=$version" 2>/dev/null) ||
    { rm -rf "$tmp"; echo "install-deps: cannot download libyaml-cpp-dev:arm64=$version" >&2; exit 1; }
  dpkg -x "$tmp"/libyaml-cpp-dev_*_arm64.deb "$tmp/x"
  mkdir -p "$arm64_yaml/pkgconfig"
  install -m 644 "$tmp/x/usr/lib/aarch64-linux-gnu/libyaml-cpp.a" "$arm64_yaml/"
  sed "s|^libdir=.*|libdir=$arm64_yaml|" "$tmp/x/usr/lib/aarch64-linux-gnu/pkgconfig/yaml-cpp.pc" > "$arm64_yaml/pkgconfig/yaml-cpp.pc"
  rm -rf "$tmp"
  echo "install-deps: yaml-cpp $version for arm64 in $arm64_yaml"
}

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get install)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  [ "$arm64" -eq 1 ] && install_arm64_yaml_cpp
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if [ "$arm64" -eq 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
fi
apt-get update -qq
# --no-install-recommends keeps the machine's own OVS service from being pulled
# in more than needed; policy-rc.d stops package scripts from starting daemons
# on the host (tests start their own, inside private namespaces). That matters
# most for docker.io and containerd: a Docker engine started on the host would
# add a bridge, iptables rules and ip_forward to the machine's own network.
# A policy-rc.d that was already there is set aside for the install and put
# back afterwards, whatever it allowed.
policy=/usr/sbin/policy-rc.d
saved_policy=""
if [ -e "$policy" ]; then
  saved_policy=$(mktemp /usr/sbin/policy-rc.d.kovs-saved.XXXXXX)
  cp -p "$policy" "$saved_policy"
fi
restore_policy() {
  if [ -n "$saved_policy" ]; then mv -f "$saved_policy" "$policy"; else rm -f "$policy"; fi
}
trap restore_policy EXIT
printf '#!/bin/sh\n# kovs install-deps: no package may start a service\nexit 101\n' > "$policy"
chmod +x "$policy"
apt-get install -y -qq --no-install-recommends "${missing[@]}"

# On a machine booted with systemd, the packages also enabled docker.service,
# docker.socket, containerd.service and the OVN units for the next boot. kovs never uses the
# machine's engine (tests/cluster/lib/docker-cluster.sh runs a private one in a network
# namespace), so when this script installed them, they stay disabled.
for p in docker.io containerd ovn-central ovn-host; do
  [[ " ${missing[*]} " == *" $p "* ]] || continue
  if command -v systemctl >/dev/null; then
    case $p in
      docker.io) systemctl disable --quiet docker.service docker.socket 2>/dev/null || true ;;
      containerd) systemctl disable --quiet containerd.service 2>/dev/null || true ;;
      ovn-central) systemctl disable --quiet ovn-central.service ovn-northd.service ovn-ovsdb-server-nb.service \
                     ovn-ovsdb-server-sb.service 2>/dev/null || true ;;
      ovn-host) systemctl disable --quiet ovn-host.service ovn-controller.service 2>/dev/null || true ;;
    esac
  fi
done
for d in dockerd containerd ovn-northd ovn-controller; do
  if pgrep -x "$d" >/dev/null; then
    echo "install-deps: note: a $d is running on this machine (not started by this script; kovs does not use it)" >&2
  fi
done
[ "$arm64" -eq 1 ] && install_arm64_yaml_cpp
echo "install-deps: done"
