// The gateway guard against the real kernel, in the test's private netns:
// every kind of damage to gw0 is repaired, and the time it took is printed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "gateway/GatewayGuard.hpp"
#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/integration/gateway/GatewayTestSupport.hpp"
#include "tests/support/Poll.hpp"

using namespace kovs;
using namespace kovs::test;
using namespace std::chrono_literals;

namespace {

const char* kPodCidr = "10.244.1.0/24";
const char* kPodCidr6 = "fd00:10:244:1::/64";

// No dummy module on these machines: a veth pair with its peer up stands in
// for the OVS internal port (the guard does not care what kind of link it is).
void addLink(const std::string& name) {
    runChecked({"ip", "link", "add", name, "type", "veth", "peer", "name", name + "-p"});
    runChecked({"ip", "link", "set", name + "-p", "up"});
}

class GatewayGuardTest : public ::testing::Test {
protected:
    void SetUp() override {
        runProcess({"ip", "link", "del", dev_});  // leftovers of a crashed run
        addLink(dev_);
        opt_.name = dev_;
        opt_.mtu = 1450;
        opt_.addresses = {gatewayAddressFor(kPodCidr), gatewayAddressFor(kPodCidr6)};
        opt_.routes = {{IpPrefix::parse("10.96.0.0/12"), std::nullopt}, {IpPrefix::parse("fd00:96::/108"), std::nullopt}};
    }
    void TearDown() override {
        guard_.reset();
        runProcess({"ip", "link", "del", dev_});
        runProcess({"ip", "link", "del", "other0"});
    }

    void startGuard() {
        guard_ = std::make_unique<GuardThread>(opt_);
        expectConsistentWithin("initial configuration", 5s);
    }

    bool consistent(const LinkView& v) const {
        if (!v.exists || !v.up || v.mtu != opt_.mtu) return false;
        if (v.addresses != std::set<std::string>{"10.244.1.1/24", "fd00:10:244:1::1/64"}) return false;
        auto* pod = v.route("10.244.1.0/24");
        auto* svc = v.route("10.96.0.0/12");
        return pod && pod->prefsrc == "10.244.1.1" && svc && svc->protocol == "107" && v.route("fd00:10:244:1::/64") &&
               v.route("fd00:96::/108");
    }

    // Polls the kernel through `ip` (1 ms apart) until gw0 is fully configured;
    // prints and returns how long that took.
    std::chrono::microseconds expectConsistentWithin(const std::string& what, std::chrono::milliseconds limit) {
        auto t0 = std::chrono::steady_clock::now();
        LinkView last;
        bool ok = pollUntil([&] { return consistent(last = LinkView::read(dev_)); }, limit, 1ms);
        auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
        EXPECT_TRUE(ok) << what << ": gw0 not restored within " << limit.count() << " ms; last seen: " << last.describe();
        if (ok && guard_) {
            auto s = guard_->stats();
            std::printf("[ gateway ] %-28s restored, seen by test after %6.2f ms (guard's own repair: %6.3f ms)\n",
                        what.c_str(), took.count() / 1000.0, s.lastRestore.count() / 1e6);
        }
        return took;
    }

