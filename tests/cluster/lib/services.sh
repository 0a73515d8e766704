# shellcheck shell=bash
# Servers and clients for checking Services on a cluster from this harness
# (either provider): whoami servers that answer with the peer address they saw
# (tests/cluster/whoami.py), a CoreDNS-shaped DNS server (dnsmasq), and probes
# that say what they saw. A place names where a command runs:
#   pod:N:P    pod P of node N          node:N    node N's network namespace
#   host       the Docker host (the underlay; it has no route to pod CIDRs)
# Servers listen on every address of the place's families (IP_FAMILY); an
# IPv6 destination is written [IP]:PORT.
# Needs cluster-common.sh (a provider) sourced first.

# The tools are copied under CLUSTER_DIR, which every node sees at the same path.
SVC_TOOLS=$CLUSTER_DIR/tools
SVC_PY=/usr/bin/python3           # Debian's, on this machine and in the node image
DOCKER_HOST_IP=172.18.0.1         # kind's network gateway: the Docker host as nodes see it
DOCKER_HOST_IP6=fc00:f853:ccd:e793::1

svc_tools_install() {
    mkdir -p "$SVC_TOOLS"
    cp "$(dirname "${BASH_SOURCE[0]}")/../whoami.py" "$SVC_TOOLS/whoami.py"
}

_place_check() {
    [[ $1 =~ ^(pod:[0-9]+:[0-9]+|node:[0-9]+|host)$ ]] || { _log "place '$1': expected pod:N:P, node:N or host"; return 2; }
}

in_place() {
    local place=$1; shift
    _place_check "$place" || return 2
    case $place in
        pod:*) local n p; IFS=: read -r _ n p <<<"$place"; in_pod "$n" "$p" "$@" ;;
        node:*) in_node "${place#node:}" "$@" ;;
        host) in_underlay "$@" ;;
    esac
}

# place_ip PLACE [6]: the place's address (a pod's first), or its IPv6 one
# (nodes and the Docker host have one in ipv6 and dual clusters, pods too).
place_ip() {
    _place_check "$1" || return 2
    local six=${2:-}
    [ -z "$six" ] || [ "$six" = 6 ] || { _log "place_ip $1 $six: the second argument is 6 or nothing"; return 2; }
    case $1 in
        pod:*) local n p; IFS=: read -r _ n p <<<"$1"; "pod_ip$six" "$n" "$p" ;;
        node:*) "node_ip$six" "${1#node:}" ;;
        host) if [ -n "$six" ]; then echo "$DOCKER_HOST_IP6"; else echo "$DOCKER_HOST_IP"; fi ;;
    esac
}

# Every address a server at PLACE listens on: IPv4 where the place has one
# (nodes always do), IPv6 in ipv6 and dual clusters.
place_ips() {
    local place=$1
    case $IP_FAMILY in
        ipv4) place_ip "$place" ;;
        dual) place_ip "$place"; place_ip "$place" 6 ;;
        ipv6) [[ $place == pod:* ]] || place_ip "$place"; place_ip "$place" 6 ;;
    esac
}

# IP:PORT, or [IP]:PORT for an IPv6 address.
ip_port() { if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi; }
_ip_of() { local ip=${1%:*}; ip=${ip#[}; echo "${ip%]}"; }   # the IP of IP:PORT or [IP]:PORT

# The node whose conntrack table a flow from PLACE to IP passes first: the
# client's own node, or for the Docker host the node it sends to.
place_node() {
    local place=$1 ip=$2 n
    case $place in
        pod:*) cut -d: -f2 <<<"$place" ;;
        node:*) echo "${place#node:}" ;;
        host) for n in $(seq 1 "$CLUSTER_NODES"); do
                  [ "$(node_ip "$n")" = "$ip" ] || [ "$(node_ip6 "$n")" = "$ip" ] && { echo "$n"; return; }
              done ;;
    esac
}

# _listening PLACE PROTO PORT [COUNT]: at least COUNT sockets (default 1) listen there.
_listening() {
    local place=$1 proto=$2 port=$3 count=${4:-1} flag
    flag=$([ "$proto" = udp ] && echo -Hlun || echo -Hltn)
    (( $(in_place "$place" ss "$flag" "sport = :$port" | wc -l) >= count ))
}

