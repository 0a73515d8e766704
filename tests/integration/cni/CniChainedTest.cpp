// kovs-cni chained after a reference plugin (ptp, bridge): it only turns TX
// checksum offload off in the pod and passes prevResult through.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "base/Process.hpp"
#include "base/UniqueFd.hpp"
#include "tests/integration/cni/CniTestSupport.hpp"

using nlohmann::json;
using namespace kovs::test;

// Chained after a reference plugin: offload off in the pod, result untouched.
class KovsCniChained : public KovsCni, public ::testing::WithParamInterface<std::string> {};

TEST_P(KovsCniChained, TurnsOffloadOffAndPassesPrevResultThrough) {
    auto plugin = GetParam();
    json ref = {{"cniVersion", "1.0.0"}, {"name", "chain"}, {"type", plugin}, {"ipam", ipam()}};
    if (plugin == "bridge") ref["bridge"] = "kovsbr0";
    auto e = env("ADD");
    auto first = runCni("/usr/lib/cni/" + plugin, e, ref.dump());
    ASSERT_EQ(first.exitCode, 0) << first.out << first.err;
    auto prev = first.json();
    ASSERT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "on") << plugin << " leaves the default on";

    json conf = {{"cniVersion", "1.0.0"}, {"name", "chain"}, {"type", "kovs"}, {"prevResult", prev}};
    auto add = call(e, conf);
    ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
    EXPECT_EQ(add.json(), prev) << "prevResult must pass through unchanged";
    EXPECT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "off");
    // Interfaces without a sandbox (the host ends) are left alone.
    for (const auto& itf : prev["interfaces"]) {
        if (!itf.contains("sandbox")) {
            EXPECT_EQ(ethtoolFeature("", itf["name"], "tx-checksumming"), "on") << itf;
        }
    }
    EXPECT_EQ(call(env("CHECK"), conf).exitCode, 0);
    auto del = call(env("DEL"), conf);
    EXPECT_EQ(del.exitCode, 0) << del.out;
    EXPECT_EQ(ports(), "") << "chained mode touches no OVS state";
    auto refDel = runCni("/usr/lib/cni/" + plugin, env("DEL"), ref.dump());
    EXPECT_EQ(refDel.exitCode, 0) << refDel.out;
    if (plugin == "bridge") kovs::runProcess({"ip", "link", "del", "kovsbr0"});
}

INSTANTIATE_TEST_SUITE_P(Reference, KovsCniChained, ::testing::Values("ptp", "bridge"));

// prevResult says where its interfaces live, and anyone who writes the config
// writes it: kovs-cni enters only the namespace the runtime named in
// CNI_NETNS. Before this check it followed any sandbox path, and turned TX
// checksumming off in another pod's (or the node's) namespace.
TEST_F(KovsCni, ChainedModeEntersOnlyCniNetns) {
    json ref = {{"cniVersion", "1.0.0"}, {"name", "chain"}, {"type", "ptp"}, {"ipam", ipam()}};
    auto first = runCni("/usr/lib/cni/ptp", env("ADD"), ref.dump());
    ASSERT_EQ(first.exitCode, 0) << first.out << first.err;
    auto prev = first.json();
    TestNetns victim{"kovs-cni-victim"};
    kovs::runChecked({"ip", "-n", victim.name(), "link", "add", "eth0", "type", "veth", "peer", "name", "eth1"});
    ASSERT_EQ(ethtoolFeature(victim.name(), "eth0", "tx-checksumming"), "on");

    struct Case {
        const char* name;
        std::string sandbox;
        int code;
    };
    for (const auto& c : {Case{"another pod's netns", victim.path(), 7}, Case{"a mount namespace", "/proc/self/ns/mnt", 7},
                          Case{"no namespace at all", "/etc/hostname", 7}}) {
        auto forged = prev;
        for (auto& itf : forged["interfaces"]) {
            if (itf.contains("sandbox")) itf["sandbox"] = c.sandbox;
        }
        json conf = {{"cniVersion", "1.0.0"}, {"name", "chain"}, {"type", "kovs"}, {"prevResult", forged}};
        for (const char* command : {"ADD", "CHECK"}) {
            auto r = call(env(command), conf);
            EXPECT_EQ(r.exitCode, 1) << c.name << " " << command << ": " << r.out << r.err;
            EXPECT_EQ(r.code(), c.code) << c.name << " " << command << ": " << r.out;
        }
        EXPECT_EQ(ethtoolFeature(victim.name(), "eth0", "tx-checksumming"), "on") << c.name << ": the other namespace was entered";
        EXPECT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "on") << c.name << ": refused, so nothing changed";
    }
    // The same namespace under another path (this test's fd of it, seen
    // through /proc) is the pod's: namespaces are compared, not strings.
    kovs::UniqueFd held(::open(pod.path().c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(held);
    const auto procPath = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(held.get());
    auto viaProc = prev;
    for (auto& itf : viaProc["interfaces"]) {
        if (itf.contains("sandbox")) itf["sandbox"] = procPath;
    }
    json conf = {{"cniVersion", "1.0.0"}, {"name", "chain"}, {"type", "kovs"}, {"prevResult", viaProc}};
    auto add = call(env("ADD"), conf);
    EXPECT_EQ(add.exitCode, 0) << add.out << add.err;
    EXPECT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "off");
    EXPECT_EQ(runCni("/usr/lib/cni/ptp", env("DEL"), ref.dump()).exitCode, 0);
}
