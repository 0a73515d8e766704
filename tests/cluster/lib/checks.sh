# shellcheck shell=bash disable=SC2034 # matrix_failed is set here for the callers
# Traffic checks over a cluster from tests/cluster/lib (either provider): progress output, TCP
# echo servers, the connectivity matrix, the Services rows and a short throughput test.

_step_start=0
step() { _step_start=$(date +%s%N); printf '• %s ... ' "$*"; }
done_step() { printf 'done (%.1fs)\n' "$(( ($(date +%s%N) - _step_start) / 1000000 ))e-3"; }

TCP_PORT=8080
TCP_BYTES=65536

# Each pod and each node runs a TCP server that answers with the number of
# bytes it received; over both families where the cluster has IPv6.
start_servers() {
    local nodes=$1 pods=$2 n p listen="TCP-LISTEN:$TCP_PORT,fork,reuseaddr"
    [ "${IP_FAMILY:-ipv4}" = ipv4 ] || listen="TCP6-LISTEN:$TCP_PORT,ipv6only=0,fork,reuseaddr"
    for n in $(seq 1 "$nodes"); do
        for p in $(seq 1 "$pods"); do
            in_pod "$n" "$p" socat "$listen" SYSTEM:'wc -c' >/dev/null 2>&1 &
        done
        in_node "$n" socat "$listen" SYSTEM:'wc -c' >/dev/null 2>&1 &
    done
    for n in $(seq 1 "$nodes"); do
        for p in $(seq 1 "$pods"); do wait_for "server in pod $n/$p" 10 port_listening "$TCP_PORT" in_pod "$n" "$p"; done
    done
}

port_listening() { local port=$1; shift; "$@" ss -Hltn "sport = :$port" | grep -q .; }

# Sends TCP_BYTES over TCP from the namespace given by the command prefix and
# checks that all of them arrived: this is what breaks when checksum offload
# is left on, while ping keeps working.
tcp_ok() {
    local dst=$1; shift
    local got
    [[ $dst != *:* ]] || dst="[$dst]"   # IPv6
    got=$(head -c "$TCP_BYTES" /dev/zero | "$@" timeout 5 socat -t2 - "TCP:$dst:$TCP_PORT,connect-timeout=2" 2>/dev/null | tr -d ' \n')
    [ "$got" = "$TCP_BYTES" ]
}
ping_ok() { local dst=$1; shift; "$@" ping -c1 -W2 -q "$dst" >/dev/null 2>&1; }

matrix_failed=0   # read by the scripts that print the matrix
mark() { if "$@"; then printf '%-9s' ok; else printf '%-9s' FAIL; matrix_failed=1; fi; }
# The label of a row with one column per node, wide enough for the longest.
node_row() { printf '  %-36s' "$1"; }

# The cluster's families ("4", "6" or "4 6"), and each family's address of a
# pod, a node and a node's gateway.
cluster_families() { case ${IP_FAMILY:-ipv4} in ipv4) echo 4 ;; ipv6) echo 6 ;; dual) echo "4 6" ;; esac; }
fam_pod_ip() { if [ "$1" = 6 ]; then pod_ip6 "$2" "$3"; else pod_ip "$2" "$3"; fi; }
fam_node_ip() { if [ "$1" = 6 ]; then node_ip6 "$2"; else node_ip "$2"; fi; }
fam_gw_ip() { if [ "$1" = 6 ]; then node_gw_ip6 "$2"; else node_gw_ip "$2"; fi; }

# The matrix of every pod pair and the node rows, once per family of the cluster.
connectivity_matrix() {
    local nodes=$1 pods=$2 fam over=""
    for fam in $(cluster_families); do
        [ "${IP_FAMILY:-ipv4}" = ipv4 ] || over=" over IPv$fam"
        _family_matrix "$nodes" "$pods" "$fam" "$over"
    done
}

_family_matrix() {
    local nodes=$1 pods=$2 fam=$3 over=$4 n p m q
    echo "Pod to pod$over (ping, then TCP with $TCP_BYTES bytes; same node and across nodes through the VXLAN tunnel):"
    printf '  %-12s' "from \\ to"
    for m in $(seq 1 "$nodes"); do for q in $(seq 1 "$pods"); do printf '%-9s' "n$m/p$q"; done; done; echo
    for n in $(seq 1 "$nodes"); do for p in $(seq 1 "$pods"); do
        printf '  %-12s' "n$n/p$p"
        for m in $(seq 1 "$nodes"); do for q in $(seq 1 "$pods"); do
            if [ "$n$p" = "$m$q" ]; then printf '%-9s' "-"; continue; fi
            local ip; ip=$(fam_pod_ip "$fam" "$m" "$q")
            if ping_ok "$ip" in_pod "$n" "$p" && tcp_ok "$ip" in_pod "$n" "$p"; then printf '%-9s' ok
            else printf '%-9s' FAIL; matrix_failed=1; fi
        done; done; echo
    done; done
    echo
    node_row "on node$over"; for n in $(seq 1 "$nodes"); do printf '%-9s' "n$n"; done; echo
    node_row "pod -> its own node (TCP)"; for n in $(seq 1 "$nodes"); do mark tcp_ok "$(fam_node_ip "$fam" "$n")" in_pod "$n" 1; done; echo
    # A node-local service reached on the pod's gateway address: pod -> br-int -> gw0 -> the node's stack.
    node_row "pod -> service on gw0 (TCP)"; for n in $(seq 1 "$nodes"); do mark tcp_ok "$(fam_gw_ip "$fam" "$n")" in_pod "$n" 1; done; echo
    node_row "node -> its pod (TCP)"; for n in $(seq 1 "$nodes"); do mark tcp_ok "$(fam_pod_ip "$fam" "$n" 1)" in_node "$n"; done; echo
    node_row "node -> pod on the next node (TCP)"; for n in $(seq 1 "$nodes"); do
        m=$(( n % nodes + 1 )); mark tcp_ok "$(fam_pod_ip "$fam" "$m" 1)" in_node "$n"; done; echo
    node_row "docker host -> node (TCP)"; for n in $(seq 1 "$nodes"); do mark tcp_ok "$(fam_node_ip "$fam" "$n")" in_underlay; done; echo
}

