#!/usr/bin/env bash
# 3 nodes x 2 pods: every pod pair over TCP and UDP, pod <-> node, host -> node,
# kovsctl doctor clean on every node and catching an injected fault, and
# /metrics parsing as Prometheus text with the repairs the start-up made.
source "$(dirname "$0")/lib.sh"

cluster_up 3
for n in 1 2 3; do for p in 1 2; do pod_add "$n" "$p"; done; done
start_servers 3 2
pass "3 nodes ready, 6 pods attached through kovs-cni"

connectivity_matrix 3 2
[ "$matrix_failed" -eq 0 ] || fail "connectivity matrix has failures"
pass "connectivity matrix: all pod pairs, pod<->node, host->node over TCP"

for n in 1 2 3; do in_pod "$n" 1 socat UDP-RECVFROM:9090,fork EXEC:cat >/dev/null 2>&1 & done
for n in 1 2 3; do wait_for "UDP echo in pod $n/1" 10 in_pod "$n" 1 bash -c "ss -Hlun 'sport = :9090' | grep -q ."; done
for src in 1 2 3; do for dst in 1 2 3; do
    [ "$src" = "$dst" ] && continue
    got=$(echo "kovs-$src-$dst" | in_pod "$src" 2 timeout 5 socat -t2 - "UDP:$(pod_ip "$dst" 1):9090" | head -1 || true)
    [ "$got" = "kovs-$src-$dst" ] || fail "UDP n$src/p2 -> n$dst/p1: got '$got'"
done; done
pass "UDP between pods on all node pairs"

for n in 1 2 3; do
    out=$(kovsctl "$n" doctor) || fail "doctor on node $n failed on a healthy cluster:
$out"
done
pass "kovsctl doctor passes on every node"

# An injected fault: TX checksum offload back on inside a pod.
in_pod 1 1 ethtool -K eth0 tx on >/dev/null 2>&1
if out=$(kovsctl 1 doctor); then fail "doctor missed TX checksum on in pod 1/1:
$out"; fi
grep -q "FAIL  tx-checksum.*pod default/pod-1-1" <<<"$out" || fail "doctor output does not name the pod:
$out"
pass "kovsctl doctor finds TX checksum turned back on in a pod (non-zero exit, names the pod)"

# The agent's periodic sweep repairs it; the repair shows up in its metrics.
metrics() { in_node 1 python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9474/metrics").read().decode())'; }
wait_for "the offload guard to turn TX checksum off again in pod 1/1" 60 \
    in_pod 1 1 bash -c "ethtool -k eth0 | grep -q '^tx-checksumming: off'"
pass "the offload guard repaired the pod"
text=$(metrics)
python3 - "$text" <<'PY' || fail "/metrics is not valid Prometheus text"
import re, sys
sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.e+-]+(Inf)?$')
for line in sys.argv[1].splitlines():
    if line.startswith("# HELP ") or line.startswith("# TYPE ") or not line:
        continue
    if not sample.match(line):
        print("bad line:", line); sys.exit(1)
PY
grep -q '^kovs_offload_repairs_total [1-9]' <<<"$text" || fail "offload repair not counted:
$(grep offload <<<"$text")"
grep -q '^kovs_repairs_total{kind="gateway"} [1-9]' <<<"$text" || fail "gateway start-up repair not counted"
grep -q '^kovs_gateway_restore_seconds_count [1-9]' <<<"$text" || fail "restore latency histogram empty"
pass "/metrics parses as Prometheus text and counts the repairs (offload, gateway)"

echo "$checks passed, 0 failed"
