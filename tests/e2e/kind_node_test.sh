#!/usr/bin/env bash
# kovs as a kind user gets it, on the kind-node provider: the image built from
# kind/Dockerfile, kind/manifests/kovs.yaml run by the kubelet runner through
# containerd, pods created by containerd's CNI client. 3 nodes:
#  - the provider ran exactly the steps of `kind/kovs-kind up` (--dry-run prints them);
#  - what runs is the shipped image: its runtime stage and entrypoints, the
#    binaries under test, kovs-node-init as in the repo;
#  - every agent became ready through the init container: podCIDR from the API
#    server's Node, conflist and plugin where containerd looks, then the agent
#    with peers from the API (list + watch);
#  - the demo's connectivity matrix over pods that containerd made;
#  - a node leaves and joins through the API, and the agents follow;
#  - the DaemonSet's seccomp profile, token placement and memory limit are
#    in force in the running containers;
#  - kovsctl doctor on the node itself (/opt/kovs, installed by the init
#    container) while the agent does not answer;
#  - the smoke test (up's last step) passed; with node 2's agent stopped, its
#    gw0 flushed and its egress table deleted, the smoke test and kovs-kind
#    doctor both name node 2 and those checks, and pass again once the agent
#    is back;
#  - an agent that stops answering its liveness probe is restarted by the
#    runner, and the node comes back.
# With KOVS_ENGINE=podman (kind_node-podman) the nodes run on rootful podman,
# kovs-kind's KIND_EXPERIMENTAL_PROVIDER=podman path: the image built by
# podman and loaded by `kovs-kind load` itself (podman save, kind load
# image-archive); then also:
#  - `kovs-kind uninstall` leaves nothing of kovs on any node;
#  - the machine's own links, routes, iptables and nftables rules and
#    forwarding are as before the cluster, once it is gone (podman ran in
#    namespaces of its own: tests/cluster/lib/private-podman.sh).
# What podman 4.3 cannot do here, and how the provider gets around it, is in
# private-podman.sh's header and docs/kind.md (podman).
export KOVS_PROVIDER=kind-node
source "$(dirname "$0")/lib.sh"
if [ "$KOVS_ENGINE" = podman ]; then
    command -v podman >/dev/null || { echo "KOVS_ENGINE=podman needs podman (scripts/install-deps.sh installs it); skipped"; exit 77; }
    machine_before=$(machine_network_state)
fi

t0=$(ms_now)
cluster_up 3
echo "cluster up through the kovs-kind steps in $(( ($(ms_now) - t0) / 1000 ))s"

# One sequence of steps: what kovs-kind up --dry-run announces, what it lists,
# and what the provider ran.
family=(); [ "$IP_FAMILY" = ipv4 ] || family=(--ip-family "$IP_FAMILY")
dry=$("$root/kind/kovs-kind" up "${family[@]}" --dry-run | sed -n 's/^==> \[[0-9]*\] //p')
listed=$("$root/kind/kovs-kind" up "${family[@]}" --list-steps | cut -f2)
ran=$(cut -f2 "$CLUSTER_DIR/steps.log")
[ "$dry" = "$listed" ] || fail "kovs-kind up --dry-run and --list-steps differ:
$dry
---
$listed"
[ "$ran" = "$listed" ] || fail "the kind-node provider ran other steps than kovs-kind up:
$ran
---
$listed"
pass "the provider ran the $(wc -l <<<"$ran") steps of kovs-kind up, in order: $(cut -f1 "$CLUSTER_DIR/steps.log" | tr '\n' ' ')"

# The shipped image: kind/Dockerfile's runtime stage and CMD, this build's binaries.
cfg=$(dk image inspect -f '{{json .Config}}' "$KOVS_IMAGE")
want_cmd=$(sed -n 's/^CMD \(\[.*\]\)$/\1/p' "$root/kind/Dockerfile" | jq -c .)
[ "$(jq -c .Cmd <<<"$cfg")" = "$want_cmd" ] || fail "image CMD $(jq -c .Cmd <<<"$cfg"), kind/Dockerfile says $want_cmd"
dk image history --no-trunc --format '{{.CreatedBy}}' "$KOVS_IMAGE" | grep -q 'apt-get install -y --no-install-recommends.*openvswitch-switch' ||
    fail "$KOVS_IMAGE has no layer of the Dockerfile's runtime stage (apt-get install openvswitch-switch ...)"
