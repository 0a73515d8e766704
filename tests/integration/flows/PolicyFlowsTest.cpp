// NetworkPolicy and the admin tiers in real OVS flows, held to the evaluator: two dual-stack
// nodes' br-int tables (one vswitchd, a bridge per node), rendered by
// FlowTable with the policy stage from PolicyCompiler, and every probe of the
// upstream e2e suite's matrix (pods x/a .. z/c on two nodes, the node, an
// address outside; TCP 80/81, UDP 80, SCTP 81; IPv4 and IPv6) decided by OVS's own classifier
// (ofproto/trace, conntrack state "new") on the sender's node and, through
// the tunnel, on the receiver's. Every decision must be the evaluator's
// (policy/PolicyEvaluator), for the hand-written cases and generated ones.
//
// The tunnel port is an internal port here: a trace decides, it does not
// send, and one vswitchd takes one flow-based VXLAN port per UDP port.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "flows/FlowTable.hpp"
#include "flows/OpenFlowBridge.hpp"
#include "ovs/UnixctlClient.hpp"
#include "policy/PolicyEvaluator.hpp"
#include "tests/support/AdminPolicyCases.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/PolicyCluster.hpp"

using namespace kovs;
using kovs::test::NetpolPod;
using kovs::test::OvsSandbox;
using kovs::test::PolicyCase;
using policy::Protocol;

namespace {

constexpr const char* kOutside = "192.0.2.10";
constexpr const char* kOutside6 = "2001:db8::10";

struct Probe {
    Protocol protocol;
    int port;
    const char* proto;  // the ovs-ofctl protocol keyword
    const char* field;  // and its port fields' prefix
};
const Probe kProbes[] = {{Protocol::TCP, 80, "tcp", "tcp"}, {Protocol::TCP, 81, "tcp", "tcp"}, {Protocol::UDP, 80, "udp", "udp"},
                         {Protocol::SCTP, 81, "sctp", "sctp"}};

std::string gwMac(const std::string& node) { return node == "n1" ? "aa:bb:cc:00:00:01" : "aa:bb:cc:00:00:02"; }
int nodeIndex(const std::string& node) { return node == "n1" ? 1 : 2; }

// Whether a trace's actions include output to `ofport` (and not a longer number).
bool outputsTo(const std::string& trace, int ofport) {
    const auto needle = "output:" + std::to_string(ofport);
    for (auto at = trace.find(needle); at != std::string::npos; at = trace.find(needle, at + 1)) {
        auto end = at + needle.size();
        if (end == trace.size() || !std::isdigit(static_cast<unsigned char>(trace[end]))) return true;
    }
    return false;
}

class PolicyFlowsTest : public ::testing::Test {
protected:
    PolicyFlowsTest() : pods(test::netpolPods(true)) {
        for (const char* node : {"n1", "n2"}) {
            const auto br = bridge(node);
            std::vector<std::string> args{"add-br", br, "--", "set", "bridge", br, "datapath_type=netdev", "fail_mode=secure",
                                          "other_config:hwaddr=" + gwMac(node)};
            auto port = [&](const std::string& name, int ofport) {
                args.insert(args.end(), {"--", "add-port", br, name, "--", "set", "interface", name, "type=internal",
                                         "ofport_request=" + std::to_string(ofport)});
            };
            port(std::string("gw-") + node, 1);
            port(std::string("tun-") + node, 2);
            for (const auto& p : pods) {
                if (p.node == node) port(fmt::format("{}-{}-{}", node, p.ns, p.name), p.ofport);
            }
            ovs.vsctl(args);
        }
    }

    static std::string bridge(const std::string& node) { return "br-" + node; }

