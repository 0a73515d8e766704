// The policy log without OVS: packet-ins handed to the logger as the client
// would, against a stand-in for the flow job's decisions. One entry a new
// connection, retries folded into it, pods named, the ring bounded, entries
// read after a sequence number, counts in /metrics.
#include "flows/PolicyLogger.hpp"

#include <gtest/gtest.h>

#include "flows/PolicyStage.hpp"
#include "tests/unit/ovs/TestFrames.hpp"

using namespace kovs::flows;
using kovs::IpPrefix;
using kovs::ovs::openflow::PacketIn;
using kovs::test::ipFrame;

namespace {

struct Fixture {
    kovs::EventLoop loop;
    std::shared_ptr<const std::map<uint64_t, LoggedDecision>> decisions = std::make_shared<const std::map<uint64_t, LoggedDecision>>(
        std::map<uint64_t, LoggedDecision>{{kCookiePolicyRule + 1, {"NetworkPolicy", "x/web", "0", true, true}},
                                           {policyDropCookie(true, 5), {"NetworkPolicy", "x/web", "", true, false}}});
    PolicyLogging logging;
    PolicyLogger logger;
    explicit Fixture(size_t entries = 1000)
        : logger(loop, {[this] { return decisions; }, [this](const PolicyLogging& l) { logging = l; }},
                 {.socketPath = "/nonexistent/br-int.mgmt", .entries = entries},
                 [](const IpPrefix& a) { return a.addressString() == "10.244.1.5" ? std::string("x/a") : std::string(); }) {}
    void packet(uint64_t cookie, uint16_t sport, const std::string& src = "10.244.2.7") {
        PacketIn p;
        p.cookie = cookie;
        p.data = ipFrame(src, "10.244.1.5", IPPROTO_TCP, sport, 80);
        logger.onPacketIn(p);
    }
    nlohmann::json all() { return logger.entries(0, 1000)["entries"]; }
};

}  // namespace

TEST(PolicyLogger, OneEntryANewConnectionWithEveryField) {
    Fixture f;
    f.packet(policyDropCookie(true, 5), 40000);
    f.packet(kCookiePolicyRule + 1, 40001);
    auto e = f.all();
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[0]["verdict"], "deny");
    EXPECT_EQ(e[0]["direction"], "ingress");
    EXPECT_EQ(e[0]["tier"], "NetworkPolicy");
    EXPECT_EQ(e[0]["policy"], "x/web");
    EXPECT_EQ(e[0]["rule"], "");
    EXPECT_EQ(e[0]["protocol"], "TCP");
    EXPECT_EQ(e[0]["source"], "10.244.2.7:40000");
    EXPECT_EQ(e[0]["sourcePod"], "");
    EXPECT_EQ(e[0]["destination"], "10.244.1.5:80");
    EXPECT_EQ(e[0]["destinationPod"], "x/a");
    EXPECT_EQ(e[1]["verdict"], "allow");
    EXPECT_EQ(e[1]["rule"], "0");
    EXPECT_EQ(e[1]["seq"], 2);
    EXPECT_NE(e[0]["time"].get<std::string>().find('T'), std::string::npos);
}

TEST(PolicyLogger, RetriesAreFoldedAndUnknownCookiesCounted) {
    Fixture f;
    for (int i = 0; i < 3; ++i) f.packet(policyDropCookie(true, 5), 40000);  // a SYN sent again twice
    f.packet(kCookiePolicyRule + 99, 1);                                     // a flow of an older table
    PacketIn arp;
    arp.cookie = kCookiePolicyRule + 1;
    arp.data = std::string(60, '\0');
    f.logger.onPacketIn(arp);
    auto e = f.all();
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0]["packets"], 3);
    nlohmann::json s;
    f.logger.status(s);
    EXPECT_EQ(s["policyLog"]["folded"], 2);
    EXPECT_EQ(s["policyLog"]["unknownCookie"], 1);
    EXPECT_EQ(s["policyLog"]["unreadable"], 1);
    kovs::MetricsText m;
    f.logger.metrics(m);
    EXPECT_NE(m.str().find("kovs_policy_log_entries_total{policy=\"x/web\",tier=\"NetworkPolicy\",verdict=\"deny\"} 1"), std::string::npos)
        << m.str();
}

TEST(PolicyLogger, TheRingIsBoundedAndReadAfterASequenceNumber) {
    Fixture f(/*entries=*/5);
    for (uint16_t port = 1; port <= 12; ++port) f.packet(kCookiePolicyRule + 1, port);
    auto r = f.logger.entries(0, 1000);
    ASSERT_EQ(r["entries"].size(), 5u);
    EXPECT_EQ(r["first"], 8);
    EXPECT_EQ(r["last"], 12);
    auto after = f.logger.entries(10, 1);
    ASSERT_EQ(after["entries"].size(), 1u);
    EXPECT_EQ(after["entries"][0]["seq"], 11);
    EXPECT_EQ(after["last"], 11);
    EXPECT_EQ(f.logger.entries(12, 10)["entries"].size(), 0u);
    EXPECT_EQ(f.logger.entries(12, 10)["last"], 12);
    // A client that saw more than there is: the agent restarted, read from the start.
    EXPECT_EQ(f.logger.entries(500, 10)["entries"].size(), 5u);
}