sum() { sha256sum | cut -d' ' -f1; }
for n in 1 2 3; do
    id=$(container_id "$n" kovs-agent) || fail "node $n: no running kovs-agent container"
    img=$(ctr_in "$n" containers info "$id" | jq -r .Image)
    [ "$img" = "docker.io/library/$KOVS_IMAGE" ] || fail "node $n: the agent runs image $img"
    [ "$(in_agent "$n" cat /usr/local/bin/kovs-node-init | sum)" = "$(sum < "$root/kind/kovs-node-init")" ] ||
        fail "node $n: the image's kovs-node-init is not kind/kovs-node-init"
    [ "$(in_agent "$n" cat /usr/local/bin/kovs-agent | sum)" = "$(sum < "$KOVS_IMAGE_BUILD/agent/kovs-agent")" ] ||
        fail "node $n: the image's kovs-agent is not the one under test"
    [ "$(in_node "$n" cat /opt/cni/bin/kovs | sum)" = "$(sum < "$KOVS_IMAGE_BUILD/cni/kovs-cni")" ] ||
        fail "node $n: /opt/cni/bin/kovs is not the kovs-cni under test"
done
pass "every node runs $KOVS_IMAGE from kind/Dockerfile's runtime stage, with the binaries under test"

for n in 1 2 3; do
    st=$(pod_status "$n")
    jq -e '.initContainerStatuses[0] | .name == "install-cni" and .state == "terminated" and .lastExit.exitCode == 0' <<<"$st" >/dev/null ||
        fail "node $n: install-cni did not complete: $(jq -c .initContainerStatuses <<<"$st")"
    jq -e '.ready and (.containerStatuses[] | select(.name == "kovs-agent") | .ready and .restartCount == 0)' <<<"$st" >/dev/null ||
        fail "node $n: kovs-agent not ready: $(jq -c .containerStatuses <<<"$st")"
    grep -qF " $(node_ip "$n") \"GET /api/v1/nodes/node$n HTTP/1.1\" 200 " "$(api_dir)/requests.log" ||
        fail "node $n: kovs-node-init never read its Node from the API server"
    grep -qF " $(node_ip "$n") \"GET /api/v1/nodes HTTP/1.1\" 200 " "$(api_dir)/requests.log" ||
        fail "node $n: the agent never listed the Nodes"
    grep -qF " $(node_ip "$n") \"GET /api/v1/nodes?watch=true&" "$(api_dir)/requests.log" ||
        fail "node $n: the agent never watched the Nodes"
    conf=$(in_node "$n" cat /etc/cni/net.d/10-kovs.conflist)
    # One host-local range per pod CIDR of the Node, in its order (dual: IPv4 first).
    cidrs=$(node_pod_cidrs "$n")
    [ "$(jq -r '[.plugins[0].ipam.ranges[][0].subnet] | join(", ")' <<<"$conf")" = "$cidrs" ] ||
        fail "node $n: conflist subnets are not the Node's podCIDRs ($cidrs): $conf"
    [ "$(jq -r '[.plugins[].type] | join(",")' <<<"$conf")" = "kovs,portmap" ] || fail "node $n: conflist plugins: $conf"
    in_agent "$n" grep -qx "  podCIDRs: \['${cidrs//, /"', '"}'\]" /etc/kovs/agent.yaml ||
        fail "node $n: agent.yaml lacks the podCIDRs $cidrs: $(in_agent "$n" grep -A1 '^node:' /etc/kovs/agent.yaml)"
done
pass "init container -> agent on every node: podCIDR from the Node, conflist + plugin in containerd's dirs, peers listed and watched"

# What the shipped DaemonSet asks for beyond capabilities is in force: every
# container under a seccomp filter (containerd's default profile; the agent
# became ready under it), the API token in the agent only, not in ovs, and
# the agent's cgroup memory limit.
sa=/var/run/secrets/kubernetes.io/serviceaccount
for c in ovs kovs-agent; do
    mode=$(in_container 1 "$c" sh -c 'sed -n "s/^Seccomp:[[:space:]]*//p" /proc/self/status') || fail "node 1: cannot read $c's seccomp mode"
    [ "$mode" = 2 ] || fail "node 1: container $c runs with seccomp mode '$mode', not 2 (filter): RuntimeDefault not applied"
