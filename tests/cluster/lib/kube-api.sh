# shellcheck shell=bash
# The stand-in Kubernetes API server (tests/cluster/kube_api_mock.py) for the
# netns and docker providers' clusters, and the agents switched to it: a
# kubeconfig like kind's (bearer token, the server's CA) and `peers: {source:
# kubernetes}`. Used by the footprint benchmark, the e2e scenario
# kube_peers_test.sh and the soak. Needs cluster-common.sh (node_dir,
# agent_config, node_ip, die, wait_for) and the provider's in_underlay.
# The mock API server, where kind's is: on the Docker network's host side,
# which every node reaches on the underlay.
api_addr=172.18.0.1
api_port=6443
api_dir() { echo "$CLUSTER_DIR/kube-api"; }
# Started in the underlay namespace (the Docker host's side of the network),
# so cluster_down's sweep of the cluster's namespaces kills it on every exit path; --parent covers a benchmark killed
# too hard to run its trap.
#   kube_api_up [PEERS_FILE [MOCK_ARGS...]]   the Nodes of PEERS_FILE (default: the cluster's peers.yaml)
kube_api_up() {
    local d peers=${1:-$CLUSTER_DIR/peers.yaml}; d=$(api_dir)
    [ $# -gt 0 ] && shift
    mkdir -p "$d"
    # RSA 2048, as kubeadm's serving certificate: the handshake is part of what is measured.
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kube-apiserver \
        -addext "subjectAltName=IP:$api_addr" -keyout "$d/apiserver.key" -out "$d/apiserver.crt" 2>"$d/openssl.log" ||
        { cat "$d/openssl.log" >&2; die "openssl: cannot make the mock API server's certificate"; }
    openssl rand -hex 16 > "$d/token"
    in_underlay python3 "$root/tests/cluster/kube_api_mock.py" --listen "$api_addr" --port "$api_port" \
        --cert "$d/apiserver.crt" --key "$d/apiserver.key" --token-file "$d/token" --peers "$peers" "$@" \
        --ready-file "$d/ready" --parent $$ --log "$d/requests.log" --commit-log "$d/commits.log" >"$d/mock.log" 2>&1 &
    disown   # its kill -9 by cluster_down is expected, not worth a "Killed" line from bash
    wait_for "the mock API server to listen" 15 test -s "$d/ready" ||
        { tail -5 "$d/mock.log" "$d/requests.log" >&2 2>/dev/null; die "the mock API server did not start"; }
}
# kube_api_down: stop the mock API server and wait until it is gone (it
# finishes its serve loop first, up to half a second, and holds the port
# until then: a new one started at once could not listen).
kube_api_down() {
    local pid
    pid=$(pgrep -f -- "--ready-file $(api_dir)/ready") || return 0
    kill "$pid" 2>/dev/null || true
    wait_for "the mock API server (pid $pid) to exit" 10 sh -c '! test -e "/proc/$1"' sh "$pid" ||
        die "the mock API server of $(api_dir) did not exit"
    rm -f "$(api_dir)/ready"
}
# kube_api_signal USR1|USR2: the mock API server compacts and drops every
# watch (USR1: 410 Gone, a relist) or drops them only (USR2).
kube_api_signal() {
    local pid
    pid=$(pgrep -f -- "--ready-file $(api_dir)/ready") || die "the mock API server of $(api_dir) is not running"
    kill "-$1" "$pid"
}
# What the agent of node N reads its peers from in the kubernetes phase: a
# kubeconfig like kind's, with a bearer token instead of a client certificate.
kubeconfig() {
    local d; d=$(api_dir)
    cat <<YAML
apiVersion: v1
kind: Config
clusters:
- name: kind-kovs
  cluster:
    server: https://$api_addr:$api_port
    certificate-authority-data: $(base64 -w0 < "$d/apiserver.crt")
contexts:
- name: kovs-agent@kind-kovs
  context: {cluster: kind-kovs, user: kovs-agent}
current-context: kovs-agent@kind-kovs
users:
- name: kovs-agent
  user: {token: $(cat "$d/token")}
YAML
}
# Node N's agent config with the peers line switched to the Kubernetes API.
use_kubernetes_source() {
    local n=$1 d line; d=$(node_dir "$1")
    kubeconfig > "$d/kubeconfig"
    line="peers: {source: kubernetes, kubeconfig: $d/kubeconfig}"
    agent_config "$n" | sed "s|^peers: .*|$line|" > "$d/agent.yaml.tmp"
    grep -qxF "$line" "$d/agent.yaml.tmp" || die "node $n: could not switch the agent config's peers line to: $line"
    mv "$d/agent.yaml.tmp" "$d/agent.yaml"
}
# Requests node N's agent made to the mock API server so far.
api_requests() { grep -cF " $(node_ip "$1") \"GET " "$(api_dir)/requests.log" || true; }
# Node N's agent listed the nodes successfully: its peers came from the API.
api_listed() { grep -qF " $(node_ip "$1") \"GET /api/v1/nodes HTTP/1.1\" 200 " "$(api_dir)/requests.log"; }

# kube_api METHOD PATH [JSON]: one request to the mock API server, as kubectl
# would make it (the cluster's token and CA: the kind-node provider's API
# server, which kube_api_up does not start, has a CA of its own); prints the
# response body and fails on an HTTP error.
kube_api() {
    local d ca; d=$(api_dir)
    ca=$d/apiserver.crt; [ -s "$d/ca.crt" ] && ca=$d/ca.crt
    in_underlay curl -sS --fail-with-body --max-time 10 --cacert "$ca" \
        -H "Authorization: Bearer $(cat "$d/token")" -H "Content-Type: application/json" \
        -X "$1" ${3:+--data-binary "$3"} "https://$api_addr:$api_port$2"
}