# whoami_serve PLACE NAME PORT...: a whoami server on TCP and UDP PORT, bound
# to the place's addresses (place_ips), answering "NAME PEER".
whoami_serve() {
    local place=$1 name=$2; shift 2
    local ip ips args=() port log
    ips=$(place_ips "$place") || return 1
    for ip in $ips; do args+=(--bind "$ip"); done
    for port in "$@"; do args+=(--tcp "$port" --udp "$port"); done
    log=$CLUSTER_DIR/whoami-${name//\//-}.log
    in_place "$place" "$SVC_PY" "$SVC_TOOLS/whoami.py" serve --name "$name" "${args[@]}" \
        </dev/null >>"$log" 2>&1 &
    local count; count=$(wc -w <<<"$ips")
    for port in "$@"; do
        wait_for "whoami $name on ${ips//$'\n'/ and } port $port/tcp" 10 _listening "$place" tcp "$port" "$count" || { cat "$log" >&2; return 1; }
        wait_for "whoami $name on ${ips//$'\n'/ and } port $port/udp" 10 _listening "$place" udp "$port" "$count" || { cat "$log" >&2; return 1; }
    done
}

# whoami_probe PLACE PROTO IP:PORT [COUNT [MAX_FAILURES [TIMEOUT]]]: whoami.py probe's lines.
whoami_probe() {
    local place=$1 proto=$2 to=$3 count=${4:-1} maxf=${5:-1} timeout=${6:-2}
    in_place "$place" "$SVC_PY" "$SVC_TOOLS/whoami.py" probe --proto "$proto" --to "$to" \
        --count "$count" --max-failures "$maxf" --timeout "$timeout" </dev/null
}

# The conntrack entries of a flow's first node, for a failure message.
flow_conntrack() {
    local place=$1 proto=$2 to=$3 n ip family=ipv4
    ip=$(_ip_of "$to")
    [[ $ip == *:* ]] && family=ipv6
    n=$(place_node "$place" "$ip")
    [ -n "$n" ] || return 0
    in_node "$n" conntrack -L -f "$family" -p "$proto" --orig-dst "$ip" --orig-port-dst "${to##*:}" 2>/dev/null |
        sed "s/^/node $n conntrack: /" | head -3
}

# dns_serve PLACE: dnsmasq answering like CoreDNS for a few cluster names (A
# and AAAA: the Services' ClusterIPs of each family), on UDP and TCP port 53
# of the place's addresses only.
DNS_RECORDS=("kubernetes.default.svc.cluster.local,10.96.0.1,fd00:10:96::1"
             "kube-dns.kube-system.svc.cluster.local,10.96.0.10,fd00:10:96::a")
dns_serve() {
    local place=$1 ip args=() r dir=$CLUSTER_DIR/dns
    mkdir -p "$dir"
    for ip in $(place_ips "$place"); do args+=(--listen-address="$ip"); done
    for r in "${DNS_RECORDS[@]}"; do args+=(--host-record="$r"); done
    in_place "$place" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
        --bind-interfaces --port=53 --user=root --pid-file="$dir/dnsmasq.pid" \
        --local=/cluster.local/ --log-queries --log-facility="$dir/dnsmasq.log" "${args[@]}" \
        </dev/null >>"$dir/dnsmasq.out" 2>&1 &
    local count=$(( ${#args[@]} - ${#DNS_RECORDS[@]} ))
    wait_for "dnsmasq on $place:53/udp" 10 _listening "$place" udp 53 "$count" || { cat "$dir/dnsmasq.out" >&2; return 1; }
    wait_for "dnsmasq on $place:53/tcp" 10 _listening "$place" tcp 53 "$count" || { cat "$dir/dnsmasq.out" >&2; return 1; }
}

# dns_query PLACE SERVER NAME udp|tcp [TYPE]: dig's whole answer (one try, 2 s).
dns_query() {
    local place=$1 server=$2 name=$3 proto=$4 type=${5:-A} flags=(+tries=1 +time=2)
    [ "$proto" = tcp ] && flags+=(+tcp)
    in_place "$place" dig "@$server" "$name" "$type" "${flags[@]}" </dev/null 2>&1 || true
}

# --- the demo's Services (tests/cluster/local-cluster demo) --------------------
# kube-proxy's iptables-mode rules (kind's default) on every node for:
#   default/kubernetes  10.96.0.1:443 -> node 1's IP:6443 (hostNetwork, as the
#                       API server on kind's control-plane node)
#   default/pod-N       10.96.1.N:80 -> pod N/1:8090, one per node
#   default/nodeport    NodePort 30080 -> pod 1/1:8090 (externalTrafficPolicy Cluster)
# and whoami servers behind them, plus one on the Docker host (port 9000).
# In each family of the cluster (checks.sh: cluster_families), as kube-proxy
# runs one proxier per family: over IPv6 fd00:10:96::1, fd00:10:96::1:N and
# fd00:10:96::80, reached at the places' IPv6 addresses. DEMO_FAM (4 or 6)
# is the family the helpers below speak.
# Needs kube-proxy.sh and checks.sh.
DEMO_PORT=8090
DEMO_FAM=4
demo_v6() { [ "$DEMO_FAM" = 6 ]; }
# demo_cluster_ip 0.1 | 0.80 | 1.N: 10.96.<that>, or fd00:10:96::1, ::80, ::1:N
demo_cluster_ip() {
    if ! demo_v6; then echo "10.96.$1"; elif [[ $1 == 0.* ]]; then echo "fd00:10:96::${1#0.}"; else echo "fd00:10:96::${1/./:}"; fi
}
demo_place_ip() { place_ip "$1" "${DEMO_FAM#4}"; }
demo_services_up() {
    local nodes=$1 n
    rm -f "$KOVS_SERVICES" "$KOVS_SERVICES6"
    svc_tools_install
    for DEMO_FAM in $(cluster_families); do _demo_services "$nodes"; done
    DEMO_FAM=4
    for n in $(seq 1 "$nodes"); do kube_proxy_sync "$n" iptables || return 1; done
    for n in $(seq 1 "$nodes"); do whoami_serve "pod:$n:1" "n$n/p1" "$DEMO_PORT" || return 1; done
    whoami_serve node:1 node1 6443 || return 1
    whoami_serve host dockerhost 9000
}
# The description of the demo's Services in DEMO_FAM.
_demo_services() {
    local nodes=$1 n eps=() file=$KOVS_SERVICES cidr=10.244.0.0/16
    demo_v6 && file=$KOVS_SERVICES6 cidr=fd00:10:244::/56
    for n in $(seq 1 "$nodes"); do
        eps+=("$(jq -cn --arg n "$n" --arg ip "$(demo_place_ip "pod:$n:1")" --arg cip "$(demo_cluster_ip "1.$n")" --argjson port "$DEMO_PORT" \
            '{namespace: "default", name: "pod-\($n)", clusterIP: $cip,
              ports: [{protocol: "TCP", port: 80, targetPort: $port}], endpoints: [{ip: $ip, node: "node\($n)"}]}')")
    done
    jq -n --arg api "$(demo_place_ip node:1)" --arg p1 "$(demo_place_ip pod:1:1)" --argjson port "$DEMO_PORT" \
        --argjson pods "$(printf '%s\n' "${eps[@]}" | jq -s .)" --arg cidr "$cidr" \
        --arg apiip "$(demo_cluster_ip 0.1)" --arg npip "$(demo_cluster_ip 0.80)" \
        '{clusterCIDR: $cidr, services: ([
            {namespace: "default", name: "kubernetes", clusterIP: $apiip,
             ports: [{name: "https", protocol: "TCP", port: 443, targetPort: 6443}],
             endpoints: [{ip: $api, node: "node1", hostNetwork: true}]},
            {namespace: "default", name: "nodeport", clusterIP: $npip, type: "NodePort",
             ports: [{protocol: "TCP", port: 80, targetPort: $port, nodePort: 30080}],
             endpoints: [{ip: $p1, node: "node1"}]}] + $pods)}' > "$file"
}

# answered_by PLACE IP:PORT NAME [SEEN]: one TCP request is answered by NAME
# (which saw the client as SEEN, when given). Prints what the server saw.
answered_by() {
    local place=$1 to=$2 want=$3 seen_want=${4:-} status name seen
    read -r status name seen _ < <(whoami_probe "$place" tcp "$to" 1 1 1 | tail -1)
    [ -n "$seen" ] && [ "$seen" != - ] || seen=nothing
    echo "$seen"
    [ "$status" = ok ] && [ "$name" = "$want" ] && { [ -z "$seen_want" ] || [ "$seen" = "$seen_want" ]; }
}
