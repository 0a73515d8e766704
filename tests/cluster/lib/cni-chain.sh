# shellcheck shell=bash
# A CNI plugin chain run the way libcni (containerd's go-cni) runs a conflist,
# for the netns and docker providers (a kind-node provider lets containerd do it):
#   ADD    each plugin in order; plugin k gets the result of plugin k-1 as
#          prevResult; the last result is the chain's result
#   CHECK  each plugin in order, with the ADD's result (the cached one) as prevResult
#   DEL    each plugin in reverse order, with the cached result as prevResult
#          when there is one (there is none after a failed ADD)
# Every plugin's config is its entry in "plugins" plus the list's cniVersion
# and name; a plugin whose "capabilities" declares portMappings also gets
# runtimeConfig.portMappings (libcni injects only the capabilities a plugin
# declares), here from pod-P.portmappings, a JSON array in the CRI's shape
# ([{"hostPort": 8081, "containerPort": 8080, "protocol": "tcp"}]).
# The first plugin that fails stops the chain, as libcni does, and its error
# (the CNI error JSON) is what the chain prints. The conflist is the node's
# $CNI_CONFLIST (default 10-kovs.conflist, cni_conflist's). Needs cluster-common.sh.
CNI_CONFLIST=${CNI_CONFLIST:-10-kovs.conflist}

# Where a plugin binary is inside a node: kovs-cni under its type name in
# KOVS_BIN, the reference plugins (host-local, portmap, ...) in CNI_PLUGIN_DIR.
_cni_plugin_path() {
    local type=$1
    [[ $type =~ ^[a-z0-9][a-z0-9_-]*$ ]] || { _log "CNI plugin type '$type': not a plugin name"; return 1; }
    if [ "$type" = kovs ]; then echo "$KOVS_BIN/kovs"; else echo "$CNI_PLUGIN_DIR/$type"; fi
}

# cni_plugin_config N INDEX [PREV_RESULT_FILE]: plugin INDEX's config as libcni builds it.
cni_plugin_config() {
    local n=$1 i=$2 prev=${3:-} d mappings=null; d=$(node_dir "$n")
    [ -n "${CNI_PORT_MAPPINGS_FILE:-}" ] && [ -s "$CNI_PORT_MAPPINGS_FILE" ] && mappings=$(cat "$CNI_PORT_MAPPINGS_FILE")
    jq -c --argjson i "$i" --argjson pm "$mappings" --slurpfile prev "${prev:-/dev/null}" '
        .plugins[$i] + {cniVersion: .cniVersion, name: .name}
        + (if ($prev | length) > 0 then {prevResult: $prev[0]} else {} end)
        + (if (.plugins[$i].capabilities.portMappings // false) and $pm != null
           then {runtimeConfig: {portMappings: $pm}} else {} end)' "$d/$CNI_CONFLIST"
}

# cni_exec CMD N P: CMD (ADD, CHECK, DEL) for pod P of node N over the whole chain.
cni_exec() {
    local cmd=$1 n=$2 p=$3 d count order i type bin prev="" out step
    d=$(node_dir "$n")
    count=$(jq '.plugins | length' "$d/$CNI_CONFLIST")
    case $cmd in
        ADD|CHECK) order=$(seq 0 $(( count - 1 ))) ;;
        DEL) order=$(seq $(( count - 1 )) -1 0) ;;
        *) _log "cni_exec: unknown CNI command '$cmd' (ADD, CHECK or DEL)"; return 2 ;;
    esac
    # CHECK and DEL see the cached result of the ADD.
    [ "$cmd" != ADD ] && [ -s "$d/pod-$p.result" ] && prev=$d/pod-$p.result
    step=$(mktemp "$d/cni-step.XXXXXX")
    for i in $order; do
        type=$(jq -r ".plugins[$i].type" "$d/$CNI_CONFLIST")
        bin=$(_cni_plugin_path "$type") || { rm -f "$step" "$step.prev"; return 1; }
        if ! out=$(CNI_PORT_MAPPINGS_FILE=$d/pod-$p.portmappings cni_plugin_config "$n" "$i" "$prev" |
            in_node "$n" env CNI_COMMAND="$cmd" CNI_CONTAINERID="pod-$n-$p" CNI_NETNS="/run/netns/$(pod_ns "$n" "$p")" \
                CNI_IFNAME=eth0 CNI_PATH="$KOVS_BIN:$CNI_PLUGIN_DIR" \
                CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-$n-$p" "$bin"); then
            _log "CNI $cmd pod $n/$p: plugin $i ($type) failed"
            printf '%s\n' "$out"
            rm -f "$step" "$step.prev"
            return 1
        fi
        if [ "$cmd" = ADD ]; then
            printf '%s\n' "$out" > "$step"
            mv "$step" "$step.prev"; prev=$step.prev
        fi
    done
    [ "$cmd" = ADD ] && printf '%s\n' "$out"
    rm -f "$step" "$step.prev"
    return 0
}
