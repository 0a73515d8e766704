// The egress masquerade in a real kernel (this test's private network
// namespace): the rules land in `table ip kovs` (and `table ip6 kovs` for IPv6
// pods) as planned, `nft` (the
// independent witness) reads them back, a flushed ruleset is restored by the
// agent's job within moments, and someone who keeps deleting the table is
// not fought.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "base/RepairLog.hpp"
#include "egress/EgressReconciler.hpp"
#include "egress/NftablesNat.hpp"

using namespace kovs;
using namespace kovs::egress;
using namespace std::chrono_literals;

namespace {

std::string nft(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"nft"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runChecked(argv);
}

// The rules of the chain as nft prints them, e.g. "ip daddr 10.244.0.0/16 return";
// `family` "ip6" for table ip6 kovs.
std::vector<std::string> rules(const std::string& family = "ip") {
    auto j = nlohmann::json::parse(runProcess({"nft", "-j", "list", "chain", family, "kovs", "postrouting"}).out, nullptr, false);
    std::vector<std::string> out;
    if (j.is_discarded()) return out;
    for (const auto& item : j["nftables"]) {
        if (!item.contains("rule")) continue;
        std::string text;
        for (const auto& e : item["rule"]["expr"]) {
            if (e.contains("match")) {
                const auto& m = e["match"];
                auto field = m["left"]["payload"]["field"].get<std::string>();
                auto right = m["right"];
                std::string value = right.is_string() ? right.get<std::string>()
                                                      : right["prefix"]["addr"].get<std::string>() + "/" +
                                                            std::to_string(right["prefix"]["len"].get<int>());
                text += m["left"]["payload"]["protocol"].get<std::string>() + " " + field + " " + value + " ";
            }
            if (e.contains("return")) text += "return";
            if (e.contains("masquerade")) text += "masquerade";
        }
        out.push_back(text);
    }
    return out;
}

// A kind cluster of two nodes, dual-stack: the rules of one family.
EgressRules kindRules(int family = AF_INET) {
    EgressInputs in;
    in.podCidrs = {IpPrefix::parse("10.244.1.0/24"), IpPrefix::parse("fd00:10:244:1::/64"), IpPrefix::parse("10.244.2.0/24"),
                   IpPrefix::parse("fd00:10:244:2::/64")};
    in.nodeAddresses = {IpPrefix::parse("172.18.0.2/16"), IpPrefix::parse("fc00:f853:ccd:e793::2/64"), IpPrefix::parse("172.18.0.3"),
                        IpPrefix::parse("fc00:f853:ccd:e793::3")};
    return planEgress(in, family);
}

}  // namespace

TEST(NftablesNat, InstallsReadsBackReplacesAndRemoves) {
    NftablesNat nat;
    EXPECT_EQ(nat.readBack(), "") << "no table yet";
    nat.replace(kindRules());
    EXPECT_EQ(rules(), (std::vector<std::string>{"ip daddr 10.244.1.0/24 return", "ip daddr 10.244.2.0/24 return",
                                                 "ip daddr 172.18.0.2 return", "ip daddr 172.18.0.3 return",
                                                 "ip saddr 10.244.1.0/24 masquerade", "ip saddr 10.244.2.0/24 masquerade"}));
    auto chain = nft({"list", "chain", "ip", "kovs", "postrouting"});
    EXPECT_NE(chain.find("type nat hook postrouting priority srcnat; policy accept;"), std::string::npos) << chain;
    auto first = nat.readBack();
    EXPECT_NE(first, "");

    // Replacing is one transaction and leaves exactly the new rules.
    EgressRules one;
    one.keep = {IpPrefix::parse("10.244.0.0/16")};
    one.masquerade = {IpPrefix::parse("10.244.0.0/16")};
    nat.replace(one);
    EXPECT_EQ(rules(), (std::vector<std::string>{"ip daddr 10.244.0.0/16 return", "ip saddr 10.244.0.0/16 masquerade"}));
    EXPECT_NE(nat.readBack(), first);

    nat.remove();
    EXPECT_EQ(nat.readBack(), "");
    EXPECT_NO_THROW(nat.remove()) << "removing what is gone is fine";
}

