// The gateway's MTU next to a real ovs-vswitchd (issue 16, defect 1).
// ovs-vswitchd keeps an internal port without mtu_request at the smallest MTU
// of its bridge's other ports: a pod port at 1400 pulls gw0 down to 1400. A
// guard that set 1450 back over netlink was undone at once and repaired again,
// every ~1.5 ms. Now kovs's own gateway carries mtu_request (OVS agrees), a
// foreign one is left alone unless gateway.mtu is configured, and a value that
// keeps changing under the guard is backed off and reported.
#include <gtest/gtest.h>

#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "bridge/BridgeReconciler.hpp"
#include "gateway/GatewayGuard.hpp"
#include "ovs/OvsdbClient.hpp"
#include "tests/integration/gateway/GatewayTestSupport.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"

using namespace kovs;
using namespace kovs::test;
using namespace std::chrono_literals;

namespace {

int kernelMtu(const std::string& dev) { return LinkView::read(dev).mtu; }

// A pod's port as a CNI adds it: a veth at the pods' MTU on br-int.
void addPodPort(const OvsSandbox& ovs, const std::string& name, int mtu) {
    runProcess({"ip", "link", "del", name});
    runChecked({"ip", "link", "add", name, "mtu", std::to_string(mtu), "type", "veth", "peer", "name", name + "p", "mtu",
                std::to_string(mtu)});
    runChecked({"ip", "link", "set", name, "up"});
    ovs.vsctl({"add-port", "br-int", name});
    EXPECT_TRUE(pollUntil([&] { return ovs.vsctl({"get", "Interface", name, "ofport"}) != "-1\n"; }, 10s));
}

// br-int with kovs's gw0, made by the bridge job as the agent runs it.
struct KovsBridges {
    EventLoop loop;
    ovs::OvsdbClient client;
    bridge::BridgeReconciler bridges;
    KovsBridges(const OvsSandbox& ovs, std::optional<int> gatewayMtu) : client(loop, options(ovs)), bridges(loop, client, bridge(gatewayMtu)) {
        EXPECT_TRUE(bridges.reconcileOnce(10s)) << bridges.lastError();
        EXPECT_TRUE(pollUntil([] { return LinkView::read("gw0").exists; }, 10s));
    }
    static ovs::OvsdbClientOptions options(const OvsSandbox& ovs) {
        ovs::OvsdbClientOptions o;
        o.remote = ovs.dbRemote();
        return o;
    }
    static bridge::BridgeOptions bridge(std::optional<int> gatewayMtu) {
        bridge::BridgeOptions o;
        o.physBridge = "";
        o.gatewayMtu = gatewayMtu;
        return o;
    }
};

gateway::GatewayGuardOptions guardOn(const std::string& dev, std::optional<int> mtu) {
    gateway::GatewayGuardOptions o;
    o.name = dev;
    o.mtu = mtu;
    o.adoptAddresses = true;
    return o;
}

}  // namespace

// The mechanism, shown on OVS itself: what the guard was fighting.
TEST(GatewayMtu, OvsPullsAnInternalPortWithoutMtuRequestDownToThePods) {
    OvsSandbox ovs;
    KovsBridges kovs(ovs, std::nullopt);
    runChecked({"ip", "link", "set", "gw0", "mtu", "1450"});
    addPodPort(ovs, "pod0", 1400);
    EXPECT_TRUE(pollUntil([] { return kernelMtu("gw0") == 1400; }, 10s)) << "gw0 MTU " << kernelMtu("gw0");
}

