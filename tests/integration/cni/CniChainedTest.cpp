// kovs-cni chained after a reference plugin (ptp, bridge): it only turns TX
// checksum offload off in the pod and passes prevResult through.
#include <gtest/gtest.h>

#include <string>

#include "base/Process.hpp"
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
