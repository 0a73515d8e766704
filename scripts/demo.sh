#!/usr/bin/env bash
# The main job: installs dependencies, builds kovs, brings up a 3-node
# kind-shaped cluster (network namespaces, each node with its own userspace
# OVS and kovs-agent), attaches 2 pods per node through kovs-cni, prints the
# connectivity matrix and a throughput figure, and tears everything down.
#
#   scripts/demo.sh [--provider netns|docker|kind-node] [--nodes N] [--pods-per-node M] [--topology flat|routed] [--keep]
# (--provider docker: nodes are Docker containers, as kind makes them; --provider
# kind-node: those nodes run containerd and kovs as a kind user gets it, image,
# manifests and all; see docs/kind.md; --topology routed: the nodes in two
# subnets behind a router, see docs/multi-host.md)
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> dependencies"
scripts/install-deps.sh
echo "==> build (build/)"
# debugoptimized (-O2 -g): GCC 12's -O3 reports a false -Wrestrict in libstdc++'s string code.
[ -f build/build.ninja ] || meson setup build >/dev/null
# The log keeps the static-glibc link notes of kovs-cni out of the demo's output.
ninja -C build agent/kovs-agent ctl/kovsctl cni/kovs-cni >build/demo-build.log 2>&1 ||
    { tail -40 build/demo-build.log; echo "build failed (full log: build/demo-build.log)" >&2; exit 1; }
echo "==> cluster"
KOVS_BUILD=$PWD/build exec tests/cluster/local-cluster demo "$@"
