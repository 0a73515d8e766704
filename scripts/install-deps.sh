#!/usr/bin/env bash
# Installs every Debian 12 package that kovs needs to build, test and run its
# demo. Idempotent: packages already present are skipped by apt, and the apt
# index is refreshed only when something is missing.
set -euo pipefail

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

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get install)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
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
echo "install-deps: done"
