# shellcheck shell=bash source-path=SCRIPTDIR
# The "kind-node" node provider: the docker provider's nodes made as close to
# kind's nodes as this machine allows, running kovs exactly as a kind user gets it.
#
#   nodes        Docker containers on the network "kind" (docker-cluster.sh), each
#                running containerd + runc (Debian's, as kindest/node runs
#                containerd) with kind's CNI paths: /etc/cni/net.d, /opt/cni/bin
#                holding host-local, portmap, loopback and ptp (node-boot.sh)
#   kovs:dev     built from kind/Dockerfile (runtime stage as shipped, binaries of
#                KOVS_BUILD) and loaded into every node's containerd as
#                `kind load docker-image` does (kind-node-images.sh)
#   kubelet      tests/cluster/kubelet/kovs_kubelet.py in every node, started
#                again at every boot: the pods the API server binds to the node,
#                run through containerd as kubelet would (init containers,
#                probes, restarts, a shared PID namespace); manifests.py refuses
#                any spec field it does not implement
#   API server   tests/cluster/kube_api_mock.py on the Docker host side at
#                172.18.0.1:6443, reached from pods at the kubernetes Service
#                address 10.96.0.1:443 (a DNAT rule in each node, kube-proxy's
#                job): the Node objects kovs-node-init and the agent read, and
#                the pods and ConfigMaps the runners read; with
#                KOVS_ADMIN_POLICY_API=1 also the policy API's kinds, as if
#                their CRDs were installed (kovs-kind up --admin-network-policy)
#   DaemonSet    kind-node-lifecycle.sh: one pod per node from the rendered
#                DaemonSet, rolling updates one node at a time, uninstall
#   pods         `ctr run --cni`: containerd's own CNI client (go-cni/libcni) runs
#                ADD with the node's conflist, and DEL when the pod stops
#
# cluster_up runs the steps of `kind/kovs-kind up` (kovs-kind up --list-steps),
# each by a kind_step_<id> function below, so both stay one sequence.
# Select it with KOVS_PROVIDER=kind-node.
#
# KOVS_ENGINE=podman runs the same nodes on rootful podman instead of the
# private dockerd (private-podman.sh: its own storage, config and namespaces),
# as kind does with KIND_EXPERIMENTAL_PROVIDER=podman, which is then set for
# every kovs-kind this provider runs; the kovs image is built by podman and
# loaded by `kovs-kind load` itself (its podman path: podman save, kind load
# image-archive), with stand-ins for kind and kubectl (kind_stub_dir).

# shellcheck source=docker-cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/docker-cluster.sh"
# shellcheck source=kind-node-images.sh
source "$(dirname "${BASH_SOURCE[0]}")/kind-node-images.sh"
# shellcheck source=kind-node-lifecycle.sh
source "$(dirname "${BASH_SOURCE[0]}")/kind-node-lifecycle.sh"
# kube-proxy's rules and a DNS server, for the smoke test's Service.
# shellcheck source=kube-proxy.sh
source "$(dirname "${BASH_SOURCE[0]}")/kube-proxy.sh"
# shellcheck source=services.sh
source "$(dirname "${BASH_SOURCE[0]}")/services.sh"
# The docker provider's teardown, which cluster_down below extends.
eval "_docker_$(declare -f cluster_down)"

KOVS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
KOVS_KUBELET_DIR=/opt/kovs-kubelet
# kovs-cni as containerd runs it: installed by the DaemonSet's init container.
KOVS_BIN=/opt/cni/bin
KOVS_NODE_IMAGE_REPO=kovs-kind-node
# podman names a local image localhost/NAME (and lists it so, which
# node_image_ensure compares with the tag it keeps).
[ "$KOVS_ENGINE" = docker ] || KOVS_NODE_IMAGE_REPO=localhost/kovs-kind-node
KOVS_NODE_RUNS_KOVS=0
KOVS_NODE_PACKAGES=(
    containerd runc containernetworking-plugins iproute2 iptables conntrack ethtool
    socat iperf3 iputils-ping jq procps python3 curl tcpdump util-linux tini dnsmasq-base
)
KIND_NODE_COMPANION=${KIND_NODE_COMPANION:-0}
# kind's nodes are privileged; these are not (--privileged is refused here),
# so their /proc/sys is read-only (tests/cluster/lib/kube-proxy.sh).
# shellcheck disable=SC2034 # read by kube-proxy.sh
NODE_SYSCTLS_READONLY=1
API_ADDR=172.18.0.1 API_PORT=6443
# The kubernetes Service, as kind's kube-proxy makes it reachable from every node.
API_SERVICE_IP=10.96.0.1 API_SERVICE_PORT=443
_steps_done=()
[ "$KOVS_ENGINE" = docker ] || export KIND_EXPERIMENTAL_PROVIDER=podman