// IPv6 pods get a table of their own, table ip6 kovs, with the same shape;
// each family's table is installed and removed without touching the other.
TEST(NftablesNat, IPv6PodsInATableOfTheirOwn) {
    NftablesNat v4(AF_INET), v6(AF_INET6);
    EXPECT_EQ(v6.table(), "ip6 kovs");
    v4.replace(kindRules(AF_INET));
    v6.replace(kindRules(AF_INET6));
    EXPECT_EQ(rules("ip6"), (std::vector<std::string>{"ip6 daddr fc00:f853:ccd:e793::2 return", "ip6 daddr fc00:f853:ccd:e793::3 return",
                                                      "ip6 daddr fd00:10:244:1::/64 return", "ip6 daddr fd00:10:244:2::/64 return",
                                                      "ip6 saddr fd00:10:244:1::/64 masquerade",
                                                      "ip6 saddr fd00:10:244:2::/64 masquerade"}));
    auto chain = nft({"list", "chain", "ip6", "kovs", "postrouting"});
    EXPECT_NE(chain.find("type nat hook postrouting priority srcnat; policy accept;"), std::string::npos) << chain;
    EXPECT_EQ(rules().size(), 6u) << "the IPv4 table lost rules";
    v6.remove();
    EXPECT_EQ(v6.readBack(), "");
    EXPECT_EQ(rules().size(), 6u) << "removing table ip6 kovs touched table ip kovs";
    v4.remove();
}

TEST(NftablesNat, OtherTablesAreNotTouched) {
    nft({"add", "table", "ip", "kube-proxy"});
    nft({"add", "chain", "ip", "kube-proxy", "nat-postrouting", "{ type nat hook postrouting priority srcnat; }"});
    nft({"add", "rule", "ip", "kube-proxy", "nat-postrouting", "mark", "0x4000", "masquerade"});
    NftablesNat nat;
    nat.replace(kindRules());
    nat.remove();
    auto theirs = nft({"list", "table", "ip", "kube-proxy"});
    EXPECT_NE(theirs.find("meta mark 0x00004000 masquerade"), std::string::npos) << theirs;
    nft({"delete", "table", "ip", "kube-proxy"});
}

TEST(EgressReconciler, RestoresAFlushedRulesetAndBacksOffFromAFight) {
    EventLoop loop;
    RepairLog repairs;
    EgressOptions o;
    o.localPodCidrs = {IpPrefix::parse("10.244.1.0/24")};
    o.resync = 1h;  // the nftables notifications must do it
    EgressReconciler job(loop, repairs, o);
    job.setPeers({IpPrefix::parse("10.244.2.0/24")}, {IpPrefix::parse("172.18.0.3")});
    job.start();
    auto status = [&] {
        nlohmann::json s;
        job.status(s);
        return s["egress"];
    };
    ASSERT_EQ(rules().size(), 5u) << status().dump();

    // `nft flush ruleset`: the job hears of it and restores the table.
    nft({"flush", "ruleset"});
    ASSERT_TRUE(loop.runUntil([&] { return rules().size() == 5; }, 5s)) << status().dump();
    EXPECT_EQ(status()["readBackRepairs"], 1);
    EXPECT_EQ(repairs.count("egress"), 1u);

    // Someone who keeps deleting it: the first repairs (the burst of 5, the
    // flush above was one) come at once...
    for (int i = 0; i < 4; ++i) {
        nft({"delete", "table", "ip", "kovs"});
        ASSERT_TRUE(loop.runUntil([&] { return !rules().empty(); }, 3s)) << i << " " << status().dump();
    }
    EXPECT_FALSE(status()["contested"].get<bool>()) << status().dump();
    // ...then each one waits, longer each time, and the status says why.
    auto heldBack = [&] {
        nft({"delete", "table", "ip", "kovs"});
        auto t0 = std::chrono::steady_clock::now();
        EXPECT_FALSE(loop.runUntil([&] { return !rules().empty(); }, 500ms)) << "repaired at once: " << status().dump();
        EXPECT_TRUE(status()["contested"].get<bool>()) << status().dump();
        EXPECT_TRUE(loop.runUntil([&] { return rules().size() == 5; }, 10s)) << "the held-back repair never came: " << status().dump();
        return std::chrono::steady_clock::now() - t0;
    };
    auto first = heldBack();
    auto second = heldBack();
    EXPECT_GT(second, first) << "the wait does not grow";
    EXPECT_EQ(status()["readBackRepairs"], 7);
    NftablesNat().remove();
}

