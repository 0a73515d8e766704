#!/usr/bin/env bash
# bench_policy measures the product: the binary of $KOVS_BENCH_BUILD
# (scripts/test.sh points it at build-bench, gcc -O2 without sanitizers)
# where that build has one, else the one meson passes (this build's).
set -euo pipefail
bin=${KOVS_BENCH_BUILD:+$KOVS_BENCH_BUILD/tests/bench/bench_policy}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then bin=$1; fi
echo "bench_policy: $bin"
exec "$bin"