in_node() { local n=$1; shift; dk exec -i "$(node_container "$n")" "$@"; }
ctr_in() { local n=$1; shift; in_node "$n" ctr --namespace k8s.io "$@"; }
# A pod's network namespace is its task's (ctr pins none): entered by pid.
in_pod() {
    local n=$1 p=$2 pid; shift 2
    pid=$(cat "$(node_dir "$n")/pod-$p.pid") || return 1
    in_node "$n" nsenter --net="/proc/$pid/ns/net" "$@"
}
api_dir() { echo "$CLUSTER_DIR/kube-api"; }
kubelet_dir() { echo "$(node_dir "$1")/kubelet"; }
pod_status() { cat "$(kubelet_dir "$1")/status.json" 2>/dev/null; }
# The id of the running container NAME of node N's kovs pod (the runner names
# each attempt of a container anew, as kubelet does).
container_id() { pod_status "$1" | jq -er --arg c "$2" '.containerStatuses[] | select(.name == $c and .state == "running") | .containerID'; }
# A command in a container of node N's kovs pod (kubectl exec -c NAME).
in_container() {
    local n=$1 name=$2 id; shift 2
    id=$(container_id "$n" "$name") || { _log "node $n: container $name is not running"; return 1; }
    ctr_in "$n" tasks exec --exec-id "x$$-$RANDOM" "$id" "$@"
}
in_agent() { local n=$1; shift; in_container "$n" kovs-agent "$@"; }

# --- the mock API server ------------------------------------------------------

api_up() {
    local d; d=$(api_dir)
    mkdir -p "$d"
    # A CA the pods trust (their service account's ca.crt) and a serving
    # certificate for every name the API server is reached by, as kubeadm makes.
    {
        openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kubernetes -keyout "$d/ca.key" -out "$d/ca.crt" &&
        openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout "$d/apiserver.key" -out "$d/apiserver.csr" &&
        printf 'subjectAltName=IP:%s,IP:%s,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' \
            "$API_SERVICE_IP" "$API_ADDR" > "$d/san.ext" &&
        openssl x509 -req -in "$d/apiserver.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 1 \
            -extfile "$d/san.ext" -out "$d/apiserver.crt"
    } >"$d/openssl.log" 2>&1 || { cat "$d/openssl.log" >&2; die "openssl: cannot make the mock API server's certificates"; }
    openssl rand -hex 16 > "$d/token"
    write_peers
    in_underlay python3 "$KOVS_REPO/tests/cluster/kube_api_mock.py" --listen "$API_ADDR" --port "$API_PORT" \
        --cert "$d/apiserver.crt" --key "$d/apiserver.key" --token-file "$d/token" --peers "$CLUSTER_DIR/peers.yaml" \
        --watch-peers --node-shape kind --objects "$d/objects" --ready-file "$d/ready" --log "$d/requests.log" \
        ${KOVS_ADMIN_POLICY_API:+--admin-network-policy} >"$d/mock.log" 2>&1 &
    disown   # cluster_down ends it with the namespace's other processes
    wait_for "the mock API server to listen" 15 test -s "$d/ready" ||
        { tail -5 "$d/mock.log" >&2; die "the mock API server did not start"; }
}

# --- nodes --------------------------------------------------------------------

