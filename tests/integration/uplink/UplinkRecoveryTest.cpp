// The uplink job when things go wrong (UplinkFixture, real links and OVS):
// the node keeps its address at every point of a migration, an agent killed
// after any step finishes the job on its next start, a step that fails
// undoes everything, and a node an older kovs migrated (a Linux bridge shim,
// eth0 wearing a made-up MAC) is brought to the current shape.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/integration/uplink/UplinkFixture.hpp"
#include "uplink/UplinkKernel.hpp"

using kovs::runChecked;
using kovs::runProcess;
using kovs::test::addrsOf;
using kovs::test::linkExists;
using kovs::test::macOf;
using kovs::test::netState;
using kovs::test::pollUntil;
using kovs::uplink::Uplink;
using kovs::uplink::UplinkKernel;
using kovs::uplink::UplinkMode;
using nlohmann::json;
using namespace std::chrono_literals;

class UplinkRecoveryTest : public kovs::test::UplinkFixture {
protected:
    bool pingsHost() {
        return pollUntil([] { return runProcess({"ping", "-c1", "-W1", "172.31.0.1"}).ok(); }, 5s);
    }

    // Applies the migration one step at a time, as migrate() does, calling
    // `at(n)` before step n (1-based, counted over all passes); returns the
    // number of steps. `at` returning false stops there, as a SIGKILL would.
    int stepThrough(const std::function<bool(int)>& at) {
        names.clear();
        convergeBridges();
        UplinkKernel kernel(opts);
        int n = 0;
        for (int pass = 0; pass < 20; ++pass) {
            auto o = kernel.observe(&client->replica());
            auto plan = kovs::uplink::planMigration(opts, kovs::uplink::desire(opts, o), o);
            if (!plan.blocked.empty()) throw kovs::Error(plan.blocked);
            if (plan.converged()) return n;
            if (plan.steps.empty()) {
                idle();
                continue;
            }
            for (const auto& s : plan.steps) {
                names.push_back(kovs::uplink::describe(s.action));
                if (!at(++n)) return n;
                kernel.apply(s.action);
            }
        }
        throw kovs::Error("did not converge");
    }
    std::vector<std::string> names;  // of the steps stepThrough() went through
};

// The ordering claim: at every step boundary of a shim migration the node
// still reaches the host (it never lacks its address or a working path).
TEST_F(UplinkRecoveryTest, TheNodeReachesTheHostAtEveryStep) {
    std::vector<int> unreachable;
    int steps = stepThrough([&](int n) {
        if (!pingsHost()) unreachable.push_back(n);
        return true;
    });
    EXPECT_GT(steps, 10);
    std::string listing;
    for (size_t i = 0; i < names.size(); ++i) listing += "\n  " + std::to_string(i + 1) + ". " + names[i];
    EXPECT_TRUE(unreachable.empty()) << "no ping to the host before step(s) " << ::testing::PrintToString(unreachable)
                                     << " of:" << listing;
    EXPECT_TRUE(pingsHost()) << "after the last step";
    EXPECT_EQ(underlay->hostToNodeBytes(), 512u * 1024u);
}

// An agent killed after any step: the next start (no state but what the
// kernel and the record hold) completes the migration, and cleanup still
// restores eth0 exactly.
TEST_F(UplinkRecoveryTest, AnAgentKilledAfterAnyStepFinishesOnItsNextStart) {
    int total = stepThrough([](int) { return true; });
    ASSERT_TRUE(cleanup());
    expectRestored("after the reference run");
    for (int killedAt = 2; killedAt <= total; killedAt += 3) {
        SCOPED_TRACE("killed before step " + std::to_string(killedAt) + " of " + std::to_string(total));
        stepThrough([&](int n) { return n < killedAt; });
        ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
        EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "fd31::2/64"}));
        EXPECT_EQ(addrsOf("eth0"), json::array());
        EXPECT_TRUE(pingsHost());
        ASSERT_TRUE(cleanup());
        expectRestored("after cleanup");
    }
}

// Direct mode, agent killed after eth0's routes left and before br-phy had
// them: the restarted agent must not take that as migrated (no default route
// for good) but finish it from the record.
TEST_F(UplinkRecoveryTest, DirectModeKilledMidwayIsRedoneNotTakenAsDone) {
    opts.mode = UplinkMode::Direct;
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    // The state of that moment: addresses on both, the routes on neither.
    for (const char* a : {"172.31.0.2/24", "fd31::2/64"}) runChecked({"ip", "addr", "add", a, "dev", "eth0", "nodad"});
    runProcess({"ip", "route", "del", "default", "dev", "br-phy"});
    runProcess({"ip", "route", "del", "10.99.0.0/16", "dev", "br-phy"});
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    EXPECT_EQ(kovs::test::ipJson({"route", "show", "default"}).at(0).at("dev"), "br-phy");
    EXPECT_EQ(addrsOf("eth0"), json::array());
    ASSERT_TRUE(cleanup());
    expectRestored("after cleanup");
}

