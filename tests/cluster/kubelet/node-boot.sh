#!/bin/bash
# PID 1's child in a kind-node node container (tests/cluster/lib/kind-node-cluster.sh):
# what kindest/node's entrypoint and its systemd do before kubelet runs, as far
# as containerd needs it, then containerd itself in the foreground.
#   - / becomes rshared (kind's entrypoint does the same), so mounts made on the
#     node reach containers with HostToContainer propagation;
#   - a writable cgroup tree of the node's own: Docker mounts the cgroup
#     hierarchies read-only, and runc must create its containers' cgroups. With
#     the node's private cgroup namespace each hierarchy mounted here is the
#     node container's own subtree, so nothing lands elsewhere in the machine's;
#   - the CNI plugins kind ships in /opt/cni/bin (host-local, portmap, loopback,
#     ptp; Debian keeps them in /usr/lib/cni) and an empty /etc/cni/net.d;
#   - the rule kube-proxy keeps for the kubernetes Service (KOVS_SERVICE_DNAT,
#     "SERVICE_IP:PORT=API_IP:PORT", from the node's docker run): every boot
#     starts with empty iptables, and kind's kube-proxy puts it back;
#   - containerd with its CRI plugin off (kubelet here is the kovs-kubelet
#     runner, which drives containerd through ctr), and the runner itself
#     once the harness configured it (start-kubelet.sh), at every boot.
set -euo pipefail

mount --make-rshared /

# cgroup v1: one mount per hierarchy, co-mounted controllers together
# (cpu,cpuacct), each name also reachable alone as on a normal system.
mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup
declare -A hierarchy=()
while read -r name hid _ enabled; do
    [[ $name == \#* ]] && continue
    if [ "$enabled" != 1 ] || [ "$hid" = 0 ]; then continue; fi
    hierarchy[$hid]+="${hierarchy[$hid]:+,}$name"
done < /proc/cgroups
for hid in "${!hierarchy[@]}"; do
    ctrls=${hierarchy[$hid]}
    mkdir -p "/sys/fs/cgroup/$ctrls"
    mount -t cgroup -o "$ctrls" cgroup "/sys/fs/cgroup/$ctrls"
    if [[ $ctrls == *,* ]]; then
        IFS=, read -ra each <<<"$ctrls"
        for c in "${each[@]}"; do ln -s "$ctrls" "/sys/fs/cgroup/$c"; done
    fi
done
mkdir -p /sys/fs/cgroup/systemd
mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd

mkdir -p /opt/cni/bin /etc/cni/net.d /etc/containerd
for p in host-local portmap loopback ptp; do install -m 0755 "/usr/lib/cni/$p" "/opt/cni/bin/$p"; done

if [ -n "${KOVS_SERVICE_DNAT:-}" ]; then
    svc=${KOVS_SERVICE_DNAT%%=*} api=${KOVS_SERVICE_DNAT#*=}
    iptables -t nat -A OUTPUT -d "${svc%:*}/32" -p tcp --dport "${svc##*:}" -j DNAT --to-destination "$api"
fi

cat > /etc/containerd/config.toml <<'EOF'
version = 2
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[plugins."io.containerd.internal.v1.opt"]
  path = "/opt/containerd"
EOF
# The runner waits for containerd itself.
"$(dirname "$0")/start-kubelet.sh" &
exec containerd --config /etc/containerd/config.toml --log-level "${CONTAINERD_LOG_LEVEL:-info}"