    const std::string dev_ = "gw0";
    gateway::GatewayGuardOptions opt_;
    std::unique_ptr<GuardThread> guard_;
};

TEST_F(GatewayGuardTest, ConfiguresAFreshLink) {
    startGuard();
    auto s = guard_->stats();
    EXPECT_EQ(s.linkUp, 1u);
    EXPECT_EQ(s.mtuFixed, 1u);
    EXPECT_EQ(s.addressesAdded, 2u);
    EXPECT_EQ(s.addressesAdded6, 1u);
    EXPECT_GE(s.routesAdded, 2u);  // the extra routes; the kernel adds the prefix routes
    EXPECT_EQ(s.routesAdded6, 1u);
    EXPECT_TRUE(s.linkPresent);
}

TEST_F(GatewayGuardTest, FlushedAddressesComeBack) {
    startGuard();
    std::atomic<int64_t> handlerNs{0};
    guard_->onLoop([&](gateway::GatewayGuard& g) { g.setRestoreHandler([&](std::chrono::nanoseconds d) { handlerNs = d.count(); }); });
    runChecked({"ip", "addr", "flush", "dev", dev_});
    expectConsistentWithin("ip addr flush", 2s);
    EXPECT_GE(guard_->stats().addressesAdded, 4u);
    EXPECT_TRUE(pollUntil([&] { return handlerNs > 0 && handlerNs == guard_->stats().lastRestore.count(); }, 2s))
        << "restore handler not called with the restore's duration: " << handlerNs;
    guard_->onLoop([](gateway::GatewayGuard& g) { g.setRestoreHandler(nullptr); });
}

TEST_F(GatewayGuardTest, FlushedRoutesComeBackWithKovsProtocol) {
    startGuard();
    runChecked({"ip", "-4", "route", "flush", "dev", dev_});
    runChecked({"ip", "-6", "route", "flush", "dev", dev_});
    expectConsistentWithin("ip route flush", 2s);
    auto v = LinkView::read(dev_);
    ASSERT_NE(v.route("10.244.1.0/24"), nullptr);
    EXPECT_EQ(v.route("10.244.1.0/24")->protocol, "107") << v.describe();
}

TEST_F(GatewayGuardTest, DeletedRouteComesBack) {
    startGuard();
    runChecked({"ip", "route", "del", "10.96.0.0/12", "dev", dev_});
    expectConsistentWithin("ip route del service CIDR", 2s);
    runChecked({"ip", "route", "del", "10.244.1.0/24", "dev", dev_});
    expectConsistentWithin("ip route del pod CIDR", 2s);
}

TEST_F(GatewayGuardTest, DeletedAddressComesBack) {
    startGuard();
    runChecked({"ip", "addr", "del", "10.244.1.1/24", "dev", dev_});
    expectConsistentWithin("ip addr del IPv4", 2s);
    runChecked({"ip", "addr", "del", "fd00:10:244:1::1/64", "dev", dev_});
    expectConsistentWithin("ip addr del IPv6", 2s);
}

TEST_F(GatewayGuardTest, LinkDownComesBackUpWithRoutes) {
    startGuard();
    runChecked({"ip", "link", "set", dev_, "down"});
    expectConsistentWithin("ip link set down", 2s);
    EXPECT_GE(guard_->stats().linkUp, 2u);
}

TEST_F(GatewayGuardTest, MtuComesBack) {
    startGuard();
    runChecked({"ip", "link", "set", dev_, "mtu", "1300"});
    expectConsistentWithin("ip link set mtu 1300", 2s);
    EXPECT_GE(guard_->stats().mtuFixed, 2u);
}

// A new MTU (the agent following a narrower path to a peer) is set as a
// change, not counted as a repair, and then kept as the old one was.
TEST_F(GatewayGuardTest, ANewMtuIsSetAndThenKept) {
    startGuard();
    const auto repairs = guard_->stats().mtuFixed;
    opt_.mtu = 1350;
    guard_->onLoop([](gateway::GatewayGuard& g) { g.setMtu(1350); });
    expectConsistentWithin("setMtu(1350)", 2s);
    EXPECT_EQ(guard_->stats().mtuFixed, repairs) << "a change the agent asked for is not a repair";
    runChecked({"ip", "link", "set", dev_, "mtu", "1450"});
    expectConsistentWithin("ip link set mtu 1450 (the old value)", 2s);
    EXPECT_EQ(guard_->stats().mtuFixed, repairs + 1);
    EXPECT_THROW(guard_->onLoop([](gateway::GatewayGuard& g) { g.setMtu(40); }), kovs::Error);
    EXPECT_EQ(LinkView::read(dev_).mtu, 1350) << "an MTU out of range changes nothing";
}

// Counted per family: the IPv6 address and its route, nothing of IPv4's.
TEST_F(GatewayGuardTest, Ipv6FlushComesBack) {
    startGuard();
    auto before = guard_->stats();
    runChecked({"ip", "-6", "addr", "flush", "dev", dev_});
    expectConsistentWithin("ip -6 addr flush", 2s);
    auto after = guard_->stats();
    EXPECT_EQ(after.addressesAdded6 - before.addressesAdded6, 1u);
    EXPECT_EQ(after.addressesAdded - before.addressesAdded, 1u);
    EXPECT_EQ(after.routesAdded6 - before.routesAdded6, after.routesAdded - before.routesAdded);
}

TEST_F(GatewayGuardTest, ExtraRouteViaNextHopComesBack) {
    opt_.routes.push_back({IpPrefix::parse("10.97.0.0/16"), IpPrefix::parse("10.244.1.254")});
    startGuard();
    auto viaRoute = [&](const LinkView& v) {
        auto* r = v.route("10.97.0.0/16");
        return r && r->gateway == "10.244.1.254" && r->protocol == "107";
    };
    LinkView last;
    ASSERT_TRUE(pollUntil([&] { return viaRoute(last = LinkView::read(dev_)); }, 2s, 1ms)) << last.describe();
    runChecked({"ip", "route", "del", "10.97.0.0/16"});
    EXPECT_TRUE(pollUntil([&] { return viaRoute(last = LinkView::read(dev_)) && consistent(last); }, 2s, 1ms))
        << last.describe();
    // Flushing the address takes the next hop's subnet with it: everything comes back in order.
    runChecked({"ip", "-4", "addr", "flush", "dev", dev_});
    EXPECT_TRUE(pollUntil([&] { return viaRoute(last = LinkView::read(dev_)) && consistent(last); }, 2s, 1ms))
        << last.describe();
}

TEST_F(GatewayGuardTest, ReplacedRoutesAreAppliedAndOldKovsRoutesRemoved) {
    opt_.routes.push_back({IpPrefix::parse("10.98.0.0/16"), std::nullopt});
    startGuard();
    LinkView last;
    ASSERT_TRUE(pollUntil([&] { return (last = LinkView::read(dev_)).route("10.98.0.0/16") != nullptr; }, 2s, 1ms))
        << last.describe();
    // A peer went away and another came: the guard's loop applies the new set.
    guard_->onLoop([](gateway::GatewayGuard& g) {
        g.setRoutes({{IpPrefix::parse("10.96.0.0/12"), std::nullopt}, {IpPrefix::parse("fd00:96::/108"), std::nullopt},
                     {IpPrefix::parse("10.99.0.0/16"), std::nullopt}});
    });
    EXPECT_TRUE(pollUntil([&] {
        last = LinkView::read(dev_);
        return last.route("10.99.0.0/16") && !last.route("10.98.0.0/16") && last.route("10.96.0.0/12");
    }, 2s, 1ms)) << last.describe();
    // A bad set is refused whole and changes nothing.
    std::string error;
    guard_->onLoop([&](gateway::GatewayGuard& g) {
        try {
            g.setRoutes({{IpPrefix::parse("10.100.0.0/16"), IpPrefix::parse("fd00::1")}});
        } catch (const Error& e) {
            error = e.what();
        }
    });
    EXPECT_NE(error.find("mixes address families"), std::string::npos) << error;
    runChecked({"ip", "route", "del", "10.99.0.0/16"});
    EXPECT_TRUE(pollUntil([&] { return (last = LinkView::read(dev_)).route("10.99.0.0/16") != nullptr; }, 2s, 1ms))
        << "the replaced set is guarded too: " << last.describe();
    EXPECT_EQ(last.route("10.100.0.0/16"), nullptr);
}

TEST_F(GatewayGuardTest, ForeignAddressGoesOthersRoutesStay) {
    startGuard();
    runChecked({"ip", "route", "add", "10.50.0.0/16", "dev", dev_, "proto", "static"});
    runChecked({"ip", "addr", "add", "10.244.1.99/24", "dev", dev_});
    LinkView last;
    EXPECT_TRUE(pollUntil([&] { return consistent(last = LinkView::read(dev_)); }, 2s, 1ms)) << last.describe();
    ASSERT_NE(last.route("10.50.0.0/16"), nullptr) << "someone else's route was removed: " << last.describe();
    EXPECT_EQ(last.route("10.50.0.0/16")->protocol, "static");
    EXPECT_GE(guard_->stats().addressesRemoved, 1u);
}

TEST_F(GatewayGuardTest, StaleKovsRouteIsRemoved) {
    startGuard();
    runChecked({"ip", "route", "add", "10.60.0.0/16", "dev", dev_, "proto", "107"});
    LinkView last;
    EXPECT_TRUE(pollUntil([&] { return !(last = LinkView::read(dev_)).route("10.60.0.0/16"); }, 2s, 1ms))
        << last.describe();
    EXPECT_TRUE(consistent(last)) << last.describe();
}

// A restarted agent does not know its peers yet: the routes to their pod
// CIDRs that the previous agent left on gw0 stay until the peers arrive.
TEST_F(GatewayGuardTest, KovsRoutesStayUntilTheRouteSetIsComplete) {
    runChecked({"ip", "link", "set", dev_, "up"});
    runChecked({"ip", "route", "add", "10.244.7.0/24", "dev", dev_, "proto", "107"});
    runChecked({"ip", "route", "add", "10.244.8.0/24", "dev", dev_, "proto", "107"});
    opt_.routesComplete = false;
    startGuard();
    expectConsistentWithin("start-up", 2s);
    guard_->onLoop([](gateway::GatewayGuard& g) { g.reconcileNow(); });
    LinkView v = LinkView::read(dev_);
    ASSERT_NE(v.route("10.244.7.0/24"), nullptr) << "removed before the peers were known: " << v.describe();
    ASSERT_NE(v.route("10.244.8.0/24"), nullptr) << v.describe();

    auto peer = IpPrefix::parse("10.244.7.0/24");
    guard_->onLoop([&](gateway::GatewayGuard& g) {
        auto routes = opt_.routes;
        routes.push_back({peer, std::nullopt});
        g.setRoutes(routes);
    });
    LinkView last;
    EXPECT_TRUE(pollUntil([&] { return !(last = LinkView::read(dev_)).route("10.244.8.0/24"); }, 2s, 1ms))
        << "the peer that is gone keeps its route: " << last.describe();
    EXPECT_NE(last.route("10.244.7.0/24"), nullptr) << last.describe();
}

TEST_F(GatewayGuardTest, WaitsForAMissingLinkAndConfiguresItWhenItAppears) {
    runChecked({"ip", "link", "del", dev_});
    guard_ = std::make_unique<GuardThread>(opt_);
    EXPECT_TRUE(pollUntil([&] { return guard_->stats().reconciles >= 1; }, 2s)) << "no first reconcile";
    EXPECT_FALSE(guard_->stats().linkPresent);
    addLink(dev_);
    expectConsistentWithin("link re-created", 2s);
    // And again: the port deleted and re-created under the guard.
    runChecked({"ip", "link", "del", dev_});
    addLink(dev_);
    expectConsistentWithin("link deleted + re-created", 2s);
}

TEST_F(GatewayGuardTest, WorksUnderAnotherName) {
    addLink("antrea-gw0");
    opt_.name = "antrea-gw0";
    {
        GuardThread g(opt_);
        LinkView last;
        EXPECT_TRUE(pollUntil([&] {
            last = LinkView::read("antrea-gw0");
            return last.up && last.addresses.count("10.244.1.1/24") && last.route("10.96.0.0/12");
        }, 5s, 1ms)) << last.describe();
        runChecked({"ip", "addr", "flush", "dev", "antrea-gw0"});
        EXPECT_TRUE(pollUntil([&] {
            last = LinkView::read("antrea-gw0");
            return last.addresses.count("10.244.1.1/24") && last.route("10.244.1.0/24") && last.route("10.96.0.0/12");
        }, 2s, 1ms)) << last.describe();
    }
    runProcess({"ip", "link", "del", "antrea-gw0"});
}

TEST_F(GatewayGuardTest, HundredRouteFlushCostsFewReconciles) {
    startGuard();
    std::string batch;
    for (int i = 0; i < 100; ++i) batch += "route add 10.70." + std::to_string(i) + ".0/24 dev gw0 proto static\n";
    ProcessOptions po;
    po.stdinData = batch;
    runChecked({"ip", "-batch", "-"}, po);
    expectConsistentWithin("after 100 route adds", 2s);
    auto before = guard_->stats().reconciles;
    runChecked({"ip", "route", "flush", "dev", dev_, "proto", "static"});
    // The flush removed routes the guard does not own: nothing to repair, but
    // the events must have been seen, and coalesced.
    EXPECT_TRUE(pollUntil([&] { return guard_->stats().reconciles > before; }, 2s)) << "flush not noticed";
    auto s = guard_->stats();
    std::printf("[ gateway ] 100-route flush cost %llu reconcile(s)\n",
                static_cast<unsigned long long>(s.reconciles - before));
    EXPECT_LE(s.reconciles - before, 3u);
    EXPECT_TRUE(consistent(LinkView::read(dev_)));
}

TEST_F(GatewayGuardTest, UnrelatedRouteStormTriggersNoReconcile) {
    startGuard();
    addLink("other0");
    runChecked({"ip", "link", "set", "other0", "up"});
    runChecked({"ip", "addr", "add", "192.168.77.1/24", "dev", "other0"});
    // Let the guard see the other0 setup events first.
    auto discarded0 = guard_->stats().events.discarded;
    std::string batch;
    for (int i = 0; i < 500; ++i) {
        batch += "route add 10.80." + std::to_string(i / 250) + "." + std::to_string(i % 250) + "/32 dev other0\n";
    }
    for (int i = 0; i < 500; ++i) {
        batch += "route del 10.80." + std::to_string(i / 250) + "." + std::to_string(i % 250) + "/32 dev other0\n";
    }
    auto before = guard_->stats().reconciles;
    ProcessOptions po;
    po.stdinData = batch;
    runChecked({"ip", "-batch", "-"}, po);
    // The guard only reports counters after a reconcile; force one to read them.
    runChecked({"ip", "route", "del", "10.96.0.0/12", "dev", dev_});
    expectConsistentWithin("route del after storm", 2s);
    auto s = guard_->stats();
    EXPECT_GE(s.events.discarded - discarded0, 1000u);
    EXPECT_LE(s.reconciles - before, 2u) << "unrelated events triggered reconciles";
}

TEST_F(GatewayGuardTest, PeriodicResyncRepairsWhatNoEventAnnounces) {
    opt_.resyncInterval = 200ms;
    startGuard();
    auto before = guard_->stats().reconciles;
    EXPECT_TRUE(pollUntil([&] { return guard_->stats().reconciles >= before + 2; }, 3s)) << "no periodic resync";
}

TEST_F(GatewayGuardTest, DisabledGuardLeavesDamageInPlace) {
    opt_.enabled = false;
    runChecked({"ip", "link", "set", dev_, "up"});
    runChecked({"ip", "addr", "add", "10.244.1.1/24", "dev", dev_});
    GuardThread off(opt_);
    runChecked({"ip", "addr", "flush", "dev", dev_});
    // Absence can only be shown over a window: the guard's restore takes
    // milliseconds when enabled, so one second of nothing is conclusive.
    EXPECT_FALSE(pollUntil([&] { return LinkView::read(dev_).addresses.count("10.244.1.1/24") > 0; }, 1s, 5ms));
    EXPECT_EQ(off.stats().reconciles, 0u);
}

}  // namespace