// A late step fails (someone else's tc ingress qdisc on eth0, which the
// redirect cannot share; every address and route has moved by then): every
// earlier step is undone, eth0 is as it was.
TEST_F(UplinkRecoveryTest, AFailingLateStepUndoesEverything) {
    runChecked({"tc", "qdisc", "add", "dev", "eth0", "ingress"});
    try {
        migrate();
        FAIL() << "migrate() should have failed";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("redirect eth0 ingress to kovs-up0"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("qdisc that is not kovs's"), std::string::npos) << e.what();
    }
    auto after = netState();
    EXPECT_EQ(after.addr, before.addr) << "before: " << before.addr.dump() << "\nafter:  " << after.addr.dump();
    EXPECT_EQ(after.routes4, before.routes4);
    EXPECT_EQ(after.routes6, before.routes6);
    EXPECT_FALSE(linkExists("kovs-up0"));
    EXPECT_EQ(addrsOf("br-phy"), json::array());
    EXPECT_FALSE(std::filesystem::exists(opts.recordFile));
    EXPECT_TRUE(pingsHost());
}

// A port named like the shim's OVS end sits in another bridge and is not
// kovs's: the bridge job leaves it alone, and the uplink stops before it
// changes anything that matters, undoing the shim it made.
TEST_F(UplinkRecoveryTest, AForeignPortInTheWayIsAClearErrorAndChangesNothing) {
    ovs.vsctl({"add-br", "br-other", "--", "set", "bridge", "br-other", "datapath_type=netdev", "--", "add-port",
               "br-other", "kovs-up1"});
    try {
        migrate();
        FAIL() << "migrate() should have failed";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("OVS port kovs-up1 is in bridge br-other"), std::string::npos) << e.what();
    }
    EXPECT_EQ(netState(), before);
    EXPECT_FALSE(linkExists("kovs-up0"));
    EXPECT_FALSE(std::filesystem::exists(opts.recordFile));
}

// A node migrated by kovs 0.1: eth0 in a Linux bridge kovs-shim with
// kovs-up0, eth0 wearing the made-up MAC, br-phy the original; no record
// of the current format. The MAC to pin comes from OVSDB (br-phy's hwaddr)
// because eth0's own is not the original, and the Linux bridge goes.
TEST_F(UplinkRecoveryTest, ANodeMigratedByTheLinuxBridgeShimIsConverted) {
    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    // Back to the 0.1 layout, by hand.
    for (const char* l : {"eth0", "kovs-up0"}) runChecked({"tc", "qdisc", "del", "dev", l, "clsact"});
    runChecked({"ip", "link", "add", "kovs-shim", "type", "bridge"});
    runChecked({"ip", "link", "set", "eth0", "address", kovs::uplink::legacyShimMac(originalMac)});
    for (const char* l : {"eth0", "kovs-up0"}) runChecked({"ip", "link", "set", l, "master", "kovs-shim"});
    runChecked({"ip", "link", "set", "kovs-shim", "up"});
    std::filesystem::remove(opts.recordFile);
    ASSERT_TRUE(pingsHost()) << "the 0.1 layout works before the conversion";

    ASSERT_EQ(migrate(), Uplink::Outcome::Migrated);
    EXPECT_FALSE(linkExists("kovs-shim"));
    EXPECT_EQ(macOf("eth0"), originalMac);
    EXPECT_EQ(macOf("br-phy"), originalMac) << "br-phy keeps the node's MAC, not eth0's made-up one";
    EXPECT_EQ(ovs.vsctl({"get", "Bridge", "br-phy", "other_config:hwaddr"}), "\"" + originalMac + "\"\n");
    EXPECT_TRUE(pingsHost());
    EXPECT_EQ(underlay->hostToNodeBytes(), 512u * 1024u);
    ASSERT_TRUE(cleanup());
    EXPECT_EQ(addrsOf("eth0"), json({"172.31.0.2/24", "fd31::2/64"}));
    EXPECT_EQ(macOf("eth0"), originalMac);
    EXPECT_TRUE(pingsHost());
}
