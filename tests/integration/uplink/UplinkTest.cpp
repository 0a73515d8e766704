// The uplink job against real links and a real OVS (UplinkFixture): the node
// reaches the host through OVS after the move, host -> node TCP works with
// the host's veth at its default offloads, an agent restart changes nothing,
// and cleanup restores `ip -j addr` / `ip -j route` exactly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/Ethtool.hpp"
#include "tests/integration/uplink/UplinkFixture.hpp"

using kovs::runChecked;
using kovs::runProcess;
using kovs::test::addrsOf;
using kovs::test::ipJson;
using kovs::test::linkExists;
using kovs::test::macOf;
using kovs::test::netState;
using kovs::test::pollUntil;
using kovs::uplink::Uplink;
using kovs::uplink::UplinkMode;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

bool redirects(const std::string& from, const std::string& to) {
    auto out = runChecked({"tc", "filter", "show", "dev", from, "ingress"});
    return out.find("Egress Redirect to device " + to) != std::string::npos;
}

}  // namespace

class UplinkTest : public kovs::test::UplinkFixture {};

TEST_F(UplinkTest, ShimMigratesReachesHostAndCleanupRestoresExactly) {
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);

    EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "fd31::2/64"}));
    EXPECT_EQ(addrsOf("eth0"), json::array());
    EXPECT_EQ(macOf("br-phy"), originalMac) << "br-phy must take eth0's MAC";
    EXPECT_EQ(macOf("eth0"), originalMac) << "eth0 keeps its MAC: no Linux bridge keeps its frames";
    EXPECT_TRUE(redirects("eth0", "kovs-up0"));
    EXPECT_TRUE(redirects("kovs-up0", "eth0"));
    EXPECT_EQ(ovs.vsctl({"list-ports", "br-phy"}), "kovs-up1\n");
    EXPECT_EQ(ovs.vsctl({"get", "Port", "kovs-up1", "external_ids:kovs-owner"}), "kovs-agent\n");
    kovs::Ethtool ethtool;
    EXPECT_FALSE(ethtool.txChecksum("kovs-up0"));
    EXPECT_FALSE(ethtool.txChecksum("br-phy"));
    for (const char* l : {"kovs-up0", "kovs-up1"}) {
        auto flags = ipJson({"link", "show", "dev", l}).at(0).at("flags");
        EXPECT_NE(std::find(flags.begin(), flags.end(), "NOARP"), flags.end()) << l << ": " << flags.dump();
    }
    EXPECT_EQ(ipJson({"route", "show", "default"}).at(0).at("dev"), "br-phy");
    EXPECT_EQ(ipJson({"route", "show", "10.99.0.0/16"}).at(0).at("dev"), "br-phy");
    EXPECT_EQ(ipJson({"-6", "route", "show", "default"}).at(0).at("dev"), "br-phy");

    ASSERT_TRUE(underlay->pingHost()) << "node -> host through br-phy and the shim";
    // The shim's point: host -> node TCP works while the host's veth keeps
    // its default TX checksum offload.
    auto hostVeth = underlay->hostVethOffloads();
    EXPECT_NE(hostVeth.find("tx-checksumming: on"), std::string::npos) << hostVeth;
    EXPECT_EQ(underlay->hostToNodeBytes(), 512u * 1024u);

    // An agent restart: recognised, nothing changes.
    auto migratedState = netState();
    EXPECT_EQ(migrate(), Uplink::Outcome::AlreadyMigrated);
    EXPECT_EQ(netState(), migratedState);

    ASSERT_TRUE(cleanup());
    expectRestored("after cleanup");
    EXPECT_FALSE(std::filesystem::exists(opts.recordFile));
    EXPECT_TRUE(pollUntil([] { return runProcess({"ping", "-c1", "-W1", "172.31.0.1"}).ok(); }, 10s));
    EXPECT_FALSE(kovs::uplink::Uplink(opts).cleanup()) << "a second cleanup has nothing to do";
}

// A jumbo underlay (a kind network made with MTU 9000) stays jumbo through
// the shim: its veths take eth0's MTU instead of the veth default 1500.
TEST_F(UplinkTest, ShimCarriesTheUplinksMtu) {
    runChecked({"ip", "link", "set", "eth0", "mtu", "9000"});
    runChecked({"ip", "-n", "uphost", "link", "set", "hveth", "mtu", "9000"});
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    for (const char* l : {"kovs-up0", "kovs-up1"}) EXPECT_EQ(ipJson({"link", "show", "dev", l}).at(0).at("mtu"), 9000) << l;
    EXPECT_TRUE(pollUntil([] { return ipJson({"link", "show", "dev", "br-phy"}).at(0).at("mtu") == 9000; }, 10s))
        << "br-phy: " << ipJson({"link", "show", "dev", "br-phy"}).at(0).at("mtu");
    EXPECT_TRUE(pollUntil([] { return runProcess({"ping", "-c1", "-W2", "-M", "do", "-s", "8900", "172.31.0.1"}).ok(); }, 10s))
        << "a jumbo frame to the host";
    ASSERT_TRUE(cleanup());
}

