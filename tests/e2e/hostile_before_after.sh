#!/usr/bin/env bash
# The hostile-input cases of issue 26, each run on a build of the tree before
# the fixes (where it must fail, and for the reason it tests) and on this
# tree's build (where it must pass), in the same run, as the throughput
# benchmark's before/after does. By hand: it needs a second build.
#
#   git worktree add /tmp/before b3c0061 && cd /tmp/before &&
#       meson setup build --buildtype=debugoptimized -Dsanitize=false -Dfuzz=false &&
#       ninja -C build agent/kovs-agent ctl/kovsctl cni/kovs-cni
#   KOVS_BUILD=build-bench KOVS_BUILD_BEFORE=/tmp/before/build KOVS_TEST_BUILD=build-ci \
#       tests/e2e/hostile_before_after.sh
#
# b3c0061 is the last tree before the forged-VXLAN binding; the cases:
#   forged-vxlan   e2e cluster (netns): VXLAN from the underlay with node 2's
#                  outer address and other inner sources reaches the pod
#   poisoned-nodes e2e kube-peers: a /8 pod CIDR accepted, refusals not counted by reason
#   cni-netns      integration cni: a mount namespace as CNI_NETNS, a prevResult
#                  sandbox that is not CNI_NETNS (KOVS_TEST_BUILD's test binary,
#                  each build's kovs-cni)
#   uninstall      e2e kind_node_lifecycle: the taps gw0, br-int, br-phy are
#                  left after kovs-kind uninstall (the image carries each build's binaries)
#   KOVS_HOSTILE_CASES   the cases to run (default: all four, in that order)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${KOVS_BUILD:?the build of this tree (a product build: build-bench)}"
: "${KOVS_BUILD_BEFORE:?the build of the tree before the fixes (see the header)}"
test_build=${KOVS_TEST_BUILD:-$root/build-ci}
cases=${KOVS_HOSTILE_CASES:-forged-vxlan poisoned-nodes cni-netns uninstall}
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; exit 77; }
for b in "$KOVS_BUILD" "$KOVS_BUILD_BEFORE"; do
    for f in agent/kovs-agent ctl/kovsctl cni/kovs-cni; do [ -x "$b/$f" ] || { echo "$b/$f not found: build it first"; exit 1; }; done
done
after=$(realpath "$KOVS_BUILD") before=$(realpath "$KOVS_BUILD_BEFORE")
logs=$(mktemp -d /tmp/kovs-hostile.XXXXXX)

# run_case NAME BUILD: the case on that build; its output in $logs/NAME-<before|after>.log.
run_case() {
    local name=$1 build=$2 tag log; tag=$([ "$build" = "$before" ] && echo before || echo after)
    log=$logs/$name-$tag.log
    case $name in
        forged-vxlan)   KOVS_BUILD=$build KOVS_PROVIDER=netns "$root/tests/e2e/cluster_test.sh" ;;
        poisoned-nodes) KOVS_BUILD=$build KOVS_PROVIDER=netns "$root/tests/e2e/kube_peers_test.sh" ;;
        cni-netns)      KOVS_CNI=$build/cni/kovs-cni "$test_build/tests/integration/integration_cni" \
                            --gtest_filter='KovsCni.BadInputLeavesNoState:KovsCni.ChainedModeEntersOnlyCniNetns' ;;
        uninstall)      KOVS_BUILD=$test_build KOVS_IMAGE_BUILD=$build KOVS_BENCH_BUILD=$after \
                            "$root/tests/e2e/kind_node_lifecycle_test.sh" ;;
        *) echo "unknown case '$name' (forged-vxlan poisoned-nodes cni-netns uninstall)"; return 2 ;;
    esac > "$log" 2>&1
}
# What the failure before must say: the case failed for what it tests, not
# for a harness the old tree does not understand.
before_reason() {
    case $1 in
        forged-vxlan)   grep -q 'FAIL: a forged inner source was delivered to pod 1/1' "$2" &&
                            grep -m1 -E '10\.244\.3\.[0-9]+\.40000 > 10\.244\.1\.[0-9]+\.9999' "$2" ;;
        poisoned-nodes) grep -m1 'FAIL: node 1 did not refuse every poisoned Node' "$2" ;;
        cni-netns)      grep '^\[  FAILED  \] KovsCni.BadInputLeavesNoState ' "$2" &&
                            grep '^\[  FAILED  \] KovsCni.ChainedModeEntersOnlyCniNetns ' "$2" ;;
        uninstall)      grep -m1 'FAIL: node [0-9] after kovs-kind uninstall still has: .*link gw0' "$2" ;;
    esac
}

echo "before: $before"
echo "after:  $after"
printf '%-16s %-44s %s\n' case before after
failed=0
for name in $cases; do
    if run_case "$name" "$before"; then
        b="PASSED: the case cannot see the flaw"; failed=1
    elif why=$(before_reason "$name" "$logs/$name-before.log"); then
        b="failed as expected"
    else
        b="failed for another reason (see $logs/$name-before.log)"; failed=1
    fi
    if run_case "$name" "$after"; then a=passed; else a="FAILED (see $logs/$name-after.log)"; failed=1; fi
    printf '%-16s %-44s %s\n' "$name" "$b" "$a"
    if [ "$b" = "failed as expected" ]; then printf '%-16s   %s\n' "" "$(tr '\n' ' ' <<<"$why" | cut -c1-160)"; fi
done
echo "logs: $logs"
exit $failed
