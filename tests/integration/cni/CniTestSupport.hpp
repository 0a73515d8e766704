#pragma once
// Running kovs-cni (and reference CNI plugins) the way a container runtime
// does: an exec with CNI_* in the environment and the config on stdin.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/TempDir.hpp"  // TempDir, used by the CNI tests

namespace kovs::test {

// The kovs-cni binary under test: meson passes its path in KOVS_CNI.
inline std::string kovsCniBinary() {
    const char* p = std::getenv("KOVS_CNI");
    return p ? p : "cni/kovs-cni";
}

struct CniCall {
    int exitCode = -1;
    std::string out;
    std::string err;
    nlohmann::json json() const {
        auto j = nlohmann::json::parse(out, nullptr, false);
        if (j.is_discarded()) throw Error("CNI stdout is not JSON: '" + out + "' (stderr: " + err + ")");
        return j;
    }
    int code() const { return json().value("code", 0); }
};

inline CniCall runCni(const std::string& binary, const std::map<std::string, std::string>& cniEnv,
                      const std::string& stdinData) {
    ProcessOptions opts;
    std::map<std::string, std::string> env{{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
    // Sanitizer settings reach the plugin, as they would through a runtime's environment.
    for (const char* keep : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "ASAN_SYMBOLIZER_PATH"}) {
        if (const char* v = std::getenv(keep)) env[keep] = v;
    }
    for (const auto& [k, v] : cniEnv) env[k] = v;
    opts.env = env;
    opts.stdinData = stdinData;
    auto r = runProcess({binary}, opts);
    return {r.exitCode, r.out, r.err};
}

// Lease files host-local keeps for `network` (everything but its bookkeeping files).
inline std::vector<std::string> leases(const std::string& dataDir, const std::string& network) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dataDir + "/" + network, ec)) {
        auto name = e.path().filename().string();
        if (name.rfind("last_reserved_ip", 0) == 0 || name == "lock") continue;
        out.push_back(name);
    }
    return out;
}

}  // namespace kovs::test