// The Service paths need loose reverse-path filtering and no ICMP redirects
// on the gateway (gateway/GatewaySysctls); someone setting them back
// is undone by the next resync.
TEST_F(GatewayGuardTest, KeepsReversePathFilteringLooseAndRedirectsOff) {
    auto sysctl = [&](const char* key) {
        std::string v;
        std::ifstream("/proc/sys/net/ipv4/conf/" + dev_ + "/" + key) >> v;
        return v;
    };
    auto set = [&](const char* key, const char* value) { std::ofstream("/proc/sys/net/ipv4/conf/" + dev_ + "/" + key) << value; };
    set("rp_filter", "1");
    set("send_redirects", "1");
    opt_.resyncInterval = 100ms;
    startGuard();
    EXPECT_TRUE(pollUntil([&] { return sysctl("rp_filter") == "2" && sysctl("send_redirects") == "0"; }, 2s))
        << "rp_filter " << sysctl("rp_filter") << ", send_redirects " << sysctl("send_redirects");
    set("rp_filter", "1");
    EXPECT_TRUE(pollUntil([&] { return sysctl("rp_filter") == "2"; }, 2s)) << sysctl("rp_filter");
    set("rp_filter", "0");  // off is looser still: left alone
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(sysctl("rp_filter"), "0");
    EXPECT_GE(guard_->stats().sysctlsFixed, 3u);
}

// gw0 is the pods' IPv6 router and must not take a router advertisement's
// address or route (a pod's RA that got past the flows, or anyone's).
TEST_F(GatewayGuardTest, KeepsIpv6ForwardingOnAndRouterAdvertisementsIgnored) {
    auto path = [&](const char* key) { return "/proc/sys/net/ipv6/conf/" + dev_ + "/" + key; };
    auto sysctl = [&](const char* key) {
        std::string v;
        std::ifstream(path(key)) >> v;
        return v;
    };
    std::ofstream(path("forwarding")) << "0";
    std::ofstream(path("accept_ra")) << "1";
    ASSERT_EQ(sysctl("accept_ra"), "1");
    opt_.resyncInterval = 100ms;
    startGuard();
    EXPECT_TRUE(pollUntil([&] { return sysctl("forwarding") == "1" && sysctl("accept_ra") == "0"; }, 2s))
        << "forwarding " << sysctl("forwarding") << ", accept_ra " << sysctl("accept_ra");
    std::ofstream(path("accept_ra")) << "2";
    EXPECT_TRUE(pollUntil([&] { return sysctl("accept_ra") == "0"; }, 2s)) << sysctl("accept_ra");
}
