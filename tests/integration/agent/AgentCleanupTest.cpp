// kovs-agent --cleanup after the DaemonSet is gone (the uninstall,
// kind/uninstall.yaml): ovs-vswitchd ended with its pod, so the OVS database
// cannot be reached, and the tap devices of the netdev bridges stayed behind
// with gw0's pod CIDR address. The cleanup removes those taps, and only taps
// of the bridge names in its config, only in standalone mode.
//
// Runs in this test's private network namespace, with no OVS at all.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/TempDir.hpp"

namespace fs = std::filesystem;

namespace {

std::string agentBinary() {
    const char* p = std::getenv("KOVS_AGENT");
    if (!p || !*p) throw kovs::Error("KOVS_AGENT is not set (meson test sets it to the kovs-agent under test)");
    return p;
}

bool linkExists(const std::string& name) { return kovs::runProcess({"ip", "link", "show", "dev", name}).ok(); }

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

void addTap(const std::string& name) { kovs::runChecked({"ip", "tuntap", "add", "dev", name, "mode", "tap"}); }

}  // namespace

TEST(AgentCleanup, WithOvsGoneTheBridgesLeftoverTapsAreRemovedAndNothingElse) {
    kovs::test::TempDir dir("kovs-agent-cleanup");
    for (const char* tap : {"br-int", "gw0", "ovs-netdev", "tap-other"}) addTap(tap);
    kovs::runChecked({"ip", "addr", "add", "10.250.1.1/24", "dev", "gw0"});
    // A device named like a kovs bridge that is no tap is someone else's.
    kovs::runChecked({"ip", "link", "add", "br-phy", "type", "veth", "peer", "name", "br-phy-peer"});

    auto r = kovs::runProcess({agentBinary(), "--config", writeConfig(dir, "standalone").string(), "--cleanup"});
    EXPECT_TRUE(r.ok()) << r.err;
    EXPECT_FALSE(linkExists("br-int")) << r.err;
    EXPECT_FALSE(linkExists("gw0")) << r.err;
    EXPECT_FALSE(linkExists("ovs-netdev")) << r.err;
    EXPECT_TRUE(linkExists("tap-other")) << "a tap of another name is not kovs's";
    EXPECT_TRUE(linkExists("br-phy")) << "a veth named br-phy is not kovs's tap";
    EXPECT_NE(r.err.find("br-phy is not a tap device (veth)"), std::string::npos) << r.err;
    kovs::runProcess({"ip", "link", "del", "tap-other"});
    kovs::runProcess({"ip", "link", "del", "br-phy"});
}

// Next to another CNI the bridges are that CNI's: nothing is removed.
TEST(AgentCleanup, CompanionModeLeavesTheTapsAlone) {
    kovs::test::TempDir dir("kovs-agent-cleanup");
    addTap("br-int");
    auto r = kovs::runProcess({agentBinary(), "--config", writeConfig(dir, "companion").string(), "--cleanup"});
    EXPECT_TRUE(r.ok()) << r.err;
    EXPECT_TRUE(linkExists("br-int")) << r.err;
    kovs::runProcess({"ip", "link", "del", "br-int"});
}