node_up() {
    local n=$1 c addresses engine_args; c=$(node_container "$n")
    mapfile -t addresses < <(node_address_args "$n")
    mapfile -t engine_args < <(engine_run_args)
    mkdir -p "$(node_dir "$n")" "$(kubelet_dir "$n")"
    # kind's node container, less --privileged (refused here): the capabilities
    # OVS and runc need; seccomp and AppArmor unconfined as kind's privileged
    # nodes are (runc needs keyctl); a private cgroup namespace so the cgroup
    # tree node-boot.sh mounts is the node's own; /var/lib/containerd on a
    # volume, as kind puts /var on one (overlayfs snapshots cannot live on the
    # container's own overlay root).
    dk run -d --name "$c" --hostname "node$n" \
        --label "kovs.cluster=$CLUSTER_PREFIX" --label "kovs.node=$n" --label kovs.provider=kind-node \
        "${addresses[@]}" "${engine_args[@]}" \
        --cap-add NET_ADMIN --cap-add SYS_ADMIN --cap-add NET_RAW --cap-add IPC_LOCK --cap-add SYS_NICE \
        --cap-add SYS_PTRACE \
        --device /dev/net/tun --init \
        --cgroupns=private --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
        --tmpfs /run --tmpfs /tmp --mount type=volume,dst=/var/lib/containerd \
        -v "$CLUSTER_DIR:$CLUSTER_DIR" -v "$KOVS_REPO/tests/cluster/kubelet:$KOVS_KUBELET_DIR:ro" \
        -e "KOVS_SERVICE_DNAT=$API_SERVICE_IP:$API_SERVICE_PORT=$API_ADDR:$API_PORT" \
        "$KOVS_NODE_IMAGE" "$KOVS_KUBELET_DIR/node-boot.sh" >/dev/null
    wait_for "containerd in node $n" 30 ctr_in "$n" version ||
        { dk logs --tail 20 "$c" >&2; die "containerd did not start in node $n"; }
}

# The runner, as a node's kubelet: configured in the node (so the node starts
# it again at every boot) and started. It lists the node's pods from the API
# server directly, as kubelet's kubeconfig names it.
kubelet_start() {
    local n=$1 d; d=$(kubelet_dir "$n")
    printf '%s\n' --node "node$n" --api-server "https://$API_ADDR:$API_PORT" \
        --api-token "$(api_dir)/token" --api-ca "$(api_dir)/ca.crt" --dir "$d" \
        --service-host "$API_SERVICE_IP" --service-port "$API_SERVICE_PORT" |
        in_node "$n" sh -c 'mkdir -p /etc/kovs-kubelet && cat > /etc/kovs-kubelet/args'
    dk exec -d "$(node_container "$n")" "$KOVS_KUBELET_DIR/start-kubelet.sh"
    wait_for "the kubelet runner of node $n to start" 10 grep -q "kubelet runner on node$n" "$d/kubelet.log"
}

# --- the steps of kind/kovs-kind up ---------------------------------------------

