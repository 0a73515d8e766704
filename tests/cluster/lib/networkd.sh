# shellcheck shell=bash
# A real systemd-networkd (and the dbus-daemon --system that networkctl needs)
# inside a cluster node, as on a node whose image runs networkd with a
# catch-all .network file. Provider-neutral: it only uses in_node and
# node_dir, so it works on network-namespace and Docker nodes alike.
#
# The daemons live in a mount namespace of their own inside the node (a
# holder process keeps it): tmpfs on /run/systemd and /run/dbus,
# /run/systemd/container = docker and a read-only sysfs (so networkd does not
# wait for udev), and /etc/systemd/network bind-mounted from the agent's
# networkdDropinDir, which also gets the catch-all file. The node's other
# processes never see these mounts; killing the node's processes (cluster_down)
# removes them.
#
#   networkd_up N            holder + dbus + networkd, waits until networkctl answers
#   networkd_restart N       SIGTERM networkd, start it again
#   networkctl_in N ARGS...  networkctl inside node N's networkd namespace
#   networkd_setup_state N LINK   SETUP column of `networkctl list` (unmanaged, configured, ...)

_nd_dir() { echo "$(node_dir "$1")/networkd-run"; }
_nd_pid() { cat "$(_nd_dir "$1")/$2.pid"; }
_nd_in_ns() { local n=$1; shift; in_node "$n" nsenter --target "$(_nd_pid "$n" holder)" --mount -- "$@"; }

# Runs inside `unshare --mount --propagation private` in the node: only ever
# mounts over paths of that new mount namespace.
# shellcheck disable=SC2016
_ND_SETUP='set -e
dropins=$1 ready=$2
mkdir -p /run/systemd && mount -t tmpfs -o mode=0755 tmpfs /run/systemd
mkdir -p /run/dbus && mount -t tmpfs -o mode=0755 tmpfs /run/dbus
mkdir -p /etc/systemd/network && mount --bind "$dropins" /etc/systemd/network
echo docker > /run/systemd/container
mkdir -p /run/systemd/netif/links /run/systemd/netif/leases /run/systemd/netif/lldp /run/systemd/network
chown -R systemd-network:systemd-network /run/systemd/netif
grep -qs " /sys sysfs ro" /proc/mounts || mount -o remount,bind,ro /sys
touch "$ready"
exec sleep infinity'

# Starts a daemon in the node's networkd namespace; its pid (as the node sees
# it) goes to <name>.pid.
_nd_spawn() {
    local n=$1 name=$2; shift 2
    local dir; dir=$(_nd_dir "$n")
    rm -f "$dir/$name.pid"
    # shellcheck disable=SC2016
    in_node "$n" sh -c 'echo $$ > "$1"; log=$2; shift 2; exec "$@" >>"$log" 2>&1 </dev/null' "$name" \
        "$dir/$name.pid" "$(node_dir "$n")/log/networkd.log" \
        nsenter --target "$(_nd_pid "$n" holder)" --mount -- "$@" &
    disown   # cluster_down kills it with the node; no "Killed" notice from bash
    wait_for "$name to start in node $n" 10 test -s "$dir/$name.pid"
}

networkd_start() {
    local n=$1
    # As systemd's unit starts it: user systemd-network with ambient network
    # capabilities. Started as root, networkd would drop privileges itself and
    # insist on CAP_NET_BROADCAST, which Docker does not grant a container.
    _nd_spawn "$n" networkd setpriv --reuid systemd-network --regid systemd-network --clear-groups \
        --inh-caps +net_admin,+net_bind_service,+net_raw --ambient-caps +net_admin,+net_bind_service,+net_raw \
        /lib/systemd/systemd-networkd
    # networkctl also answers (from netlink) when networkd is not running; the
    # state file is networkd's own.
    wait_for "systemd-networkd to run in node $n" 20 _nd_in_ns "$n" test -s /run/systemd/netif/state
}

networkd_stop() {
    local n=$1 pid; pid=$(_nd_pid "$n" networkd) || return 0
    in_node "$n" kill -TERM "$pid" 2>/dev/null || true
    wait_for "networkd (pid $pid) to exit in node $n" 10 _nd_gone "$n" "$pid"
}
_nd_gone() { ! in_node "$1" kill -0 "$2" 2>/dev/null; }

networkd_restart() { networkd_stop "$1"; networkd_start "$1"; }

networkd_up() {
    local n=$1 dir dropins; dir=$(_nd_dir "$n")
    dropins=$(node_dir "$n")/networkd   # the agent's gateway.networkdDropinDir
    mkdir -p "$dir" "$dropins"
    # Manages every link: the configuration that makes networkd flush gw0.
    printf '# A node-wide catch-all, as on images that manage every interface.\n[Match]\nName=*\n' \
        > "$dropins/99-catchall.network"
    # shellcheck disable=SC2016
    in_node "$n" sh -c 'echo $$ > "$1"; shift; exec unshare --mount --propagation private -- sh -c "$@"' holder \
        "$dir/holder.pid" "$_ND_SETUP" setup "$dropins" "$dir/ready" >>"$(node_dir "$n")/log/networkd.log" 2>&1 &
    disown
    wait_for "node $n's networkd mount namespace" 10 test -e "$dir/ready"
    _nd_spawn "$n" dbus dbus-daemon --system --nofork --nopidfile
    wait_for "dbus-daemon in node $n" 10 _nd_in_ns "$n" test -S /run/dbus/system_bus_socket
    networkd_start "$n"
}

networkctl_in() { local n=$1; shift; _nd_in_ns "$n" networkctl "$@"; }

networkd_setup_state() {
    networkctl_in "$1" list --no-pager --no-legend | awk -v l="$2" '$2 == l { print $5 }'
}
