// Uplink against real links in the test netns: "eth0" is a veth whose peer
// lives in a "host" netns (as a kind node's eth0 faces the Docker host), and
// br-phy is a userspace OVS bridge. Asserts reachability through OVS after
// the move, and that cleanup restores `ip -j addr` / `ip -j route` exactly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "base/Error.hpp"
#include "base/Ethtool.hpp"
#include "base/Process.hpp"
#include "tests/integration/uplink/UplinkUnderlay.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"
#include "uplink/Uplink.hpp"

using namespace kovs::tunnel;
using kovs::runChecked;
using kovs::runProcess;
using kovs::test::addrsOf;
using kovs::test::ipJson;
using kovs::test::linkExists;
using kovs::test::NetState;
using kovs::test::netState;
using kovs::test::OvsSandbox;
using kovs::test::pollUntil;
using kovs::test::Underlay;
using nlohmann::json;
using namespace std::chrono_literals;

class UplinkTest : public ::testing::Test {
protected:
    void SetUp() override {
        // vswitchd leaves its netdev bridge's tap behind when it exits; an
        // earlier test's br-phy (and its addresses) must not leak into this one.
        runProcess({"ip", "link", "del", "br-phy"});
        ovs.vsctl({"add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev"});
        underlay.emplace();
        before = netState();
        originalMac = before.addr.at(0).at("address");
        opts.ovsdb = ovs.dbRemote();
        opts.stateFile = ovs.dir() + "/uplink/state.json";
    }
    void TearDown() override {
        underlay.reset();
        for (const char* l : {"kovs-shim", "kovs-up0"}) runProcess({"ip", "link", "del", l});
    }

    bool pingHost() { return underlay->pingHost(); }
    size_t hostToNodeBytes() { return underlay->hostToNodeBytes(); }

    OvsSandbox ovs;
    std::optional<Underlay> underlay;
    UplinkOptions opts;
    NetState before;
    std::string originalMac;
};

TEST_F(UplinkTest, ShimMigratesReachesHostAndCleanupRestoresExactly) {
    Uplink uplink(opts);
    ASSERT_EQ(uplink.migrate(), Uplink::Outcome::Migrated);

    EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "fd31::2/64"}));
    EXPECT_EQ(addrsOf("eth0"), json::array());
    auto brLink = ipJson({"link", "show", "dev", "br-phy"}).at(0);
    auto ethLink = ipJson({"link", "show", "dev", "eth0"}).at(0);
    EXPECT_EQ(brLink.at("address"), originalMac) << "br-phy must take eth0's MAC";
    EXPECT_EQ(ethLink.at("address"), shimDeviceMac(originalMac));
    EXPECT_NE(ethLink.at("address"), originalMac);
    EXPECT_EQ(ethLink.value("master", ""), "kovs-shim");
    kovs::Ethtool ethtool;
    EXPECT_FALSE(ethtool.txChecksum("kovs-up0"));
    EXPECT_FALSE(ethtool.txChecksum("br-phy"));
    EXPECT_EQ(ipJson({"route", "show", "default"}).at(0).at("dev"), "br-phy");
    EXPECT_EQ(ipJson({"route", "show", "10.99.0.0/16"}).at(0).at("dev"), "br-phy");
    EXPECT_EQ(ipJson({"-6", "route", "show", "default"}).at(0).at("dev"), "br-phy");

    ASSERT_TRUE(pingHost()) << "node -> host through br-phy and the shim";
    // The shim's point: host -> node TCP works while the host's veth keeps
    // its default TX checksum offload.
    auto hostVeth = underlay->hostVethOffloads();
    EXPECT_NE(hostVeth.find("tx-checksumming: on"), std::string::npos) << hostVeth;
    EXPECT_EQ(hostToNodeBytes(), 512u * 1024u);

    // An agent restart: recognised, nothing changes.
    auto migratedState = netState();
    EXPECT_EQ(Uplink(opts).migrate(), Uplink::Outcome::AlreadyMigrated);
    EXPECT_EQ(netState(), migratedState);

    ASSERT_TRUE(Uplink(opts).cleanup());
    auto after = netState();
    EXPECT_EQ(after.addr, before.addr) << "before: " << before.addr.dump() << "\nafter:  " << after.addr.dump();
    EXPECT_EQ(after.routes4, before.routes4) << "before: " << before.routes4.dump() << "\nafter:  " << after.routes4.dump();
    EXPECT_EQ(after.routes6, before.routes6) << "before: " << before.routes6.dump() << "\nafter:  " << after.routes6.dump();
    EXPECT_FALSE(linkExists("kovs-shim"));
    EXPECT_FALSE(linkExists("kovs-up0"));
    EXPECT_FALSE(std::filesystem::exists(opts.stateFile));
    EXPECT_EQ(ovs.vsctl({"list-ports", "br-phy"}), "");
    EXPECT_TRUE(pollUntil([] { return runProcess({"ping", "-c1", "-W1", "172.31.0.1"}).ok(); }, 10s));
    EXPECT_FALSE(Uplink(opts).cleanup()) << "a second cleanup has nothing to do";
}

