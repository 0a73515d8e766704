// NetworkPolicy in real OVS flows, held to the evaluator: two nodes' br-int
// tables (one vswitchd, a bridge per node), rendered by FlowTable with the
// policy stage from PolicyCompiler, and every probe of the upstream e2e
// suite's matrix (pods x/a .. z/c on two nodes, the node, an address outside;
// TCP 80/81, UDP 80, SCTP 81) decided by OVS's own classifier
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

#include "flows/FlowTable.hpp"
#include "ovs/UnixctlClient.hpp"
#include "policy/PolicyEvaluator.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/PolicyCluster.hpp"

using namespace kovs;
using kovs::test::NetpolPod;
using kovs::test::OvsSandbox;
using kovs::test::PolicyCase;
using policy::Protocol;

namespace {

constexpr const char* kOutside = "192.0.2.10";

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
    PolicyFlowsTest() : pods(test::netpolPods()) {
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

    // Both nodes' tables for `c`, with or without the policy stage.
    void install(const policy::PolicyCluster& c, bool withPolicy = true) {
        for (const char* node : {"n1", "n2"}) {
            const int n = nodeIndex(node), other = 3 - n;
            flows::FlowInputs in;
            in.tunnelOfport = 2;
            in.gateway = {gwMac(node), 1};
            in.gatewayAddresses = {IpPrefix::parse(fmt::format("10.244.{}.1/24", n))};
            for (const auto& p : pods) {
                if (p.node == node) in.pods.push_back({fmt::format("{}-{}-{}", node, p.ns, p.name), p.mac, {p.ip + "/24"}, p.ofport});
            }
            const auto peerIP = IpPrefix::parse(test::netpolNodeIP(other == 1 ? "n1" : "n2"));
            in.peers = {{peerIP, {IpPrefix::parse(fmt::format("10.244.{}.0/24", other))}, {peerIP}}};
            in.serviceCIDRs = {IpPrefix::parse("10.96.0.0/16")};
            if (withPolicy) in.policy = policy::compilePolicy(c, node);
            auto rendered = flows::FlowTable::render(in);
            ASSERT_TRUE(rendered.skipped.empty()) << rendered.skipped.front();
            const auto file = ovs.dir() + "/flows-" + node;
            std::ofstream(file) << rendered.flows;
            ovs.ofctl({"--bundle", "replace-flows", bridge(node), file});
        }
    }

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

    // Every probe through the installed tables, against the evaluator on `c`.
    Outcome probeAll(const policy::PolicyCluster& c) {
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
        auto endpoint = [&](const NetpolPod& p) { return policy::Endpoint{p.ns + "/" + p.name, IpPrefix::parse(p.ip), p.node}; };
        for (const auto& probe : kProbes) {
            auto packet = [&](const std::string& src, const std::string& dst) {
                return fmt::format("{},nw_src={},nw_dst={},{}_src=33333,{}_dst={}", probe.proto, src, dst, probe.field, probe.field, probe.port);
            };
            auto add = [&](const std::string& what, const policy::Endpoint& from, const policy::Endpoint& to, const std::string& srcNode,
                           const std::string& firstFlow, const std::string& dstNode, int dstOfport, const std::string& body) {
                bool expected = policy::allowed(c, from, to, probe.protocol, probe.port);
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
                    auto body = packet(s.ip, d.ip);
                    add(s.ns + "/" + s.name + " -> " + d.ns + "/" + d.name, endpoint(s), endpoint(d), s.node, fromPod + body, d.node,
                        d.ofport, body);
                }
                add(s.ns + "/" + s.name + " -> outside", endpoint(s), {std::nullopt, IpPrefix::parse(kOutside), ""}, s.node,
                    fromPod + packet(s.ip, kOutside), "", 1, "");
            }
            for (const auto& d : pods) {
                auto fromGw = fmt::format("in_port=1,dl_src={},", gwMac(d.node));
                add("outside -> " + d.ns + "/" + d.name, {std::nullopt, IpPrefix::parse(kOutside), ""}, endpoint(d), d.node,
                    fromGw + packet(kOutside, d.ip), d.node, d.ofport, "");
                const auto nodeIP = fmt::format("10.244.{}.1", nodeIndex(d.node));
                add("own node -> " + d.ns + "/" + d.name, {std::nullopt, IpPrefix::parse(nodeIP), d.node}, endpoint(d), d.node,
                    fromGw + packet(nodeIP, d.ip), d.node, d.ofport, "");
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
                out.wrong.push_back(fmt::format("{}: flows {}, evaluator {}", pending[i].what, actual[i] ? "allow" : "deny",
                                                pending[i].expected ? "allows" : "denies"));
        }
        return out;
    }

    void check(const PolicyCase& pc) {
        SCOPED_TRACE(pc.name);
        auto c = test::netpolCluster(pc.policies);
        install(c);
        auto o = probeAll(c);
        std::string first;
        for (size_t i = 0; i < o.wrong.size() && i < 12; ++i) first += "\n  " + o.wrong[i];
        EXPECT_TRUE(o.wrong.empty()) << o.wrong.size() << " of " << o.probes << " probes differ:" << first
                                     << "\npolicies: " << nlohmann::json(pc.policies).dump();
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

// The test can fail: without the stage, a deny-all policy is not enforced
// (what kovs did before NetworkPolicy), and the probes say so.
TEST_F(PolicyFlowsTest, WithoutThePolicyStageTheProbesDisagree) {
    auto c = test::netpolCluster(test::netpolCases().front().policies);
    install(c, false);
    auto o = probeAll(c);
    EXPECT_EQ(o.allowed, o.probes) << "no policy stage: everything passes";
    EXPECT_GT(o.wrong.size(), 50u);
}

// Replies of an allowed connection pass both ways, whatever the policies
// say about the other direction: only a new connection is judged.
TEST_F(PolicyFlowsTest, RepliesOfAnAllowedConnectionPass) {
    auto c = test::netpolCluster({test::policyObject("x", "deny-all", {{"podSelector", nlohmann::json::object()},
                                                                       {"policyTypes", {"Ingress", "Egress"}}})});
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
}
