# shellcheck shell=bash
# Shared by the e2e scenarios: a cluster from tests/cluster/lib, of the node provider
# KOVS_PROVIDER names (netns, the default, or docker), torn down on exit (also
# on failure), and small assertion helpers that say what was seen.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${KOVS_BUILD:?meson passes the build directory}"
export CLUSTER_PREFIX=${CLUSTER_PREFIX:-kovse2e$$}
# shellcheck source=../cluster/lib/prologue.sh
source "$root/tests/cluster/lib/prologue.sh"
kovs_prologue "e2e tests"
# shellcheck source=../cluster/lib/cluster.sh
source "$root/tests/cluster/lib/cluster.sh"
# shellcheck source=../cluster/lib/checks.sh
source "$root/tests/cluster/lib/checks.sh"
echo "node provider: $KOVS_PROVIDER"

on_exit() {
    local rc=$?
    if [ $rc -ne 0 ]; then
        for n in $(seq 1 "$CLUSTER_NODES"); do node_debug "$n" 2>&1 | tail -15; done
    fi
    cluster_down
    exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT TERM

checks=0
fail() { echo "FAIL: $*"; exit 1; }
pass() { checks=$((checks + 1)); echo "ok $checks - $*"; }
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
kovsctl() { node_kovsctl "$@"; }
node_status() { kovsctl "$1" status --json; }
# SIGSTOP: a hung agent (its status socket does not answer); SIGCONT resumes it.
agent_signal() { in_node "$1" kill "-$2" "$(cat "$(node_dir "$1")/agent.pid")"; }
# Not `agent_metrics | grep -q`: grep -q exits at the first match, and under
# pipefail the writer's SIGPIPE then fails the check (seen with docker exec).
metrics_has() { grep -q "$2" <<<"$(agent_metrics "$1")"; }