// A jumbo underlay (a kind network made with MTU 9000) stays jumbo through
// the shim: its veths take eth0's MTU instead of the veth default 1500.
TEST_F(UplinkTest, ShimCarriesTheUplinksMtu) {
    runChecked({"ip", "link", "set", "eth0", "mtu", "9000"});
    runChecked({"ip", "-n", "uphost", "link", "set", "hveth", "mtu", "9000"});
    ASSERT_EQ(Uplink(opts).migrate(), Uplink::Outcome::Migrated);
    for (const char* l : {"kovs-up0", "kovs-up1", "kovs-shim"}) EXPECT_EQ(ipJson({"link", "show", "dev", l}).at(0).at("mtu"), 9000) << l;
    EXPECT_TRUE(pollUntil([] { return ipJson({"link", "show", "dev", "br-phy"}).at(0).at("mtu") == 9000; }, 10s))
        << "br-phy: " << ipJson({"link", "show", "dev", "br-phy"}).at(0).at("mtu");
    EXPECT_TRUE(runProcess({"ping", "-c1", "-W2", "-M", "do", "-s", "8900", "172.31.0.1"}).ok()) << "a jumbo frame to the host";
    ASSERT_TRUE(Uplink(opts).cleanup());
}

TEST_F(UplinkTest, DirectModeMigratesAndCleanupRestoresExactly) {
    opts.mode = UplinkMode::Direct;
    Uplink uplink(opts);
    ASSERT_EQ(uplink.migrate(), Uplink::Outcome::Migrated);
    EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "fd31::2/64"}));
    EXPECT_EQ(ovs.vsctl({"list-ports", "br-phy"}), "eth0\n");
    EXPECT_EQ(ipJson({"link", "show", "dev", "br-phy"}).at(0).at("address"), originalMac);
    ASSERT_TRUE(pingHost()) << "node -> host through br-phy with eth0 as its port";
    EXPECT_EQ(Uplink(opts).migrate(), Uplink::Outcome::AlreadyMigrated);
    ASSERT_TRUE(Uplink(opts).cleanup());
    auto after = netState();
    EXPECT_EQ(after.addr, before.addr) << "before: " << before.addr.dump() << "\nafter:  " << after.addr.dump();
    EXPECT_EQ(after.routes4, before.routes4);
    EXPECT_EQ(after.routes6, before.routes6);
}

// A second IPv4 address in the uplink's subnet is a secondary: the kernel
// deletes it with the primary (promote_secondaries=0). Migration must not
// fail on that, and cleanup puts both back.
TEST_F(UplinkTest, ASecondaryAddressMovesAndComesBack) {
    std::ofstream("/proc/sys/net/ipv4/conf/eth0/promote_secondaries") << "0";
    runChecked({"ip", "addr", "add", "172.31.0.3/24", "dev", "eth0"});
    before = netState();
    ASSERT_EQ(Uplink(opts).migrate(), Uplink::Outcome::Migrated);
    EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "172.31.0.3/24", "fd31::2/64"}));
    EXPECT_EQ(addrsOf("eth0"), json::array());
    ASSERT_TRUE(Uplink(opts).cleanup());
    EXPECT_EQ(netState().addr, before.addr);
}