kind_step_preflight() {
    local b engine_bins=(dockerd "$KOVS_BUILD_CLI")
    [ "$KOVS_ENGINE" = docker ] || engine_bins=(podman)
    for b in "${engine_bins[@]}" debootstrap socat openssl python3 jq busybox; do
        command -v "$b" >/dev/null || die "$b not found: the kind-node provider needs it (scripts/install-deps.sh installs it)"
    done
    python3 -c 'import yaml' 2>/dev/null || die "python3-yaml not found: the kubelet runner reads the manifests with it"
    docker_prepare
}
kind_step_build_image() { kovs_image_build; pod_image_ensure; }
# The network "kind" of the provider's own dockerd, at KOVS_UNDERLAY_MTU (the
# MTU kovs-kind up --mtu gives a network of the cluster's own).
kind_step_create_network() { underlay_up; }
kind_step_create_cluster() {
    local n
    api_up
    for n in $(seq 1 "$CLUSTER_NODES"); do node_up "$n"; done
}
kind_step_load_image() {
    local n
    if [ "$KOVS_ENGINE" = podman ]; then
        kovs_kind_load_podman || return 1
        for n in $(seq 1 "$CLUSTER_NODES"); do image_load "$n" "$KOVS_POD_IMAGE"; done
        return 0
    fi
    for n in $(seq 1 "$CLUSTER_NODES"); do image_load "$n" "$KOVS_IMAGE"; image_load "$n" "$KOVS_POD_IMAGE"; done
}
# On podman, the image goes in as kovs-kind loads it: `kovs-kind load
# --no-build` (the load_image of up: architecture checked with podman image
# inspect and podman exec, podman save into /tmp/kovs-kind-NAME.tar, kind load
# image-archive), with kind's and kubectl's stand-ins (kind_stub_dir). Then
# the image kubelet will look for must be in every node: the DaemonSet's
# image: kovs:dev means docker.io/library/kovs:dev to kubelet.
kovs_kind_load_podman() {
    local stub out n want=$KOVS_IMAGE
    stub=$(kind_stub_dir)
    [[ $want == */* ]] || want=library/$want
    [[ ${want%%/*} == *[.:]* || ${want%%/*} == localhost ]] || want=docker.io/$want
    out=$(PATH="$stub:$PATH" "$KOVS_REPO/kind/kovs-kind" load --no-build --name "$(kind_cluster_name)" --image "$KOVS_IMAGE" 2>&1) ||
        { printf '%s\n' "$out" | sed 's/^/      /' >&2; _log "kovs-kind load --no-build failed (KIND_EXPERIMENTAL_PROVIDER=podman)"; return 1; }
    printf '%s\n' "$out" | sed 's/^/      /' >&2
    for n in $(seq 1 "$CLUSTER_NODES"); do
        ctr_in "$n" images ls -q | grep -qxF "$want" && continue
        _log "node $n: after kovs-kind load, containerd has $(ctr_in "$n" images ls -q | grep -v '^sha256:' | tr '\n' ' '), not $want, the image the DaemonSet's image: $KOVS_IMAGE names for kubelet"
        return 1
    done
}
# The kind cluster name kovs-kind is given (kind's names are lower case).
kind_cluster_name() { echo "${CLUSTER_PREFIX,,}"; }
# kubectl apply: the objects go to the API server, its DaemonSet controller
# makes a pod per node, and each node's kubelet picks its pod up.
kind_step_apply_manifests() {
    local n
    for n in $(seq 1 "$CLUSTER_NODES"); do kubelet_start "$n"; done
    ds_apply "$KOVS_IMAGE"
}
_pod_ready() { pod_status "$1" | jq -e '.ready' >/dev/null; }
kind_step_wait_agents() {
    local n
    for n in $(seq 1 "$CLUSTER_NODES"); do
        wait_for "node $n's kovs pod to be Ready" 180 _pod_ready "$n" || { node_debug "$n"; return 1; }
    done
}
# NetworkReady as containerd's CRI decides it: a conflist in /etc/cni/net.d
# whose every plugin type is a binary in /opt/cni/bin.
_network_ready() {
    # shellcheck disable=SC2016
    in_node "$1" sh -c 'f=$(ls /etc/cni/net.d/*.conflist 2>/dev/null | head -1) && [ -n "$f" ] &&
        for t in $(jq -r ".plugins[].type" "$f"); do [ -x "/opt/cni/bin/$t" ] || { echo "$f: no plugin $t"; exit 1; }; done'
}
kind_step_wait_nodes_ready() {
    local n
    for n in $(seq 1 "$CLUSTER_NODES"); do
        wait_for "node $n to be network-ready (conflist + plugins)" 60 _network_ready "$n" || return 1
        wait_for "node $n's agent to program its peers" 60 node_ready "$n" || { node_debug "$n"; return 1; }
    done
}
kind_step_smoke_test() {
    if [ "${KOVS_KIND_SMOKE:-1}" = 0 ]; then _log "  (smoke test skipped: KOVS_KIND_SMOKE=0)"; return 0; fi
    smoke_up || { smoke_down; return 1; }
    smoke_run || { smoke_down; return 1; }
    smoke_down
}
kind_step_next_steps() { :; }

# kovs_kind_steps COMMAND PREFIX LOG: the steps `kind/kovs-kind COMMAND
# --list-steps` prints, each run as the function PREFIX<id>, so the local path
# and the real one cannot drift apart: a step the provider lacks stops it
# before any runs. LOG gets "id<TAB>title<TAB>ms" a step.
kovs_kind_steps() {
    local cmd=$1 prefix=$2 log=$3 id title steps t0 args=("$1" --list-steps)
    [ "$KIND_NODE_COMPANION" = 1 ] && args+=(--companion)
    [ "$UNDERLAY_MTU" = 1500 ] || args+=(--mtu "$UNDERLAY_MTU")
    [ "$IP_FAMILY" = ipv4 ] || args+=(--ip-family "$IP_FAMILY")
    steps=$("$KOVS_REPO/kind/kovs-kind" "${args[@]}") || die "kind/kovs-kind $cmd --list-steps failed"
    while IFS=$'\t' read -r -u 3 id title; do
        declare -F "$prefix$id" >/dev/null ||
            die "kind/kovs-kind $cmd has a step '$id' ($title) that the kind-node provider does not run: add $prefix$id"
    done 3<<<"$steps"
    : > "$log"
    while IFS=$'\t' read -r -u 3 id title; do
        t0=$(date +%s%N)
        _log "  [kind-node] $title"
        "$prefix$id" || return 1
        printf '%s\t%s\t%d\n' "$id" "$title" "$(( ($(date +%s%N) - t0) / 1000000 ))" >> "$log"
    done 3<<<"$steps"
}

cluster_up() {
    CLUSTER_NODES=$1
    mkdir -p "$CLUSTER_DIR"
    kovs_kind_steps up kind_step_ "$CLUSTER_DIR/steps.log"
}

# Ready as kind users see it: the pod Ready (readiness probe) and the agent's
# own status with every peer's route and tunnel neighbour.
node_ready() {
    local n=$1 s
    _pod_ready "$n" || { echo "node $n: kovs pod not Ready: $(pod_status "$n" | jq -c '[.containerStatuses[] | {name, state, ready}]')"; return 1; }
    s=$(in_agent "$n" kovsctl status --json) || return 1
    jq -e --argjson peers "$(( CLUSTER_NODES - $(find "$CLUSTER_DIR" -mindepth 2 -maxdepth 2 -path "$CLUSTER_DIR/n*/left" | wc -l) - 1 ))" \
        '.ready and (.peers | length == $peers) and all(.peers[]; .route and .neighbour)' <<<"$s" >/dev/null ||
        { echo "$s" | jq -c '{ready, notReadyReason, peers: [.peers[] | {name, route}]}'; return 1; }
}

# kovsctl as the init container installed it on the node (kovs-kind's way in),
# with the node's /etc/kovs/agent.yaml.
node_kovsctl() { local n=$1; shift; in_node "$n" /opt/kovs/bin/kovsctl "$@"; }
# A directory for PATH with a `kind` that answers `kind get nodes` with this
# cluster's node containers (they are not kind's): kovs-kind's doctor, status
# and trace then reach them through docker exec, as on a kind cluster.
# With podman, also this cluster's `podman` (private-podman.sh), `kind load
# image-archive` as kind's loader runs it (the archive into every node's
# containerd: ctr images import --all-platforms --digests, k8s.io namespace),
# and a kubectl whose rollout answers (kovs-kind load restarts the DaemonSet,
# which the provider applies after the load).
kind_stub_dir() {
    local d=$CLUSTER_DIR/kind-stub n names=""
    for n in $(seq 1 "$CLUSTER_NODES"); do names+=" $(node_container "$n")"; done
    mkdir -p "$d"
    if [ "$KOVS_ENGINE" = docker ]; then
        cat > "$d/kind" <<STUB
#!/bin/sh
[ "\$1 \$2" = "get nodes" ] && printf '%s\\n'$names
STUB
    else
        ln -sf "$KOVS_PODMAN_BIN" "$d/podman"
        cat > "$d/kind" <<STUB
#!/bin/sh
# kind's stand-in for kovs cluster $CLUSTER_PREFIX (tests/cluster/lib/kind-node-cluster.sh)
echo "kind \$*" >> '$CLUSTER_DIR/kind-stub.calls'
case "\$1 \$2" in
    "version ") echo "kind (stand-in: tests/cluster/lib/kind-node-cluster.sh)" ;;
    "get clusters") echo '$(kind_cluster_name)' ;;
    "get nodes") printf '%s\\n'$names ;;
    "load image-archive")
        [ "\$4 \$5" = '--name $(kind_cluster_name)' ] || { echo "ERROR: no nodes found for cluster \"\$5\"" >&2; exit 1; }
        for node in$names; do
            '$KOVS_PODMAN_BIN' exec -i "\$node" ctr --namespace=k8s.io images import --all-platforms --digests - < "\$3" >/dev/null || exit 1
        done ;;
    *) echo "kind stand-in: \$* is not handled" >&2; exit 1 ;;
