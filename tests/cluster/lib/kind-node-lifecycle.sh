# shellcheck shell=bash
# The kind-node provider's lifecycle parts (sourced by kind-node-cluster.sh):
#
#   DaemonSet    the stand-in for the DaemonSet controller: the DaemonSet as
#                manifests.py renders it, one pod per node written to the mock
#                API server's object directory (a Pod as the API server stores
#                it: uid, labels, ownerReference, spec.nodeName), which the
#                node's kubelet runner lists over the node's network;
#                ds_rollout is its RollingUpdate with maxUnavailable 1: per
#                node, delete the pod, wait until that node's runner reports it
#                gone, create the new one, wait until it is Ready; ds_uninstall
#                is `kubectl delete daemonset`. The helpers take the
#                DaemonSet's name (default kovs-agent): the uninstall's
#                kovs-cleanup runs beside it
#   kovs-kind    kind_load, `kind/kovs-kind load`: rebuild, load into every
#                node, `kubectl rollout restart` (a new restartedAt annotation);
#                kind_uninstall, `kind/kovs-kind uninstall`, its steps from
#                `kovs-kind uninstall --list-steps`
#   probes       ping every 50 ms from a node, a pod or the Docker host side
#                (where the API server is), and the longest gap between two
#                replies in a time window
#   reboots      node_restart (`docker restart` of a node) and cluster_reboot
#                (every node stopped, then started: the Docker host rebooted);
#                pod_recreate, the runtime bringing a test pod back after one
#
# Pod status is not written back to the API server: the controller reads the
# runner's status files (kubelet_dir/pods/<uid>/status.json) instead.

DS_NAMESPACE=kovs-system
# ds_file [NAME]: the DaemonSet as applied (kovs-agent's is daemonset.json).
ds_file() { if [ "${1:-kovs-agent}" = kovs-agent ]; then echo "$CLUSTER_DIR/manifests/daemonset.json"; else echo "$CLUSTER_DIR/manifests/$1.json"; fi; }
objects_dir() { echo "$(api_dir)/objects"; }
_pods_dir() { echo "$(objects_dir)/$DS_NAMESPACE/pods"; }

# The source kubectl applies: the manifests, or the companion overlay.
ds_source() {
    if [ "$KIND_NODE_COMPANION" = 1 ]; then echo "$KOVS_REPO/kind/overlays/companion"; else echo "$KOVS_REPO/kind/manifests"; fi
}

# ds_render IMAGE: the DaemonSet (with IMAGE) and its ConfigMaps into the API.
ds_render() {
    mkdir -p "$CLUSTER_DIR/manifests"
    python3 "$KOVS_REPO/tests/cluster/kubelet/manifests.py" "$(ds_source)" --image "$1" \
        --daemonset "$(ds_file)" --objects "$(objects_dir)" || die "the kubelet runner cannot run the manifests of $(ds_source)"
}

