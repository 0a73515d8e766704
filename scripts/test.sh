#!/usr/bin/env bash
# The full kovs test suite, as CI runs it: installs dependencies, builds with
# ASan+UBSan (clang, so the libFuzzer targets build too), runs the unit and
# integration tests, fuzzes each target for a bounded time and runs the
# benchmarks (they print ratios; they assert nothing about time).
#
#   scripts/test.sh                 everything CI runs (the "ci" profile, below)
#   KOVS_PROFILE=full scripts/test.sh      the whole matrix: also every e2e scenario
#                                   in suite "matrix" (tests/e2e/meson.build says which)
#   KOVS_SUITES="unit" scripts/test.sh     only some suites (unit integration e2e fuzz bench)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${KOVS_BUILD_DIR:-build-ci}
suites=${KOVS_SUITES:-"unit integration e2e fuzz bench"}
profile=${KOVS_PROFILE:-ci}
case $profile in ci|full) ;; *) echo "KOVS_PROFILE: expected ci or full, got '$profile'" >&2; exit 2 ;; esac
fuzz_seconds=${KOVS_FUZZ_SECONDS:-20}

step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
scripts/install-deps.sh

# Compiler output is cached by ccache (installed by install-deps) and shared
# between checkouts: meson passes relative paths, and with the working
# directory left out of the hash a fresh clone reuses the objects of an earlier
# build of the same sources and flags (CI's clean clones included). A cold
# cache costs the full build, about 15-20 minutes of the 2-core machine.
cc_prefix=""
if command -v ccache >/dev/null; then
  cc_prefix="ccache "
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
fi

rm -f "$build"/results-*.json
step "build ($build: clang, ASan+UBSan, libFuzzer)"
if [ ! -f "$build/build.ninja" ]; then
  CC="${cc_prefix}clang" CXX="${cc_prefix}clang++" meson setup "$build" -Dsanitize=true -Dfuzz=true >/dev/null
fi
[ -n "$cc_prefix" ] && ccache --zero-stats >/dev/null
ninja -C "$build"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The cluster benchmarks measure the product against its targets (agent RSS
# and CPU, throughput), so they run binaries without sanitizers (gcc -O2, the
# build docs/benchmarks.md quotes); so does the kovs image the kind-node e2e
# tests build from kind/Dockerfile (it ships a static kovs-cni, which a
# sanitizer build cannot link). The sanitizers stay on for everything else.
if [[ " $suites " == *" bench "* || " $suites " == *" e2e "* ]]; then
  product=${KOVS_BENCH_BUILD_DIR:-build-bench}
  step "build ($product: gcc debugoptimized, no sanitizers, for the cluster benchmarks and the kovs image)"
  if [ ! -f "$product/build.ninja" ]; then
    CC="${cc_prefix}gcc" CXX="${cc_prefix}g++" meson setup "$product" --buildtype=debugoptimized -Dsanitize=false -Dfuzz=false >/dev/null
  fi
  ninja -C "$product" agent/kovs-agent ctl/kovsctl cni/kovs-cni tests/bench/kovs-connect-probe
  export KOVS_BENCH_BUILD=$root/$product KOVS_IMAGE_BUILD=$root/$product
fi
if [ -n "$cc_prefix" ]; then
  ccache --print-stats | awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit|cache_miss)$/ {n[$1]=$2}
    END {printf "ccache: %d compilations from the cache, %d compiled\n", n["direct_cache_hit"]+n["preprocessed_cache_hit"], n["cache_miss"]}'
fi

failed=0
meson_suites=()
for s in $suites; do
  case $s in unit|integration|e2e) meson_suites+=(--suite "$s") ;; esac
done
# CI's profile leaves out suite "matrix": the e2e combinations that are a
# second provider for what the first already proves, and the MTU 9000
# benchmark, to keep CI well under its limit.
[ "$profile" = ci ] && [ ${#meson_suites[@]} -gt 0 ] && meson_suites+=(--no-suite matrix)
if [ ${#meson_suites[@]} -gt 0 ]; then
  step "tests ($profile profile): ${meson_suites[*]}"
  meson test -C "$build" "${meson_suites[@]}" --print-errorlogs --num-processes 2 || failed=1
  cp "$build/meson-logs/testlog.json" "$build/results-tests.json"
fi

fuzz_passed=0 fuzz_failed=0
if [[ " $suites " == *" fuzz "* ]]; then
  step "fuzz (${fuzz_seconds}s per target)"
  for f in "$build"/tests/fuzz/fuzz_*; do
    [ -f "$f" ] && [ -x "$f" ] || continue
    name=$(basename "$f")
    corpus=$(mktemp -d)
    seeds="$root/tests/fuzz/corpus/${name#fuzz_}"
    dict=()
    case $name in fuzz_cni_config|fuzz_jsonrpc|fuzz_tunnel_peers) dict=(-dict="$root/tests/fuzz/dict/json.dict") ;; esac
    if "$f" -max_total_time="$fuzz_seconds" -print_final_stats=1 "${dict[@]}" "$corpus" ${seeds:+$( [ -d "$seeds" ] && echo "$seeds")} \
         >"$build/$name.log" 2>&1; then
      echo "fuzz $name: ok ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$build/$name.log" | grep -o '[0-9]*$') runs)"
      fuzz_passed=$((fuzz_passed + 1))
    else
      echo "fuzz $name: FAILED, see $build/$name.log"; tail -30 "$build/$name.log"
      fuzz_failed=$((fuzz_failed + 1)); failed=1
    fi
    rm -rf "$corpus"
  done
fi

if [[ " $suites " == *" bench "* ]]; then
  step "benchmarks (figures and ratios, no timing assertions)"
  bench_suites=(--suite bench)
  if [ "$profile" = ci ]; then
    bench_suites+=(--no-suite matrix)
    # Pod startup through containerd: one burst of 10 pods per node per plugin
    # instead of two of 20 (20 pods at once on 2 cores take ~50 s each, for
    # either plugin); the single-pod starts stay at 10 per node. About 4
    # minutes less. gw0 restore: 500 flushes per family instead of 1000 (its
    # p99 is still the 5th worst). The full profile keeps the defaults.
    export KOVS_BENCH_STARTUP_BURST=${KOVS_BENCH_STARTUP_BURST:-10} KOVS_BENCH_STARTUP_ROUNDS=${KOVS_BENCH_STARTUP_ROUNDS:-1}
    export KOVS_BENCH_GATEWAY_FLUSHES=${KOVS_BENCH_GATEWAY_FLUSHES:-500}
    # Connection setup: 3000 connections per run instead of 10000.
    export KOVS_BENCH_CONNECT_COUNT=${KOVS_BENCH_CONNECT_COUNT:-3000}
  fi
  meson test -C "$build" --benchmark "${bench_suites[@]}" --verbose --num-processes 1 || failed=1
  cp "$build/meson-logs/testlog.json" "$build/results-bench.json"
fi

# One summary line for people and CI: meson's tests plus the fuzz targets.
read -r passed fail skipped < <(python3 - "$build"/results-*.json <<'PY'
import json, sys
p = f = s = 0
for path in sys.argv[1:]:
    try:
        for line in open(path):
            r = json.loads(line).get("result")
            if r in ("OK", "EXPECTEDFAIL"): p += 1
            elif r == "SKIP": s += 1
            else: f += 1
    except FileNotFoundError:
        pass
print(p, f, s)
PY
)
passed=$((passed + fuzz_passed)); fail=$((fail + fuzz_failed))
echo
echo "$passed passed, $fail failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$fail" -eq 0 ]