    // Both nodes' tables for `c`, with or without the policy stage, installed
    // as the flow job installs them: whole the first time, then as the
    // difference to the table before (flowModsBetween, one `ovs-ofctl
    // bundle`), so every case after the first also proves those mods.
    void install(const policy::PolicyCluster& c, bool withPolicy = true, const policy::AdminTiers& tiers = policy::noAdminTiers()) {
        for (const char* node : {"n1", "n2"}) {
            const int n = nodeIndex(node), other = 3 - n;
            flows::FlowInputs in;
            in.tunnelOfport = 2;
            in.gateway = {gwMac(node), 1};
            in.gatewayAddresses = {IpPrefix::parse(fmt::format("10.244.{}.1/24", n)), IpPrefix::parse(fmt::format("fd00:10:244:{}::1/64", n))};
            for (const auto& p : pods) {
                if (p.node == node)
                    in.pods.push_back({fmt::format("{}-{}-{}", node, p.ns, p.name), p.mac, {p.ip + "/24", p.ip6 + "/64"}, p.ofport});
            }
            const auto peerIP = IpPrefix::parse(test::netpolNodeIP(other == 1 ? "n1" : "n2"));
            in.peers = {{peerIP,
                         {IpPrefix::parse(fmt::format("10.244.{}.0/24", other)), IpPrefix::parse(fmt::format("fd00:10:244:{}::/64", other))},
                         {peerIP}}};
            in.serviceCIDRs = {IpPrefix::parse("10.96.0.0/16"), IpPrefix::parse("fd00:10:96::/112")};
            if (withPolicy) in.policy = policy::compilePolicy(c, node, tiers);
            in.adminSetBits = adminSetBits;
            auto rendered = flows::FlowTable::render(in);
            ASSERT_TRUE(rendered.skipped.empty()) << rendered.skipped.front();
            const auto file = ovs.dir() + "/flows-" + node;
            auto& before = installed[node];
            auto mods = flows::flowModsBetween(before, rendered.flows);
            std::ofstream(file) << (mods ? *mods : rendered.text());
            if (mods) ovs.ofctl({"bundle", bridge(node), file});
            else ovs.ofctl({"--bundle", "replace-flows", bridge(node), file});
            before = rendered.flows;
        }
    }
    std::map<std::string, std::vector<flows::Flow>> installed;  // node -> the table installed last
    int adminSetBits = flows::PolicyStageInputs::kAdminSetBits;

    std::vector<std::string> traces(const std::vector<std::pair<std::string, std::string>>& bridgeAndFlow) {
        std::vector<ovs::UnixctlCommand> commands;
        for (const auto& [br, flow] : bridgeAndFlow) commands.push_back({"ofproto/trace", {br, flow, "--ct-next", "trk,new"}});
        auto replies = unixctl.pipeline(commands);
        std::vector<std::string> out;
        for (auto& r : replies.replies) {
            EXPECT_TRUE(r.ok) << r.text;
            out.push_back(r.text);
        }
        out.resize(commands.size());
        return out;
    }

    struct Outcome {
        int probes = 0, allowed = 0;
        std::vector<std::string> wrong;  // "x/a -> y/b TCP/80: flows allow, evaluator denies"
    };