# ds_pod_name N [DS]: the name of DaemonSet DS's pod bound to node N ("" if none).
ds_pod_name() {
    local f
    for f in "$(_pods_dir)"/*.json; do
        [ -e "$f" ] || continue
        # A file deleted meanwhile (ds_uninstall deletes in parallel) is no pod.
        if [ "$(jq -r '"\(.spec.nodeName) \(.metadata.ownerReferences[0].name)"' "$f" 2>/dev/null)" = "node$1 ${2:-kovs-agent}" ]; then
            basename "$f" .json; return
        fi
    done
}
ds_pod_uid() {
    local name; name=$(ds_pod_name "$1" "${2:-}")
    if [ -n "$name" ]; then jq -r .metadata.uid "$(_pods_dir)/$name.json"; fi
}

# ds_pod_create N [DS]: node N's pod from the DaemonSet's current template.
ds_pod_create() {
    local n=$1 file name uid tmp chars=bcdfghjklmnpqrstvwxz2456789
    file=$(ds_file "${2:-}")
    # The controller's generateName: the DaemonSet's name and 5 characters.
    name="$(jq -r .metadata.name "$file")-"
    for _ in 1 2 3 4 5; do name+=${chars:RANDOM % ${#chars}:1}; done
    uid=$(cat /proc/sys/kernel/random/uuid)
    mkdir -p "$(_pods_dir)"
    tmp=$(mktemp "$(_pods_dir)/.pod.XXXXXX")
    jq --arg name "$name" --arg uid "$uid" --arg node "node$n" '{
        apiVersion: "v1", kind: "Pod",
        metadata: {name: $name, namespace: .metadata.namespace, uid: $uid,
                   labels: (.spec.template.metadata.labels // {}),
                   annotations: (.spec.template.metadata.annotations // {}),
                   ownerReferences: [{apiVersion: "apps/v1", kind: "DaemonSet", name: .metadata.name,
                                      controller: true, blockOwnerDeletion: true}]},
        spec: (.spec.template.spec + {nodeName: $node})}' "$file" > "$tmp" && mv "$tmp" "$(_pods_dir)/$name.json"
}
_pod_status_of() { cat "$(kubelet_dir "$1")/pods/$2/status.json" 2>/dev/null; }
_pod_gone_from() { _pod_status_of "$1" "$2" | jq -e '.deleted' >/dev/null; }
_pod_ready_on() { _pod_status_of "$1" "$2" | jq -e '.ready' >/dev/null; }

# ds_pod_delete N [DS]: the API server deletes node N's pod; waits until the
# node's runner has stopped it (grace period included).
ds_pod_delete() {
    local n=$1 name uid
    name=$(ds_pod_name "$n" "${2:-}"); [ -n "$name" ] || return 0
    uid=$(ds_pod_uid "$n" "${2:-}")
    rm -f "$(_pods_dir)/$name.json"
    wait_for "node $n's kubelet to stop pod $name" 60 _pod_gone_from "$n" "$uid" || { node_debug "$n"; return 1; }
}

# ds_apply IMAGE: kubectl apply of the manifests; a pod for every node.
ds_apply() {
    local n
    ds_render "$1"
    for n in $(seq 1 "$CLUSTER_NODES"); do [ -n "$(ds_pod_name "$n")" ] || ds_pod_create "$n"; done
}

# ds_rollout: the RollingUpdate (maxUnavailable 1) to the DaemonSet's current
# template, node after node. Each node's times go to $CLUSTER_DIR/rollout.log:
# node, pod deleted (ms), old pod gone, new pod created, new pod Ready.
ds_rollout() {
    local n t_del t_gone t_ready uid
    : > "$CLUSTER_DIR/rollout.log"
    for n in $(seq 1 "$CLUSTER_NODES"); do
        t_del=$(( $(date +%s%N) / 1000000 ))
        ds_pod_delete "$n" || return 1
        t_gone=$(( $(date +%s%N) / 1000000 ))
        ds_pod_create "$n"
        uid=$(ds_pod_uid "$n")
        wait_for "node $n's new kovs pod to be Ready" 180 _pod_ready_on "$n" "$uid" || { node_debug "$n"; return 1; }
        t_ready=$(( $(date +%s%N) / 1000000 ))
        printf '%s %s %s %s\n' "$n" "$t_del" "$t_gone" "$t_ready" >> "$CLUSTER_DIR/rollout.log"
    done
}

# ds_set_image IMAGE: `kubectl set image daemonset/kovs-agent ...`.
ds_set_image() { ds_render "$1"; }
# ds_restart_template: `kubectl rollout restart`, an annotation with the time.
ds_restart_template() {
    local tmp; tmp=$(mktemp "$CLUSTER_DIR/manifests/.ds.XXXXXX")
    jq --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        '.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"] = $t' "$(ds_file)" > "$tmp" &&
        mv "$tmp" "$(ds_file)"
}
# ds_uninstall: `kubectl delete daemonset kovs-agent`: every pod deleted (at
# once, as the garbage collector deletes a DaemonSet's pods), none created.
ds_uninstall() {
    local n name pids=() rc=0
    for n in $(seq 1 "$CLUSTER_NODES"); do ds_pod_delete "$n" & pids+=($!); done
    for name in "${pids[@]}"; do wait "$name" || rc=1; done
    rm -f "$(ds_file)"
    return $rc
}

# kind_load: `kind/kovs-kind load`: build the image again, load it into every
# node, restart the DaemonSet's pods.
kind_load() {
    local n
    kovs_image_build
    for n in $(seq 1 "$CLUSTER_NODES"); do image_load "$n" "$KOVS_IMAGE"; done
    ds_restart_template
    ds_rollout
}

# kind_uninstall: `kind/kovs-kind uninstall`, step by step as it lists them.
kind_uninstall() { kovs_kind_steps uninstall kind_uninstall_ "$CLUSTER_DIR/uninstall-steps.log"; }
kind_uninstall_check_kubectl() { :; }
kind_uninstall_delete_daemonset() { ds_uninstall; }
# kubectl apply -f kind/uninstall.yaml, then rollout status: a pod per node,
# each Ready once its init container (the cleanup) has finished.
kind_uninstall_run_cleanup() {
    local n uid
    python3 "$KOVS_REPO/tests/cluster/kubelet/manifests.py" "$KOVS_REPO/kind/uninstall.yaml" --image "$KOVS_IMAGE" \
        --daemonset "$(ds_file kovs-cleanup)" --objects "$(objects_dir)" || die "the kubelet runner cannot run kind/uninstall.yaml"
    for n in $(seq 1 "$CLUSTER_NODES"); do ds_pod_create "$n" kovs-cleanup; done
    for n in $(seq 1 "$CLUSTER_NODES"); do
        uid=$(ds_pod_uid "$n" kovs-cleanup)
        wait_for "node $n's cleanup pod to be Ready" 120 _pod_ready_on "$n" "$uid" || { node_debug "$n"; return 1; }
    done
}
# kubectl delete: the cleanup's pods, then the manifests' objects.
kind_uninstall_delete_manifests() {
    local n pids=() rc=0 pid
    for n in $(seq 1 "$CLUSTER_NODES"); do ds_pod_delete "$n" kovs-cleanup & pids+=($!); done
    for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
    rm -f "$(ds_file kovs-cleanup)"
    rm -rf "${CLUSTER_DIR:?}/kube-api/objects/${DS_NAMESPACE:?}"   # the namespace's objects: it is deleted
    return $rc
}

# kovs_leftovers N: what kovs left on node N, one line each; nothing when it
# left nothing (the node has no nft binary: nft_tables.py asks netlink).
# shellcheck disable=SC2016
kovs_leftovers() {
    local tables
    tables=$(in_node "$1" python3 - < "$KOVS_REPO/tests/cluster/nft_tables.py") || echo "(the nftables tables could not be listed)"
    grep -x "ip kovs" <<<"$tables" | sed 's/^/table /'
    in_node "$1" sh -c '
        for l in gw0 br-int br-phy ovs-netdev kovs-shim; do ip link show "$l" >/dev/null 2>&1 && echo "link $l"; done
        for f in /etc/cni/net.d/10-kovs.conflist /opt/cni/bin/kovs /opt/kovs /var/lib/kovs /run/kovs /var/log/kovs \
                 /run/openvswitch /var/log/openvswitch /run/systemd/network/10-kovs-*; do
            [ -e "$f" ] && echo "$f"
        done
        ip route | grep -q "^10\.244\." && echo "routes to pod CIDRs: $(ip route | grep "^10\.244\." | tr "\n" ";")"
        true'
}

# image_derive NEW: a new image made from KOVS_IMAGE (a layer-free LABEL, so a
# different image id), as a release would be, for a rollout to a new image.
image_derive() {
    printf 'FROM %s\nLABEL org.kovs.rollout=%s\n' "$KOVS_IMAGE" "$1" | dk_build -q -t "$1" - >/dev/null
}

# --- probes -----------------------------------------------------------------------

_probe_dir() { echo "$CLUSTER_DIR/probes"; }
# In the node: sh -c "$_probe_sh" PIDFILE LOG COMMAND...
# shellcheck disable=SC2016
_probe_sh='pidfile=$0 log=$1; shift; echo $$ > "$pidfile"; exec "$@" > "$log" 2>&1'

# probe_start NAME DST node N | pod N P | underlay: ping DST every 50 ms, with
# a timestamp per reply, until the cluster goes (cluster_down ends the nodes'
# processes and those of the Docker host's namespace).
probe_start() {
    local name=$1 dst=$2 where=$3 d pid; d=$(_probe_dir); shift 3
    mkdir -p "$d"
    local ping=(ping -D -n -i 0.05 -W 1 "$dst")
    case $where in
        node) dk exec -d "$(node_container "$1")" sh -c "$_probe_sh" "$d/$name.pid" "$d/$name.log" "${ping[@]}" ;;
        pod) pid=$(cat "$(node_dir "$1")/pod-$2.pid")
             dk exec -d "$(node_container "$1")" sh -c "$_probe_sh" "$d/$name.pid" "$d/$name.log" \
                 nsenter --net="/proc/$pid/ns/net" "${ping[@]}" ;;
        underlay) in_underlay "${ping[@]}" > "$d/$name.log" 2>&1 &
                  disown ;;
        *) die "probe_start $name: where is node N, pod N P or underlay, not '$where'" ;;
    esac
    wait_for "probe $name to get replies" 30 grep -q 'bytes from' "$d/$name.log"
}
# probe_gap NAME FROM_MS TO_MS: the longest time (ms) without a reply between
# FROM and TO, the edges included (no reply at all: TO - FROM).
probe_gap() {
    awk -v from="$2" -v to="$3" '
        /bytes from/ { t = substr($1, 2, length($1) - 2) * 1000; if (t < from || t > to) next
                       g = t - (seen ? prev : from); if (g > max) max = g; prev = t; seen = 1 }
        END { g = to - (seen ? prev : from); if (g > max) max = g; printf "%d\n", max }' "$(_probe_dir)/$1.log"
}

# --- reboots ----------------------------------------------------------------------

_runner_up_since() { [ "$(grep -c "kubelet runner on node$1" "$(kubelet_dir "$1")/kubelet.log")" -gt "$2" ]; }
# Ready in a pod worker started after SINCE (epoch seconds): the status file
# of the boot before says Ready too.
_pod_ready_since() { _pod_status_of "$1" "$2" | jq -e --argjson t "$3" '.ready and .startedAt > $t' >/dev/null; }
# Waits for node N's runner to have started once more than BEFORE times, then
# for its pod to be Ready again.
_node_back() {
    local n=$1 before=$2 since=$3
    wait_for "containerd in node $n after its restart" 60 ctr_in "$n" version || return 1
    wait_for "node $n's kubelet runner to start at boot" 60 _runner_up_since "$n" "$before" || return 1
    wait_for "node $n's kovs pod to be Ready after the restart" 240 _pod_ready_since "$n" "$(ds_pod_uid "$n")" "$since" ||
        { node_debug "$n"; return 1; }
}
_runner_starts() { grep -c "kubelet runner on node$1" "$(kubelet_dir "$1")/kubelet.log" || true; }

# node_restart N: `docker restart` of node N (docker stops it: SIGTERM, then
# SIGKILL after 10 s), and waits until it is back with its kovs pod Ready.
node_restart() {
    local n=$1 before since; before=$(_runner_starts "$n") since=$(date +%s)
    dk restart "$(node_container "$n")" >/dev/null
    _node_back "$n" "$before" "$since"
}
# cluster_reboot: every node stopped, then every node started, as after the
# Docker host (Docker Desktop's VM, a laptop) rebooted; waits for all of them.
cluster_reboot() {
    local n before=() since; since=$(date +%s)
    for n in $(seq 1 "$CLUSTER_NODES"); do before[n]=$(_runner_starts "$n"); done
    # shellcheck disable=SC2046
    dk stop $(for n in $(seq 1 "$CLUSTER_NODES"); do node_container "$n"; done) >/dev/null
    # shellcheck disable=SC2046
    dk start $(for n in $(seq 1 "$CLUSTER_NODES"); do node_container "$n"; done) >/dev/null
    for n in $(seq 1 "$CLUSTER_NODES"); do _node_back "$n" "${before[n]}" "$since" || return 1; done
}

# pod_recreate N P: the runtime bringing test pod P back after node N
# rebooted: the dead sandbox's network torn down from libcni's cache (CNI DEL
# of every plugin in reverse order, as CRI's StopPodSandbox does once the
# netns is gone), its container record removed, then the pod started anew.
pod_recreate() {
    local n=$1 p=$2 id="pod-$1-$2" cache
    cache="/var/lib/cni/results/kovs-k8s.io-$id-eth0"
    if in_node "$n" test -s "$cache"; then
        # shellcheck disable=SC2016 # expanded by the node's shell
        in_node "$n" sh -c '
            cache=$1 id=$(jq -r .containerId "$1")
            conf=$(jq -r .config "$cache" | base64 -d) result=$(jq -c .result "$cache")
            count=$(printf "%s" "$conf" | jq ".plugins | length")
            i=$((count - 1))
            while [ $i -ge 0 ]; do
                type=$(printf "%s" "$conf" | jq -r ".plugins[$i].type")
                printf "%s" "$conf" | jq -c --argjson i $i --argjson r "$result" ".plugins[\$i] + {cniVersion, name, prevResult: \$r}" |
                    CNI_COMMAND=DEL CNI_CONTAINERID=$id CNI_NETNS= CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin "/opt/cni/bin/$type" >/dev/null ||
                    echo "CNI DEL $id: $type failed" >&2
                i=$((i - 1))
            done
            rm -f "$cache"' sh "$cache"
    fi
    ctr_in "$n" tasks delete --force "$id" >/dev/null 2>&1 || true
    ctr_in "$n" containers delete "$id" >/dev/null 2>&1 || true
    pod_add "$n" "$p"
}