esac
STUB
        cat > "$d/kubectl" <<STUB
#!/bin/sh
echo "kubectl \$*" >> '$CLUSTER_DIR/kind-stub.calls'
case " \$* " in
    *" version --client "*) echo "Client Version: (stand-in)" ;;
    *" rollout "*) echo "daemonset.apps/kovs-agent (stand-in: the provider applies the DaemonSet next)" ;;
    *) echo "kubectl stand-in: \$* is not handled" >&2; exit 1 ;;
esac
STUB
        chmod +x "$d/kubectl"
    fi
    chmod +x "$d/kind"
    echo "$d"
}

agent_start() { die "kind-node: the kubelet runner runs the agent (restartPolicy Always); kill its container instead"; }
agent_stop() { agent_start; }

# --- pods through containerd's CNI ------------------------------------------------

# ctr run --cni in the foreground (ctr 1.6 calls CNI DEL only when the
# foreground run ends, as a runtime tears a pod's network down when it stops),
# left running in the node; the pod's network namespace is its task's own.
pod_start() {
    local n=$1 p=$2 d; d=$(node_dir "$n")
    rm -f "$d/pod-$p.pid" "$d/pod-$p.result"
    # shellcheck disable=SC2016 # expanded by the node's shell
    # POD_RUN_FLAGS, POD_RUN_IMAGE and POD_RUN_CMD (a caller's locals) run
    # another image or command: the smoke test's pods run the kovs image.
    dk exec -d "$(node_container "$n")" sh -c 'exec "$@" >>"$0" 2>&1' "$d/pod-$p.ctr.log" \
        ctr --namespace k8s.io run --rm --cni --null-io --pid-file "$d/pod-$p.pid" "${POD_RUN_FLAGS[@]}" \
        "docker.io/library/${POD_RUN_IMAGE:-$KOVS_POD_IMAGE}" "pod-$n-$p" "${POD_RUN_CMD[@]}"
}
# Done when the task runs and libcni cached the ADD's result.
_pod_added() {
    local n=$1 p=$2
    in_node "$n" test -s "/var/lib/cni/results/kovs-k8s.io-pod-$n-$p-eth0" && ctr_in "$n" tasks ls | awk -v id="pod-$n-$p" '$1 == id && $3 == "RUNNING" {f = 1} END {exit !f}'
}
pod_add() {
    local n=$1 p=$2 d; d=$(node_dir "$n")
    pod_start "$n" "$p"
    wait_for "pod $n/$p to run with its network" 60 _pod_added "$n" "$p" ||
        { tail -5 "$d/pod-$p.ctr.log" >&2; return 1; }
    in_node "$n" jq '.result' "/var/lib/cni/results/kovs-k8s.io-pod-$n-$p-eth0" > "$d/pod-$p.result"
}
_pod_gone() { ! ctr_in "$1" containers ls -q | grep -qx "pod-$1-$2"; }
pod_stop() { ctr_in "$1" tasks kill --signal SIGKILL "pod-$1-$2" >/dev/null 2>&1 || true; }
pod_del() {
    local n=$1 p=$2
    pod_stop "$n" "$p"
    wait_for "pod $n/$p to be removed (CNI DEL)" 60 _pod_gone "$n" "$p" || return 1
    rm -f "$(node_dir "$n")/pod-$p.pid"
}