# Rows over the demo's Services (services.sh: demo_services_up), one column per
# node: its client is pod 2 (pod 1 serves), or pod 1 when there is only one;
# one table per family of the cluster.
services_matrix() {
    local nodes=$1 pods=$2
    local first=1
    for DEMO_FAM in $(cluster_families); do
        [ "$first" = 1 ] || echo
        first=0
        _services_matrix "$nodes" "$pods"
    done
    DEMO_FAM=4
}
_services_matrix() {
    local nodes=$1 pods=$2 n m c seen saw=()
    echo "Services over IPv$DEMO_FAM (kube-proxy v1.31 iptables-mode rules on every node, TCP; on each node the client is pod $([ "$pods" -ge 2 ] && echo 2 || echo 1);"
    echo "ClusterIP $(demo_cluster_ip 1.N) -> pod N/1, NodePort 30080 -> n1/p1, the API server $(demo_cluster_ip 0.1) is hostNetwork on n1):"
    node_row "on node"; for n in $(seq 1 "$nodes"); do printf '%-9s' "n$n"; done; echo
    _client() { echo "pod:$1:$([ "$pods" -ge 2 ] && echo 2 || echo 1)"; }
    _cell() { if "$@" >/dev/null; then printf '%-9s' ok; else printf '%-9s' FAIL; matrix_failed=1; fi; }
    node_row "ClusterIP -> pod on the same node"
    for n in $(seq 1 "$nodes"); do
        if [ "$pods" -lt 2 ]; then printf '%-9s' "-"; continue; fi
        c=$(_client "$n"); _cell answered_by "$c" "$(ip_port "$(demo_cluster_ip "1.$n")" 80)" "n$n/p1" "$(demo_place_ip "$c")"
    done; echo
    node_row "ClusterIP -> pod on the next node"
    for n in $(seq 1 "$nodes"); do
        m=$(( n % nodes + 1 )); [ "$m" = "$n" ] && { printf '%-9s' "-"; continue; }
        c=$(_client "$n"); _cell answered_by "$c" "$(ip_port "$(demo_cluster_ip "1.$m")" 80)" "n$m/p1" "$(demo_place_ip "$c")"
    done; echo
    node_row "API server ClusterIP:443 (n1:6443)"
    for n in $(seq 1 "$nodes"); do c=$(_client "$n"); _cell answered_by "$c" "$(ip_port "$(demo_cluster_ip 0.1)" 443)" node1 "$(demo_place_ip "$c")"; done; echo
    node_row "docker host -> NodePort 30080"
    for n in $(seq 1 "$nodes"); do _cell answered_by host "$(ip_port "$(demo_place_ip "node:$n")" 30080)" n1/p1; done; echo
    node_row "egress: pod -> docker host (TCP)"
    for n in $(seq 1 "$nodes"); do
        c=$(_client "$n")
        if seen=$(answered_by "$c" "$(ip_port "$(demo_place_ip host)" 9000)" dockerhost "$(demo_place_ip "node:$n")"); then printf '%-9s' ok
        else printf '%-9s' FAIL; matrix_failed=1; fi
        saw+=("n$n $seen")
    done; echo
    printf '  (the docker host saw the pods as: %s; each node IP is the right answer)\n' "$(IFS=,; echo "${saw[*]}" | sed 's/,/, /g')"
}

throughput_summary() {
    local nodes=$1
    [ "$nodes" -ge 2 ] || return 0
    step "measuring pod -> pod TCP throughput across nodes (iperf3, 3 s)"
    mkdir -p "$(node_dir 2)/log"   # the same path inside every node; kind-node nodes have no log dir of their own
    in_pod 2 1 iperf3 -s -1 -D --logfile "$(node_dir 2)/log/iperf3.log"
    wait_for "iperf3 server" 10 port_listening 5201 in_pod 2 1
    local bps
    bps=$(in_pod 1 1 iperf3 -c "$(pod_ip 2 1)" -t 3 -J | jq '.end.sum_received.bits_per_second')
    done_step
    printf 'Throughput n1/p1 -> n2/p1 across the tunnel: %.2f Gbit/s (underlay MTU %s, gw0 %s, pods %s)\n' \
        "$(echo "$bps / 1000000000" | bc -l)" "$UNDERLAY_MTU" "$(in_node 1 cat /sys/class/net/gw0/mtu)" \
        "$(in_pod 1 1 ip -j link show eth0 | jq '.[0].mtu')"   # netlink: a pod's /sys may be its node's (kind-node)
}