TEST_F(UplinkTest, DirectModeMigratesAndCleanupRestoresExactly) {
    opts.mode = UplinkMode::Direct;
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "fd31::2/64"}));
    EXPECT_EQ(ovs.vsctl({"list-ports", "br-phy"}), "eth0\n");
    EXPECT_EQ(macOf("br-phy"), originalMac);
    EXPECT_FALSE(linkExists("kovs-up0"));
    ASSERT_TRUE(underlay->pingHost()) << "node -> host through br-phy with eth0 as its port";
    EXPECT_EQ(migrate(), Uplink::Outcome::AlreadyMigrated);
    ASSERT_TRUE(cleanup());
    expectRestored("after cleanup");
}

// From one mode to the other on a migrated node: the bridge job swaps the
// port, the uplink job the kernel side, and the node stays reachable.
TEST_F(UplinkTest, SwitchingModesOnAMigratedNode) {
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    opts.mode = UplinkMode::Direct;
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    EXPECT_EQ(ovs.vsctl({"list-ports", "br-phy"}), "eth0\n") << "the bridge job removed kovs-up1 it no longer wants";
    EXPECT_FALSE(linkExists("kovs-up0"));
    EXPECT_FALSE(redirects("eth0", "kovs-up0"));
    ASSERT_TRUE(underlay->pingHost()) << "after shim -> direct";
    opts.mode = UplinkMode::Shim;
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    EXPECT_EQ(ovs.vsctl({"list-ports", "br-phy"}), "kovs-up1\n");
    ASSERT_TRUE(underlay->pingHost()) << "after direct -> shim";
    EXPECT_EQ(underlay->hostToNodeBytes(), 512u * 1024u);
    ASSERT_TRUE(cleanup());
    expectRestored("after cleanup");
}

// A second IPv4 address in the uplink's subnet is a secondary: the kernel
// deletes it with the primary (promote_secondaries=0). Both move, and
// cleanup puts both back in order.
TEST_F(UplinkTest, ASecondaryAddressMovesAndComesBack) {
    std::ofstream("/proc/sys/net/ipv4/conf/eth0/promote_secondaries") << "0";
    runChecked({"ip", "addr", "add", "172.31.0.3/24", "dev", "eth0"});
    runChecked({"ip", "addr", "add", "fd31::3/64", "dev", "eth0", "nodad"});
    before = netState();
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "172.31.0.3/24", "fd31::3/64", "fd31::2/64"}));
    EXPECT_EQ(addrsOf("eth0"), json::array());
    ASSERT_TRUE(cleanup());
    expectRestored("after cleanup");
}

// `kovs-agent --cleanup` is how a node that lost its uplink is rescued, and
// then OVS may be down too: eth0 gets its addresses and routes back anyway.
TEST_F(UplinkTest, CleanupRestoresTheNodeWithOvsdbDown) {
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    client.reset();
    ovs.stopOvsdb();
    ovs.killVswitchd(SIGKILL);
    ASSERT_TRUE(cleanup());
    runProcess({"ip", "link", "del", "br-phy"});  // its own link-local route is not eth0's addressing
    expectRestored("after cleanup without OVS");
    EXPECT_FALSE(std::filesystem::exists(opts.recordFile));
    EXPECT_TRUE(pollUntil([] { return runProcess({"ping", "-c1", "-W1", "172.31.0.1"}).ok(); }, 10s));
    ovs.startOvsdb();
}

// The record lost (a run directory wiped without a reboot): cleanup takes
// the addressing from br-phy.
TEST_F(UplinkTest, CleanupWithoutTheRecordTakesTheAddressesFromBrPhy) {
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    std::filesystem::remove(opts.recordFile);
    ASSERT_TRUE(cleanup());
    EXPECT_EQ(addrsOf("eth0"), json({"172.31.0.2/24", "fd31::2/64"}));
    EXPECT_EQ(netState().routes4, before.routes4);
    EXPECT_EQ(netState().routes6, before.routes6);
    EXPECT_FALSE(linkExists("kovs-up0"));
    EXPECT_TRUE(pollUntil([] { return runProcess({"ping", "-c1", "-W1", "172.31.0.1"}).ok(); }, 10s));
}

TEST_F(UplinkTest, UnavailablePortTypeIsAClearErrorAndChangesNothing) {
    opts.portType = "dpdk";
    try {
        migrate();
        FAIL() << "dpdk is not initialised in this OVS";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("dpdk_initialized"), std::string::npos) << e.what();
    }
    opts.portType = "vhost-magic";
    EXPECT_THROW(migrate(), kovs::Error);
    EXPECT_EQ(netState(), before);
    EXPECT_FALSE(std::filesystem::exists(opts.recordFile));
}
