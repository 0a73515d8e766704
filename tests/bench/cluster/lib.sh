# shellcheck shell=bash source-path=SCRIPTDIR
# Shared by the cluster benchmarks: a netns cluster from tests/cluster/lib (real OVS,
# kovs-agent, kovs-cni), torn down on exit even when the setup fails, and
# the helpers that describe the build and summarise repeated figures.
# Benchmarks print; they never assert on a figure. They fail only when the
# setup itself fails, and skip (77) without root.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
: "${KOVS_BUILD:?set KOVS_BUILD to a meson build directory of kovs (meson passes it)}"
# What runs in the nodes: the build meson passes, unless KOVS_BENCH_BUILD names
# another. scripts/test.sh points it at a build without sanitizers: the suite's
# own ASan+UBSan build inflates the agent's RSS and CPU several times over.
KOVS_BUILD=${KOVS_BENCH_BUILD:-$KOVS_BUILD}
# shellcheck source=../../cluster/lib/prologue.sh
source "$root/tests/cluster/lib/prologue.sh"
kovs_prologue "cluster benchmarks"
# The smoke test at the end of kovs-kind up is not what a benchmark measures.
[ "${KOVS_PROVIDER:-netns}" != kind-node ] || export KOVS_KIND_SMOKE=${KOVS_KIND_SMOKE:-0}
export CLUSTER_PREFIX=${CLUSTER_PREFIX:-kovsb$$}
# The node provider KOVS_PROVIDER names (tests/cluster/lib/cluster.sh), or the netns
# one where the harness predates providers.
if [ -e "$root/tests/cluster/lib/cluster.sh" ]; then
    # shellcheck source=../../cluster/lib/cluster.sh
    source "$root/tests/cluster/lib/cluster.sh"
else
    # shellcheck source=../../cluster/lib/netns-cluster.sh
    source "$root/tests/cluster/lib/netns-cluster.sh"
fi
# shellcheck source=../../cluster/lib/checks.sh
source "$root/tests/cluster/lib/checks.sh"
for b in agent/kovs-agent ctl/kovsctl cni/kovs-cni; do
    [ -x "$KOVS_BUILD/$b" ] || die "$KOVS_BUILD/$b not found: build first"
done

bench_on_exit() {
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
        for n in $(seq 1 "$CLUSTER_NODES"); do
            [ -e "$(node_dir "$n")/agent.pid" ] && node_debug "$n" 2>&1 | tail -15
        done
    fi
    cluster_down
    exit $rc
}
trap bench_on_exit EXIT
trap 'exit 130' INT TERM

# "debugoptimized, ASan+UBSan" etc., from meson's record of the build and
# from the agent binary itself (an ASan runtime inflates RSS several-fold and
# slows every call, so footprint figures of such a build are not the product's).
build_description() {
    local info=$KOVS_BUILD/meson-info/intro-buildoptions.json type="unknown build type" san=() libs
    if [ -r "$info" ]; then
        type=$(jq -r '.[] | select(.name == "buildtype") | .value' "$info")
    fi
    libs=$(ldd "$KOVS_BUILD/agent/kovs-agent" 2>/dev/null || true)
    if grep -qa -m1 __asan_init "$KOVS_BUILD/agent/kovs-agent" || [[ $libs == *libasan* ]]; then
        san+=(ASan)
    fi
    if grep -qa -m1 __ubsan_handle "$KOVS_BUILD/agent/kovs-agent"; then san+=(UBSan); fi
    if [ ${#san[@]} -eq 0 ]; then
        echo "$type, no sanitizers"
    else
        local IFS=+
        echo "$type, ${san[*]} (sanitizer runtime inflates RSS and CPU: not release figures)"
    fi
}

machine_description() {
    echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), kernel $(uname -r), $(ovs-vswitchd --version | head -1)"
}

# median / min / max of the numbers given as arguments, as "median (min-max)".
spread() {
    printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f (%.2f-%.2f)", m, v[1], v[NR] }'
}
# Skips (77) a benchmark that needs what only the netns provider offers.
need_netns_provider() {
    [ "${KOVS_PROVIDER:-netns}" = netns ] || { echo "$1 needs the netns node provider (KOVS_PROVIDER=${KOVS_PROVIDER}); skipped"; exit 77; }
}

# The iperf3 benchmarks' knobs, checked, into `seconds` and `repeats`:
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted for slow start)
#   KOVS_BENCH_THROUGHPUT_REPEATS  runs per network (default 3)
throughput_knobs() {
    seconds=${KOVS_BENCH_THROUGHPUT_SECONDS:-5}
    repeats=${KOVS_BENCH_THROUGHPUT_REPEATS:-3}
    [[ $seconds =~ ^[1-9][0-9]*$ ]] || die "KOVS_BENCH_THROUGHPUT_SECONDS: expected a positive integer, got '$seconds'"
    [[ $repeats =~ ^[1-9][0-9]?$ ]] || die "KOVS_BENCH_THROUGHPUT_REPEATS: expected 1-99, got '$repeats'"
}

median() {
    printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