# --- the smoke test (kovs-kind up's last step, kovs-kind check) --------------------
#
# kind/smoke.yaml as this provider runs it: a pod per node from the kovs image
# running `kovsctl probe serve` (ctr run --cni, with a pod's resolv.conf), a
# NodePort Service in front of them and kube-dns in front of dnsmasq in a pod
# of node 1 (CoreDNS's part), both as kube-proxy's iptables rules on every
# node. Then the probes kovs-kind runs, the same program with the same
# targets, printed by the same table (kind/node-table.awk).
# The Services are of the cluster's first family, as a Service's default
# (ipFamilyPolicy SingleStack) is: IPv6 in an ipv6 cluster.
SMOKE_POD=81 SMOKE_DNS_POD=80 SMOKE_PORT=8080 SMOKE_NODE_PORT=30080
if [ "$IP_FAMILY" = ipv6 ]; then
    SMOKE_CLUSTER_IP=fd00:10:96::50 SMOKE_DNS_IP=fd00:10:96::a SMOKE_POD_CIDR=fd00:10:244::/56
else
    SMOKE_CLUSTER_IP=10.96.0.80 SMOKE_DNS_IP=10.96.0.10 SMOKE_POD_CIDR=10.244.0.0/16
fi
SMOKE_DNS_NAME=kovs-smoke.kovs-smoke.svc.cluster.local
smoke_dir() { echo "$CLUSTER_DIR/smoke"; }
# A place's address of the smoke test's family (services.sh's places).
smoke_ip() { if [ "$IP_FAMILY" = ipv6 ]; then place_ip "$1" 6; else place_ip "$1"; fi; }
# The smoke Services' description, of that family: services.json or
# services6.json (kube-proxy_sync writes the rules of the one that exists).
smoke_services() { echo "$(smoke_dir)/services$([ "$IP_FAMILY" = ipv6 ] && echo 6).json"; }