    // Every probe of one family through the installed tables, against the
    // evaluator on `c` and `tiers`.
    Outcome probeAll(const policy::PolicyCluster& c, int family = AF_INET, const policy::AdminTiers& tiers = policy::noAdminTiers()) {
        const bool v6 = family == AF_INET6;
        auto ipOf = [&](const NetpolPod& p) { return v6 ? p.ip6 : p.ip; };
        const std::string outside = v6 ? kOutside6 : kOutside;
        struct Pending {
            std::string what;
            bool expected;
            std::string dstNode;  // "" outside
            int dstOfport = 0;
            std::string srcNode;
            std::string tunnelFlow;  // the packet as it arrives at dstNode from the tunnel
        };
        std::vector<Pending> pending;
        std::vector<std::pair<std::string, std::string>> first;
        auto endpoint = [&](const NetpolPod& p) { return policy::Endpoint{p.ns + "/" + p.name, IpPrefix::parse(ipOf(p)), p.node}; };
        for (const auto& probe : kProbes) {
            auto packet = [&](const std::string& src, const std::string& dst) {
                return fmt::format("{}{},{}={},{}={},{}_src=33333,{}_dst={}", probe.proto, v6 ? "6" : "", v6 ? "ipv6_src" : "nw_src", src,
                                   v6 ? "ipv6_dst" : "nw_dst", dst, probe.field, probe.field, probe.port);
            };
            auto add = [&](const std::string& what, const policy::Endpoint& from, const policy::Endpoint& to, const std::string& srcNode,
                           const std::string& firstFlow, const std::string& dstNode, int dstOfport, const std::string& body) {
                bool expected = policy::decide(c, tiers, from, to, probe.protocol, probe.port).allowed;
                std::string tunnel;
                if (!dstNode.empty() && dstNode != srcNode)
                    tunnel = fmt::format("in_port=2,tun_src={},tun_dst={},dl_src={},{}", test::netpolNodeIP(srcNode),
                                         test::netpolNodeIP(dstNode), gwMac(srcNode), body);
                pending.push_back({fmt::format("{} {}/{}", what, policy::protocolName(probe.protocol), probe.port), expected, dstNode,
                                   dstOfport, srcNode, tunnel});
                first.emplace_back(bridge(srcNode), firstFlow);
            };
            for (const auto& s : pods) {
                auto fromPod = fmt::format("in_port={},dl_src={},dl_dst={},", s.ofport, s.mac, gwMac(s.node));
                for (const auto& d : pods) {
                    if (&s == &d) continue;
                    auto body = packet(ipOf(s), ipOf(d));
                    add(s.ns + "/" + s.name + " -> " + d.ns + "/" + d.name, endpoint(s), endpoint(d), s.node, fromPod + body, d.node,
                        d.ofport, body);
                }
                add(s.ns + "/" + s.name + " -> outside", endpoint(s), {std::nullopt, IpPrefix::parse(outside), ""}, s.node,
                    fromPod + packet(ipOf(s), outside), "", 1, "");
                if (v6) continue;
                for (const char* node : {"n1", "n2"}) {  // the nodes' own addresses, through gw0
                    const std::string ip = test::netpolNodeIP(node);
                    add(s.ns + "/" + s.name + " -> node " + node, endpoint(s), {std::nullopt, IpPrefix::parse(ip), node}, s.node,
                        fromPod + packet(ipOf(s), ip), "", 1, "");
                }
            }
            for (const auto& d : pods) {
                auto fromGw = fmt::format("in_port=1,dl_src={},", gwMac(d.node));
                add("outside -> " + d.ns + "/" + d.name, {std::nullopt, IpPrefix::parse(outside), ""}, endpoint(d), d.node,
                    fromGw + packet(outside, ipOf(d)), d.node, d.ofport, "");
                const auto nodeIP = v6 ? fmt::format("fd00:10:244:{}::1", nodeIndex(d.node)) : fmt::format("10.244.{}.1", nodeIndex(d.node));
                add("own node -> " + d.ns + "/" + d.name, {std::nullopt, IpPrefix::parse(nodeIP), d.node}, endpoint(d), d.node,
                    fromGw + packet(nodeIP, ipOf(d)), d.node, d.ofport, "");
            }
        }
        auto firstTraces = traces(first);
        std::vector<std::pair<std::string, std::string>> second;
        std::vector<size_t> secondOf;
        Outcome out;
        std::vector<int> actual(pending.size(), 0);
        for (size_t i = 0; i < pending.size(); ++i) {
            const auto& p = pending[i];
            if (p.dstNode.empty()) {
                actual[i] = outputsTo(firstTraces[i], 1);
            } else if (p.tunnelFlow.empty()) {
                actual[i] = outputsTo(firstTraces[i], p.dstOfport);
            } else if (outputsTo(firstTraces[i], 2)) {
                second.emplace_back(bridge(p.dstNode), p.tunnelFlow);
                secondOf.push_back(i);
            }
        }
        auto secondTraces = traces(second);
        for (size_t j = 0; j < secondOf.size(); ++j) actual[secondOf[j]] = outputsTo(secondTraces[j], pending[secondOf[j]].dstOfport);
        for (size_t i = 0; i < pending.size(); ++i) {
            ++out.probes;
            out.allowed += actual[i];
            if (static_cast<bool>(actual[i]) != pending[i].expected)
                out.wrong.push_back(fmt::format("{}{}: flows {}, evaluator {}", pending[i].what, v6 ? " (IPv6)" : "", actual[i] ? "allow" : "deny",
                                                pending[i].expected ? "allows" : "denies"));
        }
        return out;
    }