// `kovs-agent --cleanup` is how a node that lost its uplink is rescued, and
// then OVS may be down too: eth0 gets its addresses and routes back anyway.
TEST_F(UplinkTest, CleanupRestoresTheNodeWithOvsdbDown) {
    ASSERT_EQ(Uplink(opts).migrate(), Uplink::Outcome::Migrated);
    ovs.stopOvsdb();
    ASSERT_TRUE(Uplink(opts).cleanup());
    auto after = netState();
    EXPECT_EQ(after.addr, before.addr) << "before: " << before.addr.dump() << "\nafter:  " << after.addr.dump();
    EXPECT_EQ(after.routes4, before.routes4);
    EXPECT_EQ(after.routes6, before.routes6);
    EXPECT_FALSE(std::filesystem::exists(opts.stateFile));
    ovs.startOvsdb();
}

// Direct mode, agent killed after eth0's routes left and before br-phy had
// them: the restarted agent must not call that "migrated" (no default route
// for good), but restore and migrate again.
TEST_F(UplinkTest, DirectModeKilledMidwayIsRedoneNotTakenAsDone) {
    opts.mode = UplinkMode::Direct;
    ASSERT_EQ(Uplink(opts).migrate(), Uplink::Outcome::Migrated);
    // The state of that moment: addresses on both, the routes on neither.
    for (const char* a : {"172.31.0.2/24", "fd31::2/64"}) runChecked({"ip", "addr", "add", a, "dev", "eth0", "nodad"});
    runProcess({"ip", "route", "del", "default", "dev", "br-phy"});
    runProcess({"ip", "route", "del", "10.99.0.0/16", "dev", "br-phy"});
    ASSERT_EQ(Uplink(opts).migrate(), Uplink::Outcome::Migrated);
    EXPECT_EQ(ipJson({"route", "show", "default"}).at(0).at("dev"), "br-phy");
    EXPECT_EQ(addrsOf("eth0"), json::array());
    ASSERT_TRUE(Uplink(opts).cleanup());
    EXPECT_EQ(netState().addr, before.addr);
}

TEST_F(UplinkTest, FailureMidwayRollsBackEverything) {
    // A port named like the shim's OVS end already exists on another bridge,
    // so `add-port` fails after the shim, the new MAC and the enslaving.
    ovs.vsctl({"add-br", "br-other", "--", "set", "bridge", "br-other", "datapath_type=netdev", "--", "add-port",
               "br-other", "kovs-up1"});
    Uplink uplink(opts);
    try {
        uplink.migrate();
        FAIL() << "migrate() should have failed";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("add port kovs-up1 to br-phy"), std::string::npos) << e.what();
    }
    auto after = netState();
    EXPECT_EQ(after.addr, before.addr) << "before: " << before.addr.dump() << "\nafter:  " << after.addr.dump();
    EXPECT_EQ(after.routes4, before.routes4);
    EXPECT_EQ(after.routes6, before.routes6);
    EXPECT_FALSE(linkExists("kovs-shim"));
    EXPECT_FALSE(linkExists("kovs-up0"));
    EXPECT_FALSE(std::filesystem::exists(opts.stateFile));
    EXPECT_EQ(ovs.vsctl({"list-ports", "br-phy"}), "");
}

TEST_F(UplinkTest, UnavailablePortTypeIsAClearErrorAndChangesNothing) {
    opts.portType = "dpdk";
    try {
        Uplink(opts).migrate();
        FAIL() << "dpdk is not initialised in this OVS";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("dpdk_initialized"), std::string::npos) << e.what();
    }
    opts.portType = "vhost-magic";
    EXPECT_THROW(Uplink(opts).migrate(), kovs::Error);
    EXPECT_EQ(netState(), before);
    EXPECT_FALSE(std::filesystem::exists(opts.stateFile));
}
