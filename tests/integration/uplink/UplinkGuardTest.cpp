// The uplink job after start-up (UplinkGuard) against real links and a real
// OVS: what someone does to a migrated node behind the agent's back is put
// back, and the node reaches the host again. Each case first shows that the
// damage is real (the node cannot reach the host, or eth0 holds the node's
// address twice) before the guard runs.
#include <gtest/gtest.h>

#include "base/RepairLog.hpp"
#include "tests/integration/uplink/UplinkFixture.hpp"
#include "uplink/UplinkGuard.hpp"

using kovs::runChecked;
using kovs::runProcess;
using kovs::test::addrsOf;
using kovs::test::linkExists;
using kovs::uplink::Uplink;
using kovs::uplink::UplinkGuard;
using nlohmann::json;
using namespace std::chrono_literals;

class UplinkGuardTest : public kovs::test::UplinkFixture {
protected:
    void startGuard() {
        ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
        guard = std::make_unique<UplinkGuard>(loop, opts, client->replica(), repairs, std::chrono::hours(1));
        guard->setShimRebuiltHandler([this](const std::string& port) { bridges->reattach(port); });
        guard->start();
        loop.runUntil([] { return false; }, 100ms);  // its first pass: nothing to do
        ASSERT_EQ(guard->repairs(), 0u) << "a freshly migrated node needs no repair";
    }
    // Runs the loop (the guard, the bridge job, OVSDB updates) until `done`.
    bool runUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
        return loop.runUntil(done, timeout);
    }
    static bool hostReachable() { return runProcess({"ping", "-c1", "-W1", kovs::test::Underlay::kHostIp}).ok(); }
    std::string state() const {
        json s;
        guard->status(s);
        return s.dump();
    }
    void TearDown() override {
        guard.reset();
        UplinkFixture::TearDown();
    }

    kovs::RepairLog repairs;
    std::unique_ptr<UplinkGuard> guard;
};

TEST_F(UplinkGuardTest, TheNodesAddressPutBackOnEth0IsTakenOffAgain) {
    startGuard();
    // A DHCP client or a person gives eth0 the node's address again: two
    // interfaces claim one IP and replies leave by the wrong one.
    runChecked({"ip", "addr", "add", "172.31.0.2/24", "dev", "eth0"});
    ASSERT_TRUE(runUntil([] { return addrsOf("eth0").empty(); })) << "eth0 still holds " << addrsOf("eth0").dump() << "\n" << state();
    EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "fd31::2/64"}));
    EXPECT_GE(guard->repairs(), 1u);
    EXPECT_TRUE(underlay->pingHost());
    EXPECT_NE(repairs.recent().dump().find("172.31.0.2/24"), std::string::npos) << repairs.recent().dump();
}

TEST_F(UplinkGuardTest, ADeletedShimVethIsRebuiltAndTheNodeReachesTheHostAgain) {
    startGuard();
    runChecked({"ip", "link", "del", "kovs-up0"});  // takes kovs-up1 along
    // The damage is real: with the guard's loop not running, nothing answers.
    EXPECT_FALSE(hostReachable()) << "without the shim the node should be cut off from the host";
    ASSERT_TRUE(runUntil([] { return linkExists("kovs-up0") && linkExists("kovs-up1") && hostReachable(); }, 20s))
        << state() << "\n" << ovs.vsctl({"--columns=name,ofport,error", "list", "interface"});
    EXPECT_TRUE(underlay->pingHost());
    auto tc = runChecked({"tc", "filter", "show", "dev", "eth0", "ingress"});
    EXPECT_NE(tc.find("Egress Redirect to device kovs-up0"), std::string::npos) << tc;
}

TEST_F(UplinkGuardTest, BrPhyFlushedGetsItsAddressesAndRoutesBack) {
    startGuard();
    runChecked({"ip", "addr", "flush", "dev", "br-phy", "scope", "global"});
    EXPECT_FALSE(hostReachable());
    ASSERT_TRUE(runUntil([] {
        return addrsOf("br-phy") == json({"172.31.0.2/24", "fd31::2/64"}) &&
               runChecked({"ip", "route", "show", "default"}).find("dev br-phy") != std::string::npos;
    })) << addrsOf("br-phy").dump() << "\n" << state();
    EXPECT_NE(runChecked({"ip", "route", "show", "10.99.0.0/16"}).find("dev br-phy"), std::string::npos);
    EXPECT_TRUE(underlay->pingHost());
}

TEST_F(UplinkGuardTest, AWriterThatKeepsUndoingItIsContestedNotFought) {
    startGuard();
    // Put eth0's address back as soon as it is gone, 10 times.
    int writes = 0;
    for (int i = 0; i < 10; ++i) {
        if (runProcess({"ip", "addr", "add", "172.31.0.2/24", "dev", "eth0"}).ok()) ++writes;
        runUntil([] { return addrsOf("eth0").empty(); }, 3s);
    }
    json s;
    guard->status(s);
    auto rec = s.at("uplink").at("reconcile");
    EXPECT_TRUE(rec.at("contested").get<bool>()) << s.dump();
    EXPECT_GE(rec.at("repairsHeld").get<uint64_t>(), 1u) << s.dump();
    EXPECT_LT(guard->repairs(), static_cast<uint64_t>(writes)) << "every write was undone at once: no backoff";
    EXPECT_GE(guard->repairs(), 5u) << "the first burst goes at once";
}