    void check(const PolicyCase& pc) { check(pc.name, pc.policies, {}); }
    void check(const std::string& name, const std::vector<nlohmann::json>& policies, const std::vector<nlohmann::json>& admin) {
        SCOPED_TRACE(name);
        auto c = test::netpolCluster(policies, true);
        const auto tiers = test::adminTiers(admin);
        install(c, true, tiers);
        auto o = probeAll(c, AF_INET, tiers);
        auto o6 = probeAll(c, AF_INET6, tiers);
        o.probes += o6.probes;
        o.allowed += o6.allowed;
        o.wrong.insert(o.wrong.end(), o6.wrong.begin(), o6.wrong.end());
        std::string first;
        for (size_t i = 0; i < o.wrong.size() && i < 12; ++i) first += "\n  " + o.wrong[i];
        EXPECT_TRUE(o.wrong.empty()) << o.wrong.size() << " of " << o.probes << " probes differ:" << first
                                     << "\npolicies: " << nlohmann::json(policies).dump() << "\nadmin: " << nlohmann::json(admin).dump();
        totalProbes += o.probes;
        totalAllowed += o.allowed;
    }

    OvsSandbox ovs;
    std::vector<NetpolPod> pods;
    ovs::BlockingUnixctlClient unixctl{ovs.dir(), "ovs-vswitchd", std::chrono::seconds(30)};
    int totalProbes = 0, totalAllowed = 0;
};

}  // namespace

TEST_F(PolicyFlowsTest, TheUpstreamSuitesCasesDecideAsTheEvaluator) {
    for (const auto& pc : test::netpolCases()) check(pc);
    // Both answers occur, so neither "allow all" nor "deny all" passes this.
    EXPECT_GT(totalAllowed, totalProbes / 4) << totalAllowed << " of " << totalProbes;
    EXPECT_LT(totalAllowed, totalProbes * 9 / 10) << totalAllowed << " of " << totalProbes;
    std::printf("hand-written cases: %d probes, %d allowed\n", totalProbes, totalAllowed);
}

// KOVS_POLICY_SEED and KOVS_POLICY_CASES run other and more cases (the
// failure names the case and prints its policies).
TEST_F(PolicyFlowsTest, GeneratedCasesDecideAsTheEvaluator) {
    const char* seed = std::getenv("KOVS_POLICY_SEED");
    const char* count = std::getenv("KOVS_POLICY_CASES");
    for (const auto& pc : test::randomPolicyCases(seed ? std::stoul(seed) : 20261203u, count ? std::stoi(count) : 24)) check(pc);
    std::printf("generated cases: %d probes, %d allowed\n", totalProbes, totalAllowed);
}

// AdminNetworkPolicy and BaselineAdminNetworkPolicy, in cases shaped like
// the policy-api conformance suite's, over the same probes (and the nodes'
// own addresses, for egress `nodes` peers): OVS decides as the evaluator.
TEST_F(PolicyFlowsTest, AdminTiersDecideAsTheEvaluator) {
    for (const auto& ac : test::adminCases()) {
        // Each case matters: with its tables rendered without the admin
        // tiers, some probe decides other than the evaluator says.
        auto c = test::netpolCluster(ac.policies, true);
        const auto tiers = test::adminTiers(ac.admin);
        install(c, true);
        EXPECT_FALSE(probeAll(c, AF_INET, tiers).wrong.empty()) << ac.name << ": the admin tiers change no probe";
        check(ac.name, ac.policies, ac.admin);
    }
    EXPECT_GT(totalAllowed, totalProbes / 2) << totalAllowed << " of " << totalProbes;
    EXPECT_LT(totalAllowed, totalProbes * 19 / 20) << totalAllowed << " of " << totalProbes;
    std::printf("admin tier cases: %d probes, %d allowed\n", totalProbes, totalAllowed);
}

