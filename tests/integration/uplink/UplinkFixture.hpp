#pragma once
// A node for the uplink job's integration tests: a real OVS (OvsSandbox),
// eth0 facing a host netns (Underlay), and the agent's start-up order: the
// bridge job converges br-phy with the uplink's OVS side (port, hwaddr),
// then the uplink job moves the kernel side, waiting on the same replica.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>

#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "bridge/BridgeReconciler.hpp"
#include "ovs/OvsdbClient.hpp"
#include "tests/integration/uplink/UplinkUnderlay.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"
#include "uplink/Uplink.hpp"

namespace kovs::test {

class UplinkFixture : public ::testing::Test {
protected:
    void SetUp() override {
        // vswitchd leaves its netdev bridges' taps behind when it exits; an
        // earlier test's br-phy (and its addresses) must not leak into this one.
        for (const char* l : {"br-phy", "br-int", "gw0", "ovs-netdev"}) runProcess({"ip", "link", "del", l});
        underlay.emplace();
        before = netState();
        originalMac = macOf("eth0");
        opts.recordFile = ovs.dir() + "/uplink/record.json";
        opts.ovsTimeout = std::chrono::seconds(10);
        ovs::OvsdbClientOptions o;
        o.remote = ovs.dbRemote();
        client = std::make_unique<ovs::OvsdbClient>(loop, o);
        client->start();
        if (!client->waitReady(std::chrono::seconds(10))) throw Error("test OVSDB not ready");
    }
    void TearDown() override {
        client.reset();
        underlay.reset();
        for (const char* l : {"kovs-up0", "kovs-shim"}) runProcess({"ip", "link", "del", l});
    }

    // The bridge job with the uplink's OVS side, as Agent::convergeBridges does.
    void convergeBridges() {
        auto side = uplink::Uplink(opts).ovsSide(client->replica());
        bridge::BridgeOptions b;
        b.uplink = bridge::BridgeUplinkPort{side.port, side.type, side.hwaddr};
        bridges = std::make_unique<bridge::BridgeReconciler>(loop, *client, b);
        bridges->start();
        if (!bridges->reconcileOnce(std::chrono::seconds(10))) throw Error("bridges: " + bridges->lastError());
        if (!pollUntil([] { return linkExists("br-phy"); }, std::chrono::seconds(10))) throw Error("no br-phy device");
    }

    // Agent start-up: bridges, then the uplink.
    uplink::Uplink::Outcome migrate() {
        convergeBridges();
        return uplink::Uplink(opts).migrate(client->replica(), [this] { idle(); });
    }
    void idle() { loop.runUntil([] { return false; }, std::chrono::milliseconds(10)); }
    // `kovs-agent --cleanup`: the uplink's kernel side, then (OVS permitting)
    // the bridges, whose taps vswitchd then removes.
    bool cleanup() {
        bool changed = uplink::Uplink(opts).cleanup();
        bridges.reset();  // or it would rebuild what the cleanup removes
        if (client && client->state() == ovs::OvsdbClient::State::Ready) {
            bridge::BridgeReconciler(loop, *client, bridge::BridgeOptions{}).cleanup();
            if (!pollUntil([] { return !linkExists("br-phy"); }, std::chrono::seconds(10))) ADD_FAILURE() << "br-phy stays";
        }
        return changed;
    }

    void expectRestored(const std::string& when) {
        auto after = netState();
        EXPECT_EQ(after.addr, before.addr) << when << "\nbefore: " << before.addr.dump() << "\nafter:  " << after.addr.dump();
        EXPECT_EQ(after.routes4, before.routes4) << when << "\nbefore: " << before.routes4.dump() << "\nafter:  " << after.routes4.dump();
        EXPECT_EQ(after.routes6, before.routes6) << when << "\nbefore: " << before.routes6.dump() << "\nafter:  " << after.routes6.dump();
        EXPECT_FALSE(linkExists("kovs-up0")) << when;
        EXPECT_FALSE(linkExists("kovs-up1")) << when;
        EXPECT_EQ(runChecked({"tc", "qdisc", "show", "dev", "eth0"}).find("clsact"), std::string::npos) << when;
    }

    OvsSandbox ovs;
    EventLoop loop;
    std::unique_ptr<ovs::OvsdbClient> client;
    std::unique_ptr<bridge::BridgeReconciler> bridges;
    std::optional<Underlay> underlay;
    uplink::UplinkOptions opts;
    NetState before;
    std::string originalMac;
};

}  // namespace kovs::test
