// kovs-agent --cleanup after the DaemonSet is gone (the uninstall,
// kind/uninstall.yaml): ovs-vswitchd ended with its pod, so the OVS database
// cannot be reached, and the tap devices of the netdev bridges stayed behind
// with gw0's pod CIDR address. The cleanup removes those taps, and only taps
// of the bridge names in its config, only in standalone mode.
//
// Each test runs in a network namespace of its own (the binary's shared one
// holds the taps of the shutdown tests' vswitchd), with no OVS at all.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/TempDir.hpp"
#include "tests/support/TestNetns.hpp"

namespace fs = std::filesystem;

namespace {

std::string agentBinary() {
    const char* p = std::getenv("KOVS_AGENT");
    if (!p || !*p) throw kovs::Error("KOVS_AGENT is not set (meson test sets it to the kovs-agent under test)");
    return p;
}

bool linkExists(const kovs::test::TestNetns& ns, const std::string& name) {
    return ns.exec({"ip", "link", "show", "dev", name}).ok();
}

fs::path writeConfig(const kovs::test::TempDir& dir, const std::string& mode) {
    fs::create_directories(dir / "run");
    auto p = fs::path(dir / "agent.yaml");
    std::ofstream f(p);
    f << "mode: " << mode << "\n"
      << "node: {name: cleanup-test, podCIDRs: [10.250.1.0/24]}\n"
      << "ovs: {manage: false, rundir: " << dir / "run" << "}\n"
      << "gateway: {networkdDropinDir: " << dir / "networkd" << "}\n"
      << "uplink: {mode: none}\n"
      << "peers: {source: none}\n";
    return p;
}

void addTap(const kovs::test::TestNetns& ns, const std::string& name) {
    auto r = ns.exec({"ip", "tuntap", "add", "dev", name, "mode", "tap"});
    if (!r.ok()) throw kovs::Error("ip tuntap add dev " + name + ": " + r.err);
}

kovs::ProcessResult cleanup(const kovs::test::TestNetns& ns, const fs::path& config) {
    return ns.exec({agentBinary(), "--config", config.string(), "--cleanup"});
}

}  // namespace

TEST(AgentCleanup, WithOvsGoneTheBridgesLeftoverTapsAreRemovedAndNothingElse) {
    kovs::test::TempDir dir("kovs-agent-cleanup");
    kovs::test::TestNetns ns("kovs-cleanup-test");
    for (const char* tap : {"br-int", "gw0", "ovs-netdev", "tap-other"}) addTap(ns, tap);
    ASSERT_TRUE(ns.exec({"ip", "addr", "add", "10.250.1.1/24", "dev", "gw0"}).ok());
    // A device named like a kovs bridge that is no tap is someone else's.
    ASSERT_TRUE(ns.exec({"ip", "link", "add", "br-phy", "type", "veth", "peer", "name", "br-phy-peer"}).ok());

    auto r = cleanup(ns, writeConfig(dir, "standalone"));
    EXPECT_TRUE(r.ok()) << r.err;
    EXPECT_FALSE(linkExists(ns, "br-int")) << r.err;
    EXPECT_FALSE(linkExists(ns, "gw0")) << r.err;
    EXPECT_FALSE(linkExists(ns, "ovs-netdev")) << r.err;
    EXPECT_TRUE(linkExists(ns, "tap-other")) << "a tap of another name is not kovs's";
    EXPECT_TRUE(linkExists(ns, "br-phy")) << "a veth named br-phy is not kovs's tap";
    EXPECT_NE(r.err.find("br-phy is not a tap device (veth)"), std::string::npos) << r.err;
}

// Next to another CNI the bridges are that CNI's: nothing is removed.
TEST(AgentCleanup, CompanionModeLeavesTheTapsAlone) {
    kovs::test::TempDir dir("kovs-agent-cleanup");
    kovs::test::TestNetns ns("kovs-cleanup-test");
    addTap(ns, "br-int");
    auto r = cleanup(ns, writeConfig(dir, "companion"));
    EXPECT_TRUE(r.ok()) << r.err;
    EXPECT_TRUE(linkExists(ns, "br-int")) << r.err;
}
