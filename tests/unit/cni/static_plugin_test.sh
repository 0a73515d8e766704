#!/usr/bin/env bash
# kovs-cni is one static binary on every architecture it is built for
# (cni/meson.build says why): no program interpreter, no shared library, and
# it answers CNI's VERSION command. KOVS_EMULATOR runs it in a cross build.
#
#   static_plugin_test.sh PATH/TO/kovs-cni
set -euo pipefail
plugin=$1
read -r -a emulator <<< "${KOVS_EMULATOR:-}"
if readelf --program-headers "$plugin" | grep -q INTERP; then
  echo "FAIL: $plugin has a program interpreter (dynamically linked):"
  readelf --program-headers "$plugin" | grep -A1 INTERP
  exit 1
fi
if readelf --dynamic "$plugin" | grep -q NEEDED; then
  echo "FAIL: $plugin needs shared libraries:"; readelf --dynamic "$plugin" | grep NEEDED
  exit 1
fi
out=$(CNI_COMMAND=VERSION "${emulator[@]}" "$plugin" </dev/null)
python3 - "$out" <<'PY'
import json, sys
v = json.loads(sys.argv[1])
assert "1.1.0" in v["supportedVersions"], v
print("kovs-cni: static,", "VERSION answers", v["cniVersion"], "supporting", ", ".join(v["supportedVersions"]))
PY
