// BridgeReconciler against a real ovsdb-server + userspace ovs-vswitchd.
#include "bridge/BridgeReconciler.hpp"

#include <gtest/gtest.h>

#include <cstdio>

#include "base/Process.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"

using kovs::bridge::BridgeOptions;
using kovs::bridge::BridgeReconciler;
using kovs::EventLoop;
using kovs::ovs::OvsdbClient;
using kovs::ovs::OvsdbClientOptions;
using kovs::test::OvsSandbox;
using kovs::test::pollUntil;
using Clock = std::chrono::steady_clock;

namespace {

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

bool linkExists(const std::string& name) { return kovs::runProcess({"ip", "link", "show", name}).ok(); }

// A reconciler and its OVSDB client on a private loop, as the agent wires them.
struct Agent {
    EventLoop loop;
    OvsdbClient client;
    BridgeReconciler bridges;
    Agent(const OvsSandbox& ovs, BridgeOptions opts = {})
        : client(loop, clientOptions(ovs)), bridges(loop, client, std::move(opts)) {}
    static OvsdbClientOptions clientOptions(const OvsSandbox& ovs) {
        OvsdbClientOptions o;
        o.remote = ovs.dbRemote();
        return o;
    }
};

void expectBuilt(const OvsSandbox& ovs, const std::string& gw = "gw0", const std::string& tun = "tun0") {
    EXPECT_EQ(trim(ovs.vsctl({"list-br"})), "br-int\nbr-phy");
    EXPECT_EQ(trim(ovs.vsctl({"list-ports", "br-int"})), gw < tun ? gw + "\n" + tun : tun + "\n" + gw);
    EXPECT_EQ(trim(ovs.vsctl({"list-ports", "br-phy"})), "");
    for (auto br : {"br-int", "br-phy"}) {
        EXPECT_EQ(trim(ovs.vsctl({"get", "Bridge", br, "datapath_type"})), "netdev") << br;
        EXPECT_EQ(trim(ovs.vsctl({"get", "Bridge", br, "external_ids:kovs-owner"})), "kovs-agent") << br;
    }
    EXPECT_EQ(trim(ovs.vsctl({"get", "Interface", gw, "type"})), "internal");
    EXPECT_EQ(trim(ovs.vsctl({"get", "Port", gw, "external_ids:kovs-owner"})), "kovs-agent");
    EXPECT_EQ(trim(ovs.vsctl({"get", "Interface", tun, "type"})), "vxlan");
    EXPECT_EQ(trim(ovs.vsctl({"get", "Interface", tun, "options"})),
              "{dst_port=\"4789\", key=flow, remote_ip=flow}");
    // vswitchd acted on it: the internal ports are tap devices in our netns.
    EXPECT_TRUE(pollUntil([&] { return linkExists(gw) && linkExists("br-phy"); }, std::chrono::seconds(10)))
        << ovs.appctl({"dpif/show"});
}

// Runs the agent's loop until `done`, returns the time it took in ms (-1: never).
double measure(Agent& a, const std::function<bool()>& done) {
    auto t0 = Clock::now();
    if (!a.loop.runUntil(done, std::chrono::seconds(5))) return -1;
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool portInReplica(const Agent& a, const std::string& bridge, const std::string& port);

// Measures a repair: the replica must first show the damage, then the fix.
double measureRepair(Agent& a, const std::vector<std::pair<std::string, std::string>>& ports) {
    bool sawDamage = false;
    return measure(a, [&] {
        bool all = true;
        for (const auto& [br, p] : ports) all = all && portInReplica(a, br, p);
        if (!all) sawDamage = true;
        return sawDamage && all && a.bridges.converged();
    });
}

bool portInReplica(const Agent& a, const std::string& bridge, const std::string& port) {
    auto br = a.client.replica().findByName("Bridge", bridge);
    auto p = a.client.replica().findByName("Port", port);
    if (!br || !p) return false;
    auto ports = kovs::ovsdb::uuidSet(br->second["ports"]);
    return std::find(ports.begin(), ports.end(), p->first) != ports.end();
}

}  // namespace

TEST(BridgeReconciler, BuildsBridgesThenSendsNothingOnRerun) {
    OvsSandbox ovs;
    {
        Agent a(ovs);
        ASSERT_TRUE(a.bridges.reconcileOnce(std::chrono::seconds(10))) << a.bridges.lastError();
        EXPECT_EQ(a.bridges.transactions(), 1u);
        EXPECT_EQ(a.bridges.failures(), 0u);
    }
    expectBuilt(ovs);
    // A restarted agent finds everything in place: not a single transaction.
    Agent again(ovs);
    ASSERT_TRUE(again.bridges.reconcileOnce(std::chrono::seconds(10))) << again.bridges.lastError();
    EXPECT_EQ(again.bridges.transactions(), 0u);
    EXPECT_EQ(again.client.transactionsSent(), 0u);
}

TEST(BridgeReconciler, CustomNamesAndFailMode) {
    OvsSandbox ovs;
    BridgeOptions o;
    o.gatewayPort = "antrea-gw0";
    o.tunnelPort = "antrea-tun0";
    o.failMode = "secure";
    Agent a(ovs, o);
    ASSERT_TRUE(a.bridges.reconcileOnce(std::chrono::seconds(10))) << a.bridges.lastError();
    expectBuilt(ovs, "antrea-gw0", "antrea-tun0");
    EXPECT_EQ(trim(ovs.vsctl({"get-fail-mode", "br-int"})), "secure");
    EXPECT_EQ(trim(ovs.vsctl({"get-fail-mode", "br-phy"})), "");
    // Drifted columns of owned rows are put back.
    ovs.vsctl({"--no-wait", "set", "Bridge", "br-int", "fail_mode=standalone", "datapath_type=system", "--", "set",
               "Interface", "antrea-tun0", "options:dst_port=9999"});
    auto ms = measure(a, [&] {
        return a.client.replica().findByName("Interface", "antrea-tun0") && a.bridges.converged() &&
               a.bridges.transactions() >= 2;
    });
    ASSERT_GE(ms, 0) << a.bridges.lastError();
    EXPECT_EQ(trim(ovs.vsctl({"get-fail-mode", "br-int"})), "secure");
    EXPECT_EQ(trim(ovs.vsctl({"get", "Bridge", "br-int", "datapath_type"})), "netdev");
    EXPECT_EQ(trim(ovs.vsctl({"get", "Interface", "antrea-tun0", "options:dst_port"})), "\"4789\"");
}

TEST(BridgeReconciler, RepairsDeletedPortAndBridgeFromMonitorUpdates) {
    OvsSandbox ovs;
    Agent a(ovs);
    ASSERT_TRUE(a.bridges.reconcileOnce(std::chrono::seconds(10))) << a.bridges.lastError();
    ASSERT_TRUE(pollUntil([&] { return linkExists("gw0"); }, std::chrono::seconds(10)));
    auto before = a.bridges.transactions();

    // The reconciler has no timer of its own: only the monitor update can wake it.
    ovs.vsctl({"--no-wait", "del-port", "br-int", "gw0"});
    auto ms = measureRepair(a, {{"br-int", "gw0"}});
    ASSERT_GE(ms, 0) << "gw0 not back; last error: " << a.bridges.lastError();
    std::printf("[ figure ] del-port br-int gw0 repaired in %.1f ms\n", ms);
    EXPECT_EQ(a.bridges.transactions(), before + 1);
    EXPECT_NE(ovs.vsctl({"list-ports", "br-int"}).find("gw0"), std::string::npos);
    EXPECT_TRUE(pollUntil([&] { return linkExists("gw0"); }, std::chrono::seconds(10))) << "vswitchd did not recreate gw0";

    ovs.vsctl({"--no-wait", "del-br", "br-int"});
    ms = measureRepair(a, {{"br-int", "gw0"}, {"br-int", "tun0"}, {"br-int", "br-int"}});
    ASSERT_GE(ms, 0) << "br-int not back; last error: " << a.bridges.lastError();
    std::printf("[ figure ] del-br br-int repaired in %.1f ms\n", ms);
    expectBuilt(ovs);
    EXPECT_EQ(a.bridges.failures(), 0u) << a.bridges.lastError();
}

TEST(BridgeReconciler, SurvivesOvsdbServerRestart) {
    OvsSandbox ovs;
    Agent a(ovs);
    ASSERT_TRUE(a.bridges.reconcileOnce(std::chrono::seconds(10))) << a.bridges.lastError();
    ovs.stopOvsdb();
    ASSERT_TRUE(a.loop.runUntil([&] { return a.client.state() != OvsdbClient::State::Ready; },
                                std::chrono::seconds(5)));
    ovs.startOvsdb();
    ASSERT_TRUE(a.loop.runUntil([&] { return a.client.state() == OvsdbClient::State::Ready; },
                                std::chrono::seconds(10)));
    EXPECT_EQ(a.client.reconnects(), 1u);
    // Same state after the restart: nothing to send.
    auto before = a.bridges.transactions();
    ASSERT_TRUE(a.bridges.reconcileOnce(std::chrono::seconds(5)));
    EXPECT_EQ(a.bridges.transactions(), before);
    // And the new session still repairs drift.
    ovs.vsctl({"--no-wait", "del-port", "br-int", "tun0"});
    auto ms = measureRepair(a, {{"br-int", "tun0"}});
    ASSERT_GE(ms, 0) << a.bridges.lastError();
    std::printf("[ figure ] del-port tun0 after ovsdb restart repaired in %.1f ms\n", ms);
    expectBuilt(ovs);
}

TEST(BridgeReconciler, CompanionModeLeavesForeignRowsAlone) {
    OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev",
               "external_ids:owner=antrea", "fail_mode=standalone", "--", "add-port", "br-int", "antrea-gw0", "--",
               "set", "Interface", "antrea-gw0", "type=internal"});
    auto bridgeBefore = ovs.vsctl({"--columns=datapath_type,external_ids,fail_mode,name", "list", "Bridge", "br-int"});
    auto gwBefore = ovs.vsctl({"--columns=external_ids,interfaces,name", "list", "Port", "antrea-gw0"});
    BridgeOptions o;
    o.gatewayPort = "antrea-gw0";
    o.failMode = "secure";  // would be applied to an owned br-int, never to this one
    {
        Agent a(ovs, o);
        ASSERT_TRUE(a.bridges.reconcileOnce(std::chrono::seconds(10))) << a.bridges.lastError();
        EXPECT_EQ(ovs.vsctl({"--columns=datapath_type,external_ids,fail_mode,name", "list", "Bridge", "br-int"}),
                  bridgeBefore);
        EXPECT_EQ(ovs.vsctl({"--columns=external_ids,interfaces,name", "list", "Port", "antrea-gw0"}), gwBefore);
        EXPECT_EQ(trim(ovs.vsctl({"list-ports", "br-int"})), "antrea-gw0\ntun0");
        EXPECT_EQ(trim(ovs.vsctl({"get", "Port", "tun0", "external_ids:kovs-owner"})), "kovs-agent");
        EXPECT_EQ(trim(ovs.vsctl({"get", "Bridge", "br-phy", "external_ids:kovs-owner"})), "kovs-agent");
        // A second agent run: still nothing to do, foreign rows or not.
        Agent again(ovs, o);
        ASSERT_TRUE(again.bridges.reconcileOnce(std::chrono::seconds(10)));
        EXPECT_EQ(again.bridges.transactions(), 0u);

        // --cleanup removes only what kovs made.
        again.bridges.cleanup();
    }
    EXPECT_EQ(trim(ovs.vsctl({"list-br"})), "br-int");
    EXPECT_EQ(trim(ovs.vsctl({"list-ports", "br-int"})), "antrea-gw0");
    EXPECT_EQ(ovs.vsctl({"--columns=datapath_type,external_ids,fail_mode,name", "list", "Bridge", "br-int"}),
              bridgeBefore);
}

