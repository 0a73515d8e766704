#!/usr/bin/env bash
# Installs every Debian 12 package that kovs needs to build, test and run its
# demo. Idempotent: packages already present are skipped by apt, and the apt
# index is refreshed only when something is missing.
set -euo pipefail

packages=(
  # build
  build-essential meson ninja-build pkg-config clang libclang-rt-14-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libnl-3-dev libnl-route-3-dev
  libnl-genl-3-dev libcli11-dev libyaml-cpp-dev libcurl4-openssl-dev
  libcpp-httplib-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  # runtime and tests
  openvswitch-switch openvswitch-common containernetworking-plugins iproute2
  ethtool iperf3 bc procps systemd dbus python3 socat jq util-linux
  iputils-ping openssl
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
# on the host (tests start their own, inside private namespaces).
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[ $created_policy -eq 1 ] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
