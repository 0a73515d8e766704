# shellcheck shell=bash
# Shared by the e2e scenarios: a netns cluster from kind/lib, torn down on exit
# (also on failure), and small assertion helpers that say what was seen.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${KOVS_BUILD:?meson passes the build directory}"
export CLUSTER_PREFIX=${CLUSTER_PREFIX:-kovse2e$$}
# shellcheck source=../../kind/lib/netns-cluster.sh
source "$root/kind/lib/netns-cluster.sh"
# shellcheck source=../../kind/lib/checks.sh
source "$root/kind/lib/checks.sh"
[ "$(id -u)" -eq 0 ] || { echo "e2e tests need root"; exit 77; }

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
kovsctl() { local n=$1; shift; in_node "$n" "$KOVS_BIN/kovsctl" --config "$(node_dir "$n")/agent.yaml" "$@"; }
node_status() { kovsctl "$1" status --json; }