done
in_agent 1 test -s "$sa/token" || fail "node 1: the agent has no service-account token at $sa"
! in_container 1 ovs test -e "$sa/token" || fail "node 1: the ovs container was given the API token"
agent_pid=$(ctr_in 1 tasks ls | awk -v id="$(container_id 1 kovs-agent)" '$1 == id {print $2}')
# cgroup v1 (these machines: the memory hierarchy) or v2 (the unified one).
if cgroup=$(in_node 1 grep -m1 '^[0-9]*:\([^:]*,\)\?memory\(,[^:]*\)\?:' "/proc/$agent_pid/cgroup"); then
    limit_file=/sys/fs/cgroup/memory${cgroup##*:}/memory.limit_in_bytes
else
    limit_file=/sys/fs/cgroup$(in_node 1 sed -n 's/^0:://p' "/proc/$agent_pid/cgroup")/memory.max
fi
limit=$(in_node 1 cat "$limit_file") || fail "node 1: cannot read the agent's memory limit ($limit_file)"
[ "$limit" = $((128 * 1024 * 1024)) ] || fail "node 1: the agent's cgroup memory limit is '$limit', not 128Mi"
# Under the filter, pidfd_getfd (SYS_PTRACE) still reaches vswitchd's sockets.
sized() { in_agent 1 kovsctl --config /etc/kovs/agent.yaml status --json | jq -e '.socketBuffers | .resized > 0 and .error == ""'; }
wait_for "node 1's agent to size vswitchd's socket buffers under seccomp" 30 sized || fail "node 1: socket buffers not sized under seccomp"
pass "RuntimeDefault seccomp on ovs and kovs-agent (pidfd_getfd still sizes vswitchd's sockets), the API token only in the agent, the agent's memory limit 128Mi"

for n in 1 2 3; do for p in 1 2; do pod_add "$n" "$p"; done; done
grep -q 'ADD k8s.io-pod-1-1/eth0' < <(in_node 1 cat /var/log/kovs/cni.log) || fail "kovs-cni logged no ADD from containerd"
start_servers 3 2
connectivity_matrix 3 2
[ "$matrix_failed" -eq 0 ] || fail "connectivity matrix has failures"
pass "connectivity matrix over 6 pods created by containerd (ctr run --cni -> libcni -> kovs-cni)"

# kovs-kind doctor as a user runs it: docker exec into every node container
# (kind's `get nodes` stands in: these nodes are not kind's), one table.
kind_stub=$(kind_stub_dir)
doctor_table=$(PATH="$kind_stub:$PATH" DOCKER_HOST="unix://$KOVS_DOCKER_SOCK" "$root/kind/kovs-kind" doctor 2>&1) ||
    fail "kovs-kind doctor failed on the healthy cluster: $doctor_table"
grep -qE "check +$(node_container 1) +$(node_container 2) +$(node_container 3)" <<<"$doctor_table" &&
    grep -q "every check passed on every node" <<<"$doctor_table" || fail "kovs-kind doctor: no table of the 3 nodes: $doctor_table"
echo "$doctor_table" | sed -n '/check /,$p' | head -20
pass "kovs-kind doctor: kovsctl doctor on every node through docker exec, one table, every check passed"

# The smoke test ran as up's last step; its table is in the log above.
grep -q "smoke_test" "$CLUSTER_DIR/steps.log" || fail "the provider did not run the smoke test step"
pass "the smoke test passed at the end of up: pods across every pair of nodes, ClusterIP, DNS, egress, NodePort"

# Node 2 broken as a user might find it: the agent's container stopped (the
# runner paused, so that nothing restarts it), gw0 flushed, the egress table
# deleted. The smoke test and kovs-kind doctor must both name node 2 and what
# is broken there.
smoke_up || fail "the smoke test's pods did not start"
runner='kovs_kubelet.py|pod_worker.py'
in_node 2 pkill -STOP -f "$runner"
agent2=$(container_id 2 kovs-agent) || fail "node 2: no running kovs-agent container"
ctr_in 2 tasks kill --signal SIGKILL "$agent2" >/dev/null
agent_gone() { ! ctr_in 2 tasks ls | awk -v id="$agent2" '$1 == id && $3 == "RUNNING" {f = 1} END {exit !f}'; }
wait_for "node 2's agent container to stop" 20 agent_gone || fail "node 2's agent did not stop"
in_node 2 ip addr flush dev gw0
in_node 2 python3 - delete ip kovs < "$root/tests/cluster/nft_tables.py" || fail "node 2: cannot delete table ip kovs"
smoke=$(smoke_run 2>&1) && fail "the smoke test passed with node 2 broken: $smoke"
echo "$smoke"
row() { grep -E "^    $1 " <<<"$smoke" | awk '{print $2, $3, $4}'; }
# Node 2's pods lost their gateway: nothing leaves them. From the other nodes
# only egress is certain to pass: a ClusterIP may pick node 2's pod.
[ "$(row egress)" = "ok FAIL ok" ] || fail "smoke test: egress should fail from node 2 only: $(row egress)"
for check in svc dns egress nodeport pod/node1 pod/node3; do
    [ "$(row "$check" | cut -d' ' -f2)" = FAIL ] || fail "smoke test: $check from node 2 should fail: $(row "$check")"
done
grep -q "^  node2:$" <<<"$smoke" && grep -qE "^    FAIL  egress +no echo reply from $DOCKER_HOST_IP" <<<"$smoke" ||
    fail "smoke test: node 2's failing lines are not named: $smoke"
doctor_table=$(PATH="$kind_stub:$PATH" DOCKER_HOST="unix://$KOVS_DOCKER_SOCK" "$root/kind/kovs-kind" doctor 2>&1) &&
    fail "kovs-kind doctor passed with node 2 broken: $doctor_table"
echo "$doctor_table" | sed -n '/check /,$p'
c2=$(node_container 2)
for check in gateway egress; do
    grep -qE "^    $check +ok +FAIL +ok *$" <<<"$doctor_table" || fail "kovs-kind doctor: $check should fail on node 2 only: $doctor_table"
done
grep -q "^  $c2:$" <<<"$doctor_table" && grep -qE "^    FAIL  gateway " <<<"$doctor_table" && grep -qE "^    FAIL  egress " <<<"$doctor_table" ||
    fail "kovs-kind doctor: node 2's failing lines are not named: $doctor_table"
pass "node 2 broken (agent stopped, gw0 flushed, egress table deleted): the smoke test and kovs-kind doctor both name node 2, gateway and egress"
in_node 2 pkill -CONT -f "$runner"
wait_for "node 2's agent to be back and ready" 120 node_ready 2 || fail "node 2 did not come back"
smoke=$(smoke_run 2>&1) || fail "the smoke test still fails after node 2's agent repaired it: $smoke"
smoke_down
pass "the runner restarted node 2's agent, which restored gw0 and the egress table: the smoke test passes again"

# Node 3 leaves the API and comes back: the other agents drop and re-add it.
touch "$(node_dir 3)/left"; write_peers
for n in 1 2; do wait_for "node $n to drop node 3 (DELETED from the watch)" 30 node_ready "$n" || fail "node $n kept node 3"; done
rm "$(node_dir 3)/left"; write_peers
for n in 1 2; do wait_for "node $n to add node 3 back (ADDED)" 30 node_ready "$n" || fail "node $n did not re-add node 3"; done
tcp_ok "$(pod_ip 3 1)" in_pod 1 1 || fail "pod 1/1 cannot reach pod 3/1 after node 3 rejoined"
pass "a node leaves and rejoins through the API server's watch; traffic to it works again"

# Liveness: a stopped agent answers no /healthz; the runner kills and restarts it.
pid=$(ctr_in 1 tasks ls | awk -v id="$(container_id 1 kovs-agent)" '$1 == id {print $2}')
in_node 1 kill -STOP "$pid"
# Meanwhile, kovsctl as the init container installed it on the node itself
# (/opt/kovs, the image's libraries with it): doctor runs with the agent not
# answering, from OVS and the config alone.
doc=$(in_node 1 /opt/kovs/bin/kovsctl doctor 2>&1) || true
grep -q "^kovsctl doctor on node node1" <<<"$doc" && grep -qE '^  ok +ovsdb ' <<<"$doc" && grep -qE '^  ok +bridges ' <<<"$doc" &&
    grep -q "did not answer" <<<"$doc" || fail "kovsctl on node 1 (/opt/kovs/bin/kovsctl doctor) with the agent stopped: $doc"
restarted() { pod_status 1 | jq -e '.containerStatuses[] | select(.name == "kovs-agent") | .restartCount >= 1 and .state == "running"' >/dev/null; }
wait_for "the runner to restart the agent after failed liveness probes" 120 restarted || fail "the agent was not restarted"
grep -q 'Killing container kovs-agent .*failed liveness probe' "$(kubelet_dir 1)/kubelet.log" || fail "no liveness kill in the runner's log"
wait_for "node 1 to be ready again" 90 node_ready 1 || fail "node 1 did not come back after the restart"
wait_for "pod 1/1 to reach pod 2/1 again" 30 tcp_ok "$(pod_ip 2 1)" in_pod 1 1 || fail "traffic from node 1 did not come back"
pass "kovsctl doctor runs on the node with the agent stopped; an agent failing its liveness probe is killed and restarted, and node 1 is ready again"

if [ "$KOVS_ENGINE" = podman ]; then
    t0=$(ms_now)
    kind_uninstall || fail "kovs-kind uninstall failed"
    for n in 1 2 3; do
        left=$(kovs_leftovers "$n")
        [ -z "$left" ] || fail "node $n after kovs-kind uninstall still has: $(tr '\n' ',' <<<"$left")"
        ping_ok "$API_ADDR" in_node "$n" || fail "node $n cannot reach the podman host side after kovs-kind uninstall"
    done
    pass "kovs-kind uninstall on podman in $(( $(ms_now) - t0 )) ms: nothing of kovs is left on any node, every node still on the network"
    cluster_down
    after=$(machine_network_state)
    [ "$after" = "$machine_before" ] || fail "the machine's own network changed while the podman cluster ran: $(diff <(echo "$machine_before") <(echo "$after"))"
    pass "podman's cluster gone: the machine's links, routes, iptables, nftables and forwarding are as before it"
fi

echo "$checks passed, 0 failed"
