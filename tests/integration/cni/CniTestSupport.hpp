#pragma once
// Running kovs-cni (and reference CNI plugins) the way a container runtime
// does: an exec with CNI_* in the environment and the config on stdin; and
// KovsCni, the fixture of the tests in this folder (one OVS, a pod netns,
// host-local's data dir).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"
#include "tests/support/TempDir.hpp"  // TempDir, used by the CNI tests
#include "tests/support/TestNetns.hpp"

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

// The links of `netns` ("" for this one), sorted.
inline std::vector<std::string> linkNames(const std::string& netns) {
    std::vector<std::string> argv{"ip", "-o", "link", "show"};
    if (!netns.empty()) argv.insert(argv.begin() + 1, {"-n", netns});
    std::istringstream in(kovs::runChecked(argv));
    std::vector<std::string> names;
    std::string line;
    while (std::getline(in, line)) {
        // "7: name@peer: <...>" or "7: name: <...>"
        auto a = line.find(": ");
        auto b = line.find_first_of("@:", a + 2);
        names.push_back(line.substr(a + 2, b - a - 2));
    }
    std::sort(names.begin(), names.end());
    return names;
}

// kovs-cni in main mode on br-int of a real userspace OVS, for a pod netns
// and host-local IPAM with its own data dir.
class KovsCni : public ::testing::Test {
protected:
    // One OVS for the whole suite (starting one costs seconds); each test
    // leaves it as it found it: br-int alone and without ports.
    static inline std::unique_ptr<OvsSandbox> sandbox;
    static void SetUpTestSuite() {
        sandbox = std::make_unique<OvsSandbox>();
        sandbox->vsctl({"add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev"});
    }
    static void TearDownTestSuite() { sandbox.reset(); }

    OvsSandbox& ovs = *sandbox;
    TestNetns pod{"kovs-cni-pod"};
    TempDir data;
    std::string cni = kovsCniBinary();

    void SetUp() override {
        ASSERT_TRUE(pollUntil([&] { return ofport("br-int") > 0; }, std::chrono::seconds(10)))
            << "br-int never got its local port: ofport " << ofport("br-int");
    }

    void TearDown() override {
        if (!kovs::runProcess({"ovs-vsctl", "--db=" + ovs.dbRemote(), "--timeout=1", "show"}).ok()) ovs.startOvsdb();
        for (std::string br : {"br-other"}) ovs.vsctl({"--if-exists", "del-br", br});
        std::istringstream ports(ovs.vsctl({"list-ports", "br-int"}));
        for (std::string port; std::getline(ports, port);) ovs.vsctl({"del-port", "br-int", port});
        for (const auto& link : linkNames("")) {
            if (link.rfind("kovs", 0) == 0) kovs::runProcess({"ip", "link", "del", link});
        }
    }

    int64_t ofport(const std::string& iface) const {
        auto r = kovs::runProcess({"ovs-vsctl", "--db=" + ovs.dbRemote(), "get", "Interface", iface, "ofport"});
        try {
            return r.ok() ? std::stoll(r.out) : -1;
        } catch (...) {
            return -1;
        }
    }

    nlohmann::json ipam() const {
        return {{"type", "host-local"},
                {"dataDir", data.path()},
                {"ranges", nlohmann::json::array(
                               {nlohmann::json::array({{{"subnet", "10.244.0.0/24"}, {"gateway", "10.244.0.1"}}})})}};
    }

    nlohmann::json mainConf(const std::string& version = "1.0.0") const {
        return {{"cniVersion", version}, {"name", "kovs-test"}, {"type", "kovs"},      {"ovsdb", ovs.dbRemote()},
                {"bridge", "br-int"},    {"ipam", ipam()},      {"logLevel", "debug"}};
    }

    std::map<std::string, std::string> env(const std::string& command, const std::string& id = "c1",
                                           const std::string& ifname = "eth0") const {
        return {{"CNI_COMMAND", command}, {"CNI_CONTAINERID", id},     {"CNI_NETNS", pod.path()},
                {"CNI_IFNAME", ifname},   {"CNI_PATH", "/usr/lib/cni"}, {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"}};
    }

    CniCall call(const std::map<std::string, std::string>& e, const nlohmann::json& conf) const { return runCni(cni, e, conf.dump()); }

    std::string ports() const { return ovs.vsctl({"list-ports", "br-int"}); }
    std::string portIds(const std::string& port) const { return ovs.vsctl({"get", "Port", port, "external_ids"}); }
};

}  // namespace kovs::test