TEST(BridgeReconciler, CleanupRemovesOwnedBridges) {
    OvsSandbox ovs;
    Agent a(ovs);
    ASSERT_TRUE(a.bridges.reconcileOnce(std::chrono::seconds(10))) << a.bridges.lastError();
    ovs.vsctl({"add-br", "br-other"});
    a.bridges.cleanup();
    EXPECT_EQ(trim(ovs.vsctl({"list-br"})), "br-other");
    EXPECT_EQ(trim(ovs.vsctl({"--bare", "--columns=name", "find", "Interface", "name=gw0"})), "");
    EXPECT_TRUE(pollUntil([&] { return !linkExists("gw0"); }, std::chrono::seconds(10)));
}

// The uplink's OVS side is br-phy's desired state: deleted or changed by
// hand, it comes back on the monitor update, carrying kovs's owner mark; a
// database an older kovs left (the port without the mark, as after a node
// reboot) is adopted in place.
TEST(BridgeReconciler, KeepsTheUplinkPortAndBrPhysMac) {
    OvsSandbox ovs;
    ASSERT_TRUE(kovs::runProcess({"ip", "link", "add", "kovs-up0", "type", "veth", "peer", "name", "kovs-up1"}).ok());
    BridgeOptions o;
    o.uplink = kovs::bridge::BridgeUplinkPort{"kovs-up1", "", "02:42:ac:1f:00:02"};
    Agent a(ovs, o);
    ASSERT_TRUE(a.bridges.reconcileOnce(std::chrono::seconds(10))) << a.bridges.lastError();
    EXPECT_EQ(trim(ovs.vsctl({"list-ports", "br-phy"})), "kovs-up1");
    EXPECT_EQ(trim(ovs.vsctl({"get", "Port", "kovs-up1", "external_ids:kovs-owner"})), "kovs-agent");
    EXPECT_EQ(trim(ovs.vsctl({"get", "Bridge", "br-phy", "other_config:hwaddr"})), "\"02:42:ac:1f:00:02\"");
    // /sys shows the machine's netns, not the test's: ask netlink.
    auto brPhyMac = [] { return kovs::runProcess({"ip", "-br", "link", "show", "dev", "br-phy"}).out; };
    EXPECT_TRUE(pollUntil([&] { return brPhyMac().find(" 02:42:ac:1f:00:02 ") != std::string::npos; }, std::chrono::seconds(10)))
        << "vswitchd gives br-phy the pinned MAC: " << brPhyMac();
    ovs.vsctl({"--no-wait", "del-port", "br-phy", "kovs-up1", "--", "set", "Bridge", "br-phy", "other_config:hwaddr=aa:aa:aa:aa:aa:aa"});
    ASSERT_GE(measureRepair(a, {{"br-phy", "kovs-up1"}}), 0) << a.bridges.lastError();
    ASSERT_TRUE(a.loop.runUntil([&] { return a.bridges.converged(); }, std::chrono::seconds(5)));
    EXPECT_EQ(trim(ovs.vsctl({"get", "Bridge", "br-phy", "other_config:hwaddr"})), "\"02:42:ac:1f:00:02\"");

    // An older kovs's row: same port, no owner mark. A new agent adopts it.
    ovs.vsctl({"--no-wait", "remove", "Port", "kovs-up1", "external_ids", "kovs-owner", "--", "remove", "Interface",
               "kovs-up1", "external_ids", "kovs-owner"});
    Agent later(ovs, o);
    ASSERT_TRUE(later.bridges.reconcileOnce(std::chrono::seconds(10))) << later.bridges.lastError();
    EXPECT_EQ(trim(ovs.vsctl({"get", "Port", "kovs-up1", "external_ids:kovs-owner"})), "kovs-agent");
    EXPECT_EQ(trim(ovs.vsctl({"--bare", "--columns=name", "find", "Interface", "name=kovs-up1"})), "kovs-up1");
    kovs::runProcess({"ip", "link", "del", "kovs-up0"});
}
