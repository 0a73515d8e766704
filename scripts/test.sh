#!/usr/bin/env bash
# The full kovs test suite, as CI runs it: installs dependencies, builds with
# ASan+UBSan (clang, so the libFuzzer targets build too), runs the unit and
# integration tests, fuzzes each target for a bounded time and runs the
# benchmarks (they print ratios; they assert nothing about time).
#
#   scripts/test.sh                 everything CI runs (the "ci" profile, below)
#   KOVS_PROFILE=full scripts/test.sh      the whole matrix: also every e2e scenario
#                                   in suite "matrix" (tests/e2e/meson.build says which)
#                                   and the aarch64 suite (arm64)
#   KOVS_SUITES="unit" scripts/test.sh     only some suites (unit integration e2e fuzz bench arm64)
#
# Suite arm64 cross-builds kovs for aarch64 (cross/aarch64-linux-gnu.ini, gcc
# with UBSan) and runs the unit tests and the fuzz corpus replays under
# qemu-user: the node architecture of kind on Apple silicon.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${KOVS_BUILD_DIR:-build-ci}
profile=${KOVS_PROFILE:-ci}
case $profile in ci|full) ;; *) echo "KOVS_PROFILE: expected ci or full, got '$profile'" >&2; exit 2 ;; esac
# The aarch64 cross build and its tests under qemu (suite arm64) take longer
# than CI's profile has left: the full profile runs them.
default_suites="unit integration e2e fuzz bench"
[ "$profile" = full ] && default_suites+=" arm64"
suites=${KOVS_SUITES:-$default_suites}
fuzz_seconds=${KOVS_FUZZ_SECONDS:-20}

step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
if [[ " $suites " == *" arm64 "* ]]; then scripts/install-deps.sh --arm64; else scripts/install-deps.sh; fi

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

mkdir -p "$build"
rm -f "$build"/results-*.json
[ -n "$cc_prefix" ] && ccache --zero-stats >/dev/null
if [[ " $suites " =~ \ (unit|integration|e2e|fuzz|bench)\  ]]; then
  step "build ($build: clang, ASan+UBSan, libFuzzer)"
  if [ ! -f "$build/build.ninja" ]; then
    CC="${cc_prefix}clang" CXX="${cc_prefix}clang++" meson setup "$build" -Dsanitize=true -Dfuzz=true >/dev/null
  fi
  ninja -C "$build"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The cluster benchmarks and bench_policy measure the product against its
# targets (agent RSS and CPU, throughput, a change enforced), so they run
# binaries without sanitizers (gcc -O2, the build docs/benchmarks.md
# quotes); so does the kovs image the kind-node e2e
# tests build from kind/Dockerfile (it ships a static kovs-cni, which a
# sanitizer build cannot link). The sanitizers stay on for everything else.
if [[ " $suites " == *" bench "* || " $suites " == *" e2e "* ]]; then
  product=${KOVS_BENCH_BUILD_DIR:-build-bench}
  step "build ($product: gcc debugoptimized, no sanitizers, for the cluster benchmarks and the kovs image)"
  if [ ! -f "$product/build.ninja" ]; then
    CC="${cc_prefix}gcc" CXX="${cc_prefix}g++" meson setup "$product" --buildtype=debugoptimized -Dsanitize=false -Dfuzz=false >/dev/null
  fi
  ninja -C "$product" agent/kovs-agent ctl/kovsctl cni/kovs-cni tests/bench/kovs-connect-probe tests/bench/bench_policy
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