smoke_up() {
    local n d eps=() pod_ips; d=$(smoke_dir)
    mkdir -p "$d"
    printf 'nameserver %s\nsearch kovs-smoke.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n' \
        "$SMOKE_DNS_IP" > "$d/resolv.conf"
    pod_add 1 "$SMOKE_DNS_POD" || return 1
    local POD_RUN_IMAGE=$KOVS_IMAGE POD_RUN_FLAGS=(--mount "type=bind,src=$d/resolv.conf,dst=/etc/resolv.conf,options=rbind:ro")
    local POD_RUN_CMD=(kovsctl probe serve --port "$SMOKE_PORT")
    for n in $(seq 1 "$CLUSTER_NODES"); do pod_add "$n" "$SMOKE_POD" || return 1; done
    for n in $(seq 1 "$CLUSTER_NODES"); do
        wait_for "node $n's smoke pod to serve" 20 port_listening "$SMOKE_PORT" in_pod "$n" "$SMOKE_POD" ||
            { tail -5 "$(node_dir "$n")/pod-$SMOKE_POD.ctr.log" >&2; return 1; }
        eps+=("{\"ip\": \"$(pod_ip "$n" "$SMOKE_POD")\", \"node\": \"node$n\"}")
    done
    pod_ips=$(IFS=,; echo "${eps[*]}")
    jq -n --argjson eps "[$pod_ips]" --arg dns "$(pod_ip 1 "$SMOKE_DNS_POD")" --arg ip "$SMOKE_CLUSTER_IP" --arg dnsip "$SMOKE_DNS_IP" \
        --argjson port "$SMOKE_PORT" --argjson np "$SMOKE_NODE_PORT" --arg cidr "$SMOKE_POD_CIDR" \
        '{clusterCIDR: $cidr, services: [
            {namespace: "kovs-smoke", name: "kovs-smoke", clusterIP: $ip, type: "NodePort",
             ports: [{name: "http", protocol: "TCP", port: 80, targetPort: $port, nodePort: $np}], endpoints: $eps},
            {namespace: "kube-system", name: "kube-dns", clusterIP: $dnsip,
             ports: [{name: "dns", protocol: "UDP", port: 53}, {name: "dns-tcp", protocol: "TCP", port: 53}],
             endpoints: [{ip: $dns, node: "node1"}]}]}' > "$(smoke_services)"
    for n in $(seq 1 "$CLUSTER_NODES"); do
        KOVS_SERVICES=$d/services.json KOVS_SERVICES6=$d/services6.json kube_proxy_sync "$n" iptables || return 1
    done
    local DNS_RECORDS=("$SMOKE_DNS_NAME,$SMOKE_CLUSTER_IP")
    dns_serve "pod:1:$SMOKE_DNS_POD"
}