// A dual-stack node: both tables, each restored when deleted, and the status
// names both families' rules.
TEST(EgressReconciler, ADualStackNodeKeepsBothTables) {
    EventLoop loop;
    RepairLog repairs;
    EgressOptions o;
    o.localPodCidrs = {IpPrefix::parse("10.244.1.0/24"), IpPrefix::parse("fd00:10:244:1::/64")};
    o.resync = 1h;
    EgressReconciler job(loop, repairs, o);
    job.setPeers({IpPrefix::parse("10.244.2.0/24"), IpPrefix::parse("fd00:10:244:2::/64")},
                 {IpPrefix::parse("172.18.0.3"), IpPrefix::parse("fc00:f853:ccd:e793::3")});
    job.start();
    nlohmann::json s;
    job.status(s);
    EXPECT_EQ(s["egress"]["rules"], "keep 10.244.1.0/24, 10.244.2.0/24, 172.18.0.3/32; masquerade from 10.244.1.0/24, 10.244.2.0/24; "
                                    "ip6: keep fc00:f853:ccd:e793::3/128, fd00:10:244:1::/64, fd00:10:244:2::/64; "
                                    "masquerade from fd00:10:244:1::/64, fd00:10:244:2::/64");
    ASSERT_EQ(rules("ip6").size(), 5u);
    nft({"delete", "table", "ip6", "kovs"});
    ASSERT_TRUE(loop.runUntil([&] { return rules("ip6").size() == 5; }, 5s)) << "table ip6 kovs was not restored";
    EXPECT_EQ(rules().size(), 5u);
    NftablesNat(AF_INET).remove();
    NftablesNat(AF_INET6).remove();
}

// A batch the kernel refuses changes nothing (one transaction) and the error
// names the message it refused.
TEST(NftablesNat, ARefusedBatchChangesNothingAndSaysWhy) {
    nft({"add", "table", "ip", "kovs"});
    nft({"add", "chain", "ip", "kovs", "postrouting", "{ type filter hook postrouting priority 0; }"});
    nft({"add", "rule", "ip", "kovs", "postrouting", "counter"});
    try {
        NftablesNat().replace(kindRules());
        FAIL() << "a nat chain over a filter chain was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("nftables: add chain ip kovs postrouting: "), std::string::npos) << e.what();
    }
    auto chain = nft({"list", "chain", "ip", "kovs", "postrouting"});
    EXPECT_NE(chain.find("type filter hook postrouting"), std::string::npos) << chain;
    EXPECT_NE(chain.find("counter"), std::string::npos) << "the flush of the refused batch happened anyway:\n" << chain;
    EXPECT_EQ(chain.find("masquerade"), std::string::npos) << chain;
    NftablesNat().remove();
}

// A big cluster's rules fit one batch (an ack per message overflowed the socket: ENOBUFS).
TEST(NftablesNat, AThousandNodesFitOneBatch) {
    EgressRules big;
    for (int i = 0; i < 1000; ++i)
        big.keep.push_back(IpPrefix::parse("172.18." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1)));
    big.masquerade = {IpPrefix::parse("10.244.0.0/16")};
    NftablesNat nat;
    nat.replace(big);
    EXPECT_EQ(rules().size(), 1001u);
    nat.remove();
}