if [[ " $suites " == *" arm64 "* ]]; then
  arm64_build=${KOVS_ARM64_BUILD_DIR:-build-arm64}
  step "arm64 ($arm64_build: aarch64-linux-gnu gcc, UBSan; unit tests and fuzz replays under qemu-user)"
  if [ ! -f "$arm64_build/build.ninja" ]; then
    meson setup "$arm64_build" --cross-file cross/aarch64-linux-gnu.ini -Db_sanitize=undefined >/dev/null
  fi
  # What the unit suite runs, and nothing else (the daemons and e2e helpers
  # would only lengthen the cross build): each test's program and the
  # targets it depends on (kovsctl for unit_kind, kovs-cni for cni-static).
  mapfile -t arm64_targets < <(python3 - "$arm64_build" <<'PY'
import json, os, subprocess, sys
build = os.path.abspath(sys.argv[1])
def intro(what):
    return json.loads(subprocess.check_output(["meson", "introspect", what, build]))
files = {t["id"]: t["filename"] for t in intro("--targets")}
out = set()
for t in intro("--tests"):
    if "kovs:unit" not in t["suite"]:
        continue
    paths = [t["cmd"][0]] + [f for d in t.get("depends", []) for f in files.get(d, [])]
    out.update(os.path.relpath(p, build) for p in map(os.path.normpath, paths) if p.startswith(build + "/"))
print("\n".join(sorted(out)))
PY
)
  arm64_start=$SECONDS
  ninja -C "$arm64_build" "${arm64_targets[@]}"
  echo "arm64: built in $((SECONDS - arm64_start)) s"
  arm64_start=$SECONDS
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C "$arm64_build" --suite unit --no-rebuild --print-errorlogs --num-processes 2 || failed=1
  echo "arm64: tests ran in $((SECONDS - arm64_start)) s"
  cp "$arm64_build/meson-logs/testlog.json" "$build/results-arm64.json"
fi

fuzz_passed=0 fuzz_failed=0
# One target for fuzz_seconds: its output in $build/NAME.log, "ok" or
# "FAILED" in $build/NAME.result.
fuzz_one() {
  local f=$1 name corpus seeds dict=()
  name=$(basename "$f")
  corpus=$(mktemp -d)
  seeds="$root/tests/fuzz/corpus/${name#fuzz_}"
  case $name in fuzz_cni_config|fuzz_jsonrpc|fuzz_tunnel_peers) dict=(-dict="$root/tests/fuzz/dict/json.dict") ;; esac
  if "$f" -max_total_time="$fuzz_seconds" -print_final_stats=1 "${dict[@]}" "$corpus" ${seeds:+$( [ -d "$seeds" ] && echo "$seeds")} \
       >"$build/$name.log" 2>&1; then
    echo ok > "$build/$name.result"
  else
    echo FAILED > "$build/$name.result"
  fi
  rm -rf "$corpus"
}
if [[ " $suites " == *" fuzz "* ]]; then
  step "fuzz (${fuzz_seconds}s per target, two at a time)"
  # A libFuzzer run is one process on one core: two at once use the machine's two.
  targets=()
  for f in "$build"/tests/fuzz/fuzz_*; do [ -f "$f" ] && [ -x "$f" ] && targets+=("$f"); done
  running=0
  for f in "${targets[@]}"; do
    rm -f "$build/$(basename "$f").result"
    if [ "$running" -ge 2 ]; then wait -n || true; running=$((running - 1)); fi
    fuzz_one "$f" &
    running=$((running + 1))
  done
  wait
  for f in "${targets[@]}"; do
    name=$(basename "$f")
    if [ "$(cat "$build/$name.result" 2>/dev/null)" = ok ]; then
      echo "fuzz $name: ok ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$build/$name.log" | grep -o '[0-9]*$') runs)"
      fuzz_passed=$((fuzz_passed + 1))
    else
      echo "fuzz $name: FAILED, see $build/$name.log"; tail -30 "$build/$name.log"
      fuzz_failed=$((fuzz_failed + 1)); failed=1
    fi
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
    # Connection setup: 3000 connections per run instead of 10000, and a new
    # pod's first connection over 50 pods instead of 200.
    export KOVS_BENCH_CONNECT_COUNT=${KOVS_BENCH_CONNECT_COUNT:-3000} KOVS_BENCH_FIRST_PODS=${KOVS_BENCH_FIRST_PODS:-50}
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