# The probes, one file a node, then the table; non-zero when a row failed.
smoke_run() {
    local n m d targets files=(); d=$(smoke_dir)
    for n in $(seq 1 "$CLUSTER_NODES"); do
        targets=()
        for m in $(seq 1 "$CLUSTER_NODES"); do
            [ "$m" = "$n" ] || targets+=("pod/node$m=tcp:$(ip_port "$(pod_ip "$m" "$SMOKE_POD")" "$SMOKE_PORT")")
        done
        targets+=("svc=tcp:$(ip_port "$SMOKE_CLUSTER_IP" 80)" "dns=tcp:$SMOKE_DNS_NAME:80" "egress=ping:$(smoke_ip host)")
        # kubectl exec: a process in the pod's container, its resolv.conf included.
        ctr_in "$n" tasks exec --exec-id "smoke$$-$RANDOM" "pod-$n-$SMOKE_POD" kovsctl probe check "${targets[@]}" \
            </dev/null >"$d/node$n" 2>&1 || true
        in_node "$n" /opt/kovs/bin/kovsctl probe check "nodeport=tcp:$(ip_port "$(smoke_ip "node:$n")" "$SMOKE_NODE_PORT")" </dev/null >>"$d/node$n" 2>&1 || true
        files+=("$d/node$n")
    done
    awk -v what="kovsctl probe" -f "$KOVS_REPO/kind/node-table.awk" "${files[@]}" >&2
}

smoke_down() {
    local n
    in_node 1 sh -c "kill \$(cat '$CLUSTER_DIR/dns/dnsmasq.pid') 2>/dev/null" </dev/null || true
    for n in $(seq 1 "$CLUSTER_NODES"); do
        kube_proxy_flush "$n" iptables || true
        pod_del "$n" "$SMOKE_POD" || true
    done
    pod_del 1 "$SMOKE_DNS_POD" || true
}

# --- debugging and teardown -------------------------------------------------------

provider_node_debug() {
    local n=$1 d; d=$(kubelet_dir "$n")
    _log "--- node $n: container $(dk ps -a --filter "name=^$(node_container "$n")\$" --format '{{.Names}} {{.Status}}' 2>&1)"
    _log "--- node $n: kovs pod: $(pod_status "$n" | jq -c '{ready, containerStatuses: [.containerStatuses[] | {name, state, restartCount, ready, lastExit}]}' 2>&1)"
    _log "--- node $n: kubelet runner log (last 15 lines)"; tail -15 "$d/kubelet.log" >&2 2>/dev/null || true
    local f
    for f in $(find "$d/logs" -name '*.log' -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -3 | cut -d' ' -f2); do
        _log "--- node $n: $f (last 20 lines)"; tail -20 "$f" >&2 || true
    done
}

# The common node_debug reads an agent log file; here the runner keeps the logs.
node_debug() {
    provider_node_debug "$1"
    _log "--- node $1: ip addr"; in_node "$1" ip -br addr >&2 || true
}

cluster_hint() {
    if [ "$KOVS_ENGINE" = podman ]; then echo "$KOVS_PODMAN_BIN exec -it $(node_container 1) ctr -n k8s.io tasks ls"; return; fi
    echo "DOCKER_HOST=unix://$KOVS_DOCKER_SOCK docker exec -it $(node_container 1) ctr -n k8s.io tasks ls"
}

# Every container of a node stopped through containerd, so runc removes
# their cgroups (a node removed with containers inside would leave their
# cgroup directories behind in the machine's hierarchy).
_node_containers_down() {
    local n=$1 ids id
    dk exec "$(node_container "$n")" pkill -f kovs_kubelet.py >/dev/null 2>&1 || true
    ids=$(ctr_in "$n" tasks ls -q 2>/dev/null) || return 0
    # delete --force kills a running task and removes a stopped one (a pod
    # whose ctr run died leaves its task stopped), so runc removes its cgroups.
    for id in $ids; do ctr_in "$n" tasks delete --force "$id" >/dev/null 2>&1 || true; done
    for id in $(ctr_in "$n" containers ls -q 2>/dev/null); do ctr_in "$n" containers delete "$id" >/dev/null 2>&1 || true; done
}

cluster_down() {
    local n
    apt_relay_down
    local label='{{.Label "kovs.node"}}'
    [ "$KOVS_ENGINE" = docker ] || label='{{index .Labels "kovs.node"}}'
    if _dockerd_ours; then
        for n in $(dk ps --filter "label=kovs.cluster=$CLUSTER_PREFIX" --format "$label" 2>/dev/null); do
            _node_containers_down "$n"
        done
        local c; c=$(dk ps -aq --filter "label=kovs.cluster=$CLUSTER_PREFIX")
        # shellcheck disable=SC2086
        [ -z "$c" ] || dk rm -f -v $c >/dev/null 2>&1 || true
    fi
    # The docker provider's teardown: network, engine, namespace, CLUSTER_DIR.
    _docker_cluster_down
}