// Where the registers run out of bits, the admin address sets past them
// are matched by their addresses: one bit a side here, so every case mixes
// sets matched both ways, and decides as the evaluator all the same.
TEST_F(PolicyFlowsTest, AdminSetsPastTheRegistersDecideAsTheEvaluator) {
    adminSetBits = 1;
    for (const auto& ac : test::adminCases()) check(ac.name, ac.policies, ac.admin);
    std::printf("admin tier cases, one set bit a side: %d probes, %d allowed\n", totalProbes, totalAllowed);
}

// The test can fail: without the stage, a deny-all policy is not enforced
// (what kovs did before NetworkPolicy), and the probes say so.
TEST_F(PolicyFlowsTest, WithoutThePolicyStageTheProbesDisagree) {
    auto c = test::netpolCluster(test::netpolCases().front().policies, true);
    install(c, false);
    auto o = probeAll(c);
    EXPECT_EQ(o.allowed, o.probes) << "no policy stage: everything passes";
    EXPECT_GT(o.wrong.size(), 50u);
}

// Replies of an allowed connection pass both ways, whatever the policies
// say about the other direction: only a new connection is judged.
TEST_F(PolicyFlowsTest, RepliesOfAnAllowedConnectionPass) {
    auto c = test::netpolCluster({test::policyObject("x", "deny-all", {{"podSelector", nlohmann::json::object()},
                                                                       {"policyTypes", {"Ingress", "Egress"}}})},
                                 true);
    install(c);
    const auto& xa = pods[0];  // x/a on n1, ofport 10
    const auto& yc = pods[5];  // y/c on n2
    ASSERT_EQ(xa.node, "n1");
    ASSERT_EQ(yc.node, "n2");
    auto body = fmt::format("tcp,nw_src={},nw_dst={},tp_src=80,tp_dst=33333", xa.ip, yc.ip);
    auto fromPod = fmt::format("in_port={},dl_src={},{}", xa.ofport, xa.mac, body);
    std::vector<ovs::UnixctlCommand> cmds{{"ofproto/trace", {"br-n1", fromPod, "--ct-next", "trk,new"}},
                                          {"ofproto/trace", {"br-n1", fromPod, "--ct-next", "trk,est,rpl"}}};
    auto replies = unixctl.pipeline(cmds);
    ASSERT_EQ(replies.replies.size(), 2u);
    EXPECT_FALSE(outputsTo(replies.replies[0].text, 2)) << "a new connection out of x/a is denied:\n" << replies.replies[0].text;
    EXPECT_TRUE(outputsTo(replies.replies[1].text, 2)) << "a reply is not:\n" << replies.replies[1].text;

    // A known peer's tunnel with a forged inner source: dropped, and not
    // committed (its "replies" would pass egress policy unjudged).
    auto forged = fmt::format("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,tcp,nw_src=192.0.2.66,nw_dst={},tcp_src=1,tcp_dst=80",
                              pods[8].ip);  // z/c, n1, selected by no policy
    auto bound = fmt::format("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,tcp,nw_src={},nw_dst={},tcp_src=1,tcp_dst=80", pods[3].ip,
                             pods[8].ip);  // y/a (n2) -> z/c (n1), no policy on z
    auto r = unixctl.pipeline({{"ofproto/trace", {"br-n1", forged, "--ct-next", "trk,new"}},
                               {"ofproto/trace", {"br-n1", bound, "--ct-next", "trk,new"}}});
    ASSERT_EQ(r.replies.size(), 2u);
    EXPECT_EQ(r.replies[0].text.find("commit"), std::string::npos) << r.replies[0].text;
    EXPECT_FALSE(outputsTo(r.replies[0].text, pods[8].ofport)) << r.replies[0].text;
    EXPECT_NE(r.replies[1].text.find("ct(commit"), std::string::npos) << r.replies[1].text;
    EXPECT_TRUE(outputsTo(r.replies[1].text, pods[8].ofport)) << r.replies[1].text;
}