TEST(GatewayMtu, KovssOwnGatewayKeepsItsMtuNextToSmallerPodsWithNoRepairs) {
    OvsSandbox ovs;
    KovsBridges kovs(ovs, 1450);
    EXPECT_EQ(ovs.vsctl({"get", "Interface", "gw0", "mtu_request"}), "1450\n");
    EXPECT_TRUE(pollUntil([] { return kernelMtu("gw0") == 1450; }, 10s)) << "gw0 MTU " << kernelMtu("gw0");
    GuardThread guard(guardOn("gw0", 1450));
    addPodPort(ovs, "pod0", 1400);
    addPodPort(ovs, "pod1", 1400);
    // vswitchd has seen the ports (ofport assigned); give it a window to act on them.
    auto before = guard.stats().mtuFixed;
    EXPECT_FALSE(pollUntil([] { return kernelMtu("gw0") != 1450; }, 2s)) << "OVS changed gw0's MTU to " << kernelMtu("gw0");
    auto s = guard.stats();
    std::printf("[ gateway ] gw0 with mtu_request=1450 next to 1400-byte pods: %llu MTU repairs in 2 s\n",
                static_cast<unsigned long long>(s.mtuFixed - before));
    EXPECT_EQ(s.mtuFixed, before) << "the guard had to repair gw0's MTU";
    EXPECT_FALSE(s.mtuContested);
}

TEST(GatewayMtu, AnotherCnisGatewayKeepsTheMtuOvsGaveIt) {
    OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev", "--", "add-port", "br-int",
               "ovn0", "--", "set", "Interface", "ovn0", "type=internal", "external_ids:iface-id=node1"});
    ASSERT_TRUE(pollUntil([] { return LinkView::read("ovn0").exists; }, 10s));
    addPodPort(ovs, "pod0", 1400);
    ASSERT_TRUE(pollUntil([] { return kernelMtu("ovn0") == 1400; }, 10s));
    GuardThread guard(guardOn("ovn0", std::nullopt));  // companion mode, no gateway.mtu
    EXPECT_FALSE(pollUntil([] { return kernelMtu("ovn0") != 1400; }, 2s));
    EXPECT_EQ(guard.stats().mtuFixed, 0u);
}

// gateway.mtu configured on a device OVS resizes: the fight happens, and the
// guard backs off: at most the throttle's burst plus one repair per doubling
// of the wait (1 s, 2 s, ...), instead of one every ~1.5 ms (thousands here).
TEST(GatewayMtu, AValueThatKeepsChangingUnderTheGuardIsBackedOffAndReported) {
    OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev", "--", "add-port", "br-int",
               "ovn0", "--", "set", "Interface", "ovn0", "type=internal"});
    ASSERT_TRUE(pollUntil([] { return LinkView::read("ovn0").exists; }, 10s));
    addPodPort(ovs, "pod0", 1400);
    ASSERT_TRUE(pollUntil([] { return kernelMtu("ovn0") == 1400; }, 10s));
    GuardThread guard(guardOn("ovn0", 1450));
    ASSERT_TRUE(pollUntil([&] { return guard.stats().mtuContested; }, 10s))
        << "never contested; MTU repairs " << guard.stats().mtuFixed;
    auto contestedAt = std::chrono::steady_clock::now();
    auto fixedThen = guard.stats().mtuFixed;
    // Over the next 4 s the waits are 1 s and 2 s: two more repairs at most.
    pollUntil([] { return false; }, 4s, 100ms);
    auto s = guard.stats();
    auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - contestedAt).count();
    std::printf("[ gateway ] MTU fight with ovs-vswitchd: %llu repairs before it was contested, %llu in the %.1f s after "
                "(%llu held back)\n",
                static_cast<unsigned long long>(fixedThen), static_cast<unsigned long long>(s.mtuFixed - fixedThen), secs,
                static_cast<unsigned long long>(s.mtuHeld));
    EXPECT_LE(fixedThen, 6u) << "the throttle lets 5 through at once";
    EXPECT_LE(s.mtuFixed - fixedThen, 3u) << "repairs kept coming while contested";
    EXPECT_GE(s.mtuHeld, 1u);
    EXPECT_TRUE(s.mtuContested);
    nlohmann::json status;
    guard.onLoop([&](gateway::GatewayGuard& g) { g.status(status); });
    EXPECT_TRUE(status["gateway"]["mtuContested"].get<bool>()) << status.dump();
    MetricsText m;
    guard.onLoop([&](gateway::GatewayGuard& g) { g.metrics(m); });
    EXPECT_NE(m.str().find("kovs_gateway_contested{kind=\"mtu\"} 1"), std::string::npos) << m.str();
}
