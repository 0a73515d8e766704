#!/usr/bin/env bash
# systemd-networkd (real, 252) running in a cluster node with a catch-all
# .network file, as on node images that manage every interface, restarted and
# told to reconfigure gw0 while two TCP transfers run: pod n1/p1 -> a service
# bound on node 1's gw0 address, and pod n2/p1 -> pod n1/p1 across the tunnel.
#  - with kovs's drop-ins networkd leaves gw0 and the uplink alone (without
#    the eth0 one, the catch-all reconfigures eth0 as the node's interface;
#    it took eth0 out of the first shim's Linux bridge and cut the node off):
#    restart, reconfigure and reload do not touch gw0;
#  - with an administrator's .network file that matches gw0 before kovs's
#    drop-in (a node whose networkd config predates kovs), networkd flushes
#    gw0 on reload and reconfigure, doctor names the file, the gateway guard
#    restores gw0 each time, and both transfers complete;
#  - a drop-in removed while the agent runs is written again at once (the
#    drop-ins job), and without the administrator's file networkd lets go of
#    gw0 and doctor passes again.
# With KOVS_IP_FAMILY=dual (meson: networkd-dual) gw0 has an IPv6 address too:
# networkd's flushes take it as well (seen by `ip -6 monitor`), and the guard
# restores it with the IPv4 one.
source "$(dirname "$0")/lib.sh"
# shellcheck source=../cluster/lib/networkd.sh
source "$root/tests/cluster/lib/networkd.sh"

cluster_up 2
pod_add 1 1; pod_add 2 1
networkd_up 1
shim_devices=""
[ "${KOVS_UPLINK_MODE:-shim}" = shim ] && shim_devices="kovs-up0 kovs-up1"
# A pod's host end too (kovs's glob drop-in): a networkd that manages it turns
# its IPv6 back on, and doctor's pod-veth check fails (it did before the drop-in).
pod_host_end=$(in_node 1 ip -o link show | awk -F': ' '$2 ~ /^kovs[0-9a-f]/ { sub(/@.*/, "", $2); print $2; exit }')
[ -n "$pod_host_end" ] || fail "no pod host end on node 1: $(in_node 1 ip -br link)"
for l in gw0 br-phy eth0 $shim_devices "$pod_host_end"; do
    [ "$(networkd_setup_state 1 $l)" = unmanaged ] || fail "networkd manages $l despite kovs's drop-in: $(networkctl_in 1 list --no-pager)"
done
# br-int (a tap device of the netdev bridge, no drop-in) shows the catch-all at work.
[ "$(networkd_setup_state 1 br-int)" != unmanaged ] || fail "the catch-all .network does not reach br-int: $(networkctl_in 1 list --no-pager)"
kovsctl 1 doctor >/dev/null || fail "doctor fails with networkd and the drop-ins in place: $(kovsctl 1 doctor)"
if [ -n "$shim_devices" ]; then
    in_node 1 tc filter show dev eth0 ingress | grep -q "Egress Redirect to device kovs-up0" ||
        fail "eth0 no longer leads into the shim: $(in_node 1 tc filter show dev eth0 ingress)"
fi
[ -z "$(in_node 1 ip -4 -o addr show dev eth0)" ] || fail "networkd gave eth0 an address: $(in_node 1 ip -br addr)"
ping_ok "$(node_ip 2)" in_node 1 || fail "node 1 cannot reach node 2 with networkd running"
pass "networkd runs in node 1 with a catch-all .network; kovs's drop-ins keep gw0, br-phy, the uplink (eth0 still leads into the shim) and the pods' host ends unmanaged"

gw0_unmanaged() { [ "$(networkd_setup_state 1 gw0)" = unmanaged ]; }
gw0_managed() { ! gw0_unmanaged; }
# With KOVS_IP_FAMILY=dual (meson: networkd-dual) gw0's IPv6 address too:
# networkd flushes both families.
gw0_has_address() {
    in_node 1 ip -4 -o addr show dev gw0 | grep -q " $gw_ip/24 " || return 1
    [ "$IP_FAMILY" = ipv4 ] || in_node 1 ip -6 -o addr show dev gw0 scope global | grep -q " $(node_gw_ip6 1)/64 "
}
gw_repairs() { agent_metrics 1 | awk '/^kovs_gateway_repairs_total\{family="ipv[46]",kind="address"\}/ { n += $2 } END { print n + 0 }'; }
gw_ip=$(node_gw_ip 1)
in_node 1 iperf3 -s -B "$gw_ip" -p 5202 -1 -D --logfile "$(node_dir 1)/log/iperf3-gw.log"
in_pod 1 1 iperf3 -s -1 -D --logfile "$(node_dir 1)/log/iperf3-pod.log"
wait_for "iperf3 on gw0" 10 port_listening 5202 in_node 1
wait_for "iperf3 in pod 1/1" 10 port_listening 5201 in_pod 1 1
seconds=16
in_pod 1 1 iperf3 -c "$gw_ip" -p 5202 -t "$seconds" -J > "$CLUSTER_DIR/gw.json" 2>&1 &
gw_client=$!
in_pod 2 1 iperf3 -c "$(pod_ip 1 1)" -t "$seconds" -J > "$CLUSTER_DIR/pod.json" 2>&1 &
pod_client=$!
t0=$(ms_now)
at() { while (( $(ms_now) < t0 + $1 )); do sleep 0.1; done; }

