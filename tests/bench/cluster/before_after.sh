#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Pod -> pod TCP throughput across nodes with two builds of kovs, one cluster
# per build at a time, in A B B A order (then again, KOVS_BENCH_ABBA_ROUNDS
# times), so that load from other work hits both alike; prints both medians
# and B / A. For "this change costs at most N %" with the build before the
# change as A. Run by hand (it needs a second build), e.g.:
#
#   git worktree add /tmp/before <commit> && meson setup /tmp/before/build && ninja -C /tmp/before/build \
#       agent/kovs-agent ctl/kovsctl cni/kovs-cni      # older trees: agent/kovsctl, offload/kovs-cni
#   KOVS_BUILD=build KOVS_BENCH_BUILD_A=/tmp/before/build KOVS_BENCH_BUILD_B=build \
#       tests/bench/cluster/before_after.sh
#
# A build directory holds agent/kovs-agent, ctl/kovsctl and cni/kovs-cni; an
# older layout (agent/kovsctl, offload/kovs-cni) is linked into that shape.
# Both agents read the harness's config with ovs.database spelt by its old
# name, dbPath, which every build reads (renamed in 2026-12).
#
#   KOVS_BENCH_THROUGHPUT_SECONDS  iperf3 seconds per run (default 5, plus 1 s omitted)
#   KOVS_BENCH_ABBA_ROUNDS         A B B A rounds (default 2)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

seconds=${KOVS_BENCH_THROUGHPUT_SECONDS:-5}
rounds=${KOVS_BENCH_ABBA_ROUNDS:-2}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "KOVS_BENCH_THROUGHPUT_SECONDS: expected a positive integer, got '$seconds'"
[[ $rounds =~ ^[1-9]$ ]] || die "KOVS_BENCH_ABBA_ROUNDS: expected 1-9, got '$rounds'"
need_netns_provider "a cluster per build"

# A build in the shape the harness expects (symlinks under a private directory).
shaped() {
    local dir=$1 out=$2 agent ctl cni
    agent=$dir/agent/kovs-agent
    ctl=$dir/ctl/kovsctl; [ -x "$ctl" ] || ctl=$dir/agent/kovsctl
    cni=$dir/cni/kovs-cni; [ -x "$cni" ] || cni=$dir/offload/kovs-cni
    for b in "$agent" "$ctl" "$cni"; do [ -x "$b" ] || die "$b not found: build it first"; done
    mkdir -p "$out/agent" "$out/ctl" "$out/cni"
    cat >"$out/agent/kovs-agent" <<EOF
#!/usr/bin/env bash
args=()
while [ \$# -gt 0 ]; do
    if [ "\$1" = --config ]; then sed 's/database: /dbPath: /' "\$2" >"\$2.compat"; args+=(--config "\$2.compat"); shift 2
    else args+=("\$1"); shift; fi
done
exec "$(realpath "$agent")" "\${args[@]}"
EOF
    chmod +x "$out/agent/kovs-agent"
    ln -sf "$(realpath "$ctl")" "$out/ctl/kovsctl"
    ln -sf "$(realpath "$cni")" "$out/cni/kovs-cni"
    echo "$out"
}
work=$(mktemp -d /tmp/kovs-abba.XXXXXX)
declare -A build=([A]=$(shaped "${KOVS_BENCH_BUILD_A:?the build before}" "$work/A")
                  [B]=$(shaped "${KOVS_BENCH_BUILD_B:?the build after}" "$work/B"))

echo "pod -> pod TCP throughput across nodes, build A vs build B, A B B A x $rounds"
echo "A: $KOVS_BENCH_BUILD_A"
echo "B: $KOVS_BENCH_BUILD_B"
echo "machine: $(machine_description)"

# One cluster of two nodes with build $1, iperf3 pod 1/1 -> pod 2/1; prints Gbit/s.
measure_with() {
    KOVS_BUILD=${build[$1]} cluster_up 2 >&2
    pod_add 1 1; pod_add 2 1
    in_pod 2 1 iperf3 -s -D --logfile "$(node_dir 2)/log/iperf3-server.log"
    wait_for "iperf3 server" 10 port_listening 5201 in_pod 2 1 >&2
    wait_for "ping across" 10 in_pod 1 1 ping -c1 -W1 -q "$(pod_ip 2 1)" >&2
    in_pod 1 1 iperf3 -c "$(pod_ip 2 1)" -t "$seconds" -O 1 -J | jq '.end.sum_received.bits_per_second / 1e9'
    cluster_down
}

declare -A gbps=([A]="" [B]="")
for r in $(seq 1 "$rounds"); do
    for which in A B B A; do
        g=$(measure_with "$which") || true
        [[ $g =~ ^[0-9]+(\.[0-9]+)?$ ]] || { rm -rf "$work"; die "round $r, build $which: no throughput measured (see above)"; }
        gbps[$which]+=" $g"
        printf 'round %d  %s  %.3f Gbit/s\n' "$r" "$which" "$g"
    done
done
rm -rf "$work"
# shellcheck disable=SC2086 # the lists are meant to split
{
    a=$(median ${gbps[A]}); b=$(median ${gbps[B]})
    printf 'A %s Gbit/s, B %s Gbit/s (median (min-max) of %d runs each)\n' "$(spread ${gbps[A]})" "$(spread ${gbps[B]})" $(( 2 * rounds ))
}
printf 'B / A: %.3f\n' "$(echo "$b / $a" | bc -l)"