// kube-proxy translates a ClusterIP in the client node's kernel: the packet to
// the ClusterIP passes the egress stage untouched (out to gw0) and comes back
// from gw0 with the pod's source and the backend's address, where the policy
// judges it. NodePort traffic comes from gw0 too, with a node's address
// (externalTrafficPolicy Cluster: SNAT) or the client's (Local).
TEST_F(PolicyFlowsTest, ServicesAreJudgedAfterTheKernelsTranslation) {
    using nlohmann::json;
    auto c = test::netpolCluster(
        {test::policyObject("z", "to-y-b", json::parse(R"({"podSelector": {}, "policyTypes": ["Egress"],
             "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}, "podSelector": {"matchLabels": {"pod": "b"}}}],
                         "ports": [{"protocol": "TCP", "port": 80}]}]})")),
         test::policyObject("x", "from-nodes", json::parse(R"({"podSelector": {},
             "ingress": [{"from": [{"ipBlock": {"cidr": "172.18.0.0/16"}}]}]})"))},
        true);
    install(c);
    const auto &xa = pods[0], &xb = pods[1], &yb = pods[4], &za = pods[6];
    ASSERT_TRUE(xa.node == "n1" && xb.node == "n2" && yb.node == "n1" && za.node == "n1");
    auto tcp = [](const std::string& src, const std::string& dst, int port) {
        return fmt::format("tcp,nw_src={},nw_dst={},tcp_src=40000,tcp_dst={}", src, dst, port);
    };
    struct Case {
        std::string what, flow;
        int ofport;  // where an allowed packet leaves br-n1
        policy::Endpoint from, to;
        int port;
    };
    auto ep = [](const NetpolPod& p) { return policy::Endpoint{p.ns + "/" + p.name, IpPrefix::parse(p.ip), p.node}; };
    auto addr = [](const char* ip, const char* node) { return policy::Endpoint{std::nullopt, IpPrefix::parse(ip), node}; };
    const std::string fromZa = fmt::format("in_port={},dl_src={},", za.ofport, za.mac), fromGw = "in_port=1,";
    std::vector<Case> cases{
        {"z/a -> ClusterIP, before the kernel's DNAT", fromZa + tcp(za.ip, "10.96.0.10", 80), 1, ep(za), addr("10.96.0.10", ""), 80},
        {"z/a -> ClusterIP -> y/b:80", fromGw + tcp(za.ip, yb.ip, 80), yb.ofport, ep(za), ep(yb), 80},
        {"z/a -> ClusterIP -> y/b:81", fromGw + tcp(za.ip, yb.ip, 81), yb.ofport, ep(za), ep(yb), 81},
        {"z/a -> ClusterIP -> x/b:80", fromGw + tcp(za.ip, xb.ip, 80), 2, ep(za), ep(xb), 80},
        {"NodePort (Cluster) from node 2 -> x/a", fromGw + tcp("172.18.0.3", xa.ip, 80), xa.ofport, addr("172.18.0.3", "n2"), ep(xa), 80},
        {"NodePort (Local) from outside -> x/a", fromGw + tcp(kOutside, xa.ip, 80), xa.ofport, addr(kOutside, ""), ep(xa), 80},
    };
    std::vector<std::pair<std::string, std::string>> flows;
    for (const auto& k : cases) flows.emplace_back("br-n1", k.flow);
    auto results = traces(flows);
    const bool expected[] = {true, true, false, false, true, false};
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& k = cases[i];
        EXPECT_EQ(outputsTo(results[i], k.ofport), expected[i]) << k.what << ":\n" << results[i];
        if (i > 0) {
            EXPECT_EQ(policy::allowed(c, k.from, k.to, Protocol::TCP, k.port), expected[i]) << k.what << ": the evaluator";
        }
    }
}