repairs0=$(gw_repairs)
at 2000
networkd_restart 1
networkctl_in 1 reconfigure gw0 || true   # an unmanaged link: networkd may refuse, must not touch it
networkctl_in 1 reload
sleep 1
[ "$(gw_repairs)" = "$repairs0" ] || fail "gw0 needed repairs although networkd should leave it alone ($repairs0 -> $(gw_repairs))"
pass "with the drop-ins, networkd restart + reconfigure gw0 + reload mid-transfer leave gw0 untouched"

at 5000
if [ "$IP_FAMILY" != ipv4 ]; then
    in_node 1 ip -6 monitor address dev gw0 > "$CLUSTER_DIR/gw0-ipv6-events" 2>&1 &
    monitor6=$!
fi
admin_file=$(node_dir 1)/networkd/05-admin-gw0.network
printf '# An administrator'"'"'s file, older than kovs.\n[Match]\nName=gw0\n' > "$admin_file"
networkctl_in 1 reload
wait_for "networkd to take gw0 over" 10 gw0_managed
out=$(kovsctl 1 doctor) && fail "doctor passed with networkd managing gw0 through $admin_file:
$out"
grep -q "FAIL  networkd .*05-admin-gw0.network sorts first and matches gw0" <<<"$out" || fail "doctor did not name the file that shadows kovs's drop-in:
$out"
for i in 1 2 3; do
    at $(( 6000 + i * 1500 ))
    networkctl_in 1 reconfigure gw0
done
networkd_restart 1
wait_for "the guard to have restored gw0 after networkd's flushes" 10 gw0_has_address
repairs1=$(gw_repairs)
(( repairs1 > repairs0 )) || fail "networkd never removed gw0's address (repairs $repairs0 -> $repairs1): the scenario did not happen"
echo "   networkd took gw0 over: reload, 3 reconfigures, a restart; the guard restored gw0's address $(( repairs1 - repairs0 )) time(s)"
if [ "$IP_FAMILY" != ipv4 ]; then
    kill "$monitor6" 2>/dev/null || true
    flushed6=$(grep -c "^Deleted .*inet6 $(node_gw_ip6 1)/64" "$CLUSTER_DIR/gw0-ipv6-events" || true)
    (( flushed6 > 0 )) || fail "networkd never removed gw0's IPv6 address: $(head -5 "$CLUSTER_DIR/gw0-ipv6-events")"
    echo "   gw0's IPv6 address $(node_gw_ip6 1)/64 was flushed $flushed6 time(s) and is back"
fi
pass "with an administrator's file matching gw0 first networkd flushes gw0; doctor names the file and the guard restores gw0 each time"

transfer_ok() {
    local name=$1 pid=$2 json=$3 bytes
    wait "$pid" || fail "the $name transfer failed: $(jq -r '.error // empty' "$json" 2>/dev/null || tail -3 "$json")"
    bytes=$(jq '.end.sum_received.bytes // 0' "$json" 2>/dev/null || echo 0)
    (( bytes > 0 )) || fail "the $name transfer received nothing: $(tail -c 600 "$json")"
    printf '   %-32s %6.1f MiB in %.1f s, %s retransmits\n' "$name" "$(echo "$bytes / 1048576" | bc -l)" \
        "$(jq '.end.sum_received.seconds' "$json")" "$(jq '.end.sum_sent.retransmits' "$json")"
}
transfer_ok "pod n1/p1 -> gw0 service" "$gw_client" "$CLUSTER_DIR/gw.json"
transfer_ok "pod n2/p1 -> pod n1/p1 (tunnel)" "$pod_client" "$CLUSTER_DIR/pod.json"
pass "both TCP transfers completed through every networkd restart, reload and reconfigure"

dropin=$(node_dir 1)/networkd/10-kovs-gw0.network
dropin_written() { [ -s "$dropin" ]; }
rewrites() { agent_metrics 1 | awk '/^kovs_networkd_dropins_rewritten_total / { print $2 }'; }
rm "$dropin"
wait_for "the agent to write the gw0 drop-in again" 5 dropin_written
(( $(rewrites) >= 1 )) || fail "the drop-in is back but kovs_networkd_dropins_rewritten_total is $(rewrites)"
rm "$admin_file"
networkctl_in 1 reload
wait_for "networkd to let go of gw0" 10 gw0_unmanaged
out=$(kovsctl 1 doctor) || fail "doctor still fails with the drop-in back and the administrator's file gone:
$out"
pass "a drop-in removed under the running agent is written again at once; without the administrator's file networkd lets go of gw0 and doctor passes"
