// NetworkPolicy, Pod and Namespace objects decoded: defaults, named ports,
// and what cannot be expressed allowing less, never more.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "policy/PolicyModel.hpp"
#include "tests/support/PolicyCluster.hpp"

using namespace kovs::policy;
using kovs::Error;
using kovs::IpPrefix;
using nlohmann::json;

TEST(PolicyModel, PolicyTypesDefaultToIngressAndToEgressWhenItHasEgressRules) {
    auto in = decodeNetworkPolicy(kovs::test::policyObject("x", "p", {{"podSelector", json::object()}}));
    EXPECT_TRUE(in.ingress);
    EXPECT_FALSE(in.egress);
    EXPECT_TRUE(in.ingressRules.empty()) << "no rules: deny all";
    auto both = decodeNetworkPolicy(kovs::test::policyObject("x", "p", {{"podSelector", json::object()}, {"egress", {json::object()}}}));
    EXPECT_TRUE(both.ingress);
    EXPECT_TRUE(both.egress);
    ASSERT_EQ(both.egressRules.size(), 1u);
    EXPECT_TRUE(both.egressRules[0].anyPeer);
    EXPECT_TRUE(both.egressRules[0].anyPort);
    auto eg = decodeNetworkPolicy(kovs::test::policyObject("x", "p", {{"podSelector", json::object()}, {"policyTypes", {"Egress"}}}));
    EXPECT_FALSE(eg.ingress);
    EXPECT_TRUE(eg.egress);
}

TEST(PolicyModel, PeersAndPorts) {
    auto np = decodeNetworkPolicy(kovs::test::policyObject(
        "x", "p",
        json::parse(R"({"podSelector": {"matchLabels": {"pod": "a"}},
          "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "b"}}},
                                {"ipBlock": {"cidr": "10.0.0.7/8", "except": ["10.1.0.0/16"]}}],
                       "ports": [{"port": 80}, {"protocol": "UDP", "port": "dns"}, {"protocol": "SCTP", "port": 100, "endPort": 200},
                                 {"protocol": "TCP"}]}]})")));
    ASSERT_EQ(np.ingressRules.size(), 1u);
    const auto& r = np.ingressRules[0];
    ASSERT_EQ(r.peers.size(), 2u);
    EXPECT_TRUE(r.peers[0].namespaces && r.peers[0].pods);
    EXPECT_EQ(r.peers[1].ipBlock->cidr.str(), "10.0.0.0/8") << "host bits cleared";
    EXPECT_EQ(r.peers[1].ipBlock->except.at(0).str(), "10.1.0.0/16");
    ASSERT_EQ(r.ports.size(), 4u);
    EXPECT_EQ(r.ports[0], (PolicyPort{Protocol::TCP, 80, 0, ""}));
    EXPECT_EQ(r.ports[1], (PolicyPort{Protocol::UDP, 0, 0, "dns"}));
    EXPECT_EQ(r.ports[2], (PolicyPort{Protocol::SCTP, 100, 200, ""}));
    EXPECT_EQ(r.ports[3], (PolicyPort{Protocol::TCP, 0, 0, ""}));
    EXPECT_TRUE(np.warnings.empty());
}

TEST(PolicyModel, WhatCannotBeExpressedAllowsNothingAndIsNamed) {
    // A future peer type beside a known one: only the known one allows.
    auto np = decodeNetworkPolicy(kovs::test::policyObject(
        "x", "p", json::parse(R"({"podSelector": {}, "ingress": [
            {"from": [{"serviceAccount": {"name": "x"}}, {"podSelector": {}}]},
            {"from": [{"serviceAccount": {"name": "x"}}]},
            {"ports": [{"protocol": "ICMP", "port": 1}]},
            {"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]},
            {"ports": [{"port": 0}]}]})")));
    ASSERT_EQ(np.ingressRules.size(), 1u) << "a rule left with no peer or port must not become 'all'";
    EXPECT_EQ(np.ingressRules[0].peers.size(), 1u);
    ASSERT_EQ(np.warnings.size(), 5u);
    EXPECT_NE(np.warnings[0].find("serviceAccount"), std::string::npos) << np.warnings[0];
    EXPECT_NE(np.warnings[2].find("ICMP"), std::string::npos) << np.warnings[2];
    EXPECT_NE(np.warnings[3].find("not inside"), std::string::npos) << np.warnings[3];

    // A pod selector it cannot read: every pod of the namespace isolated both ways.
    auto bad = decodeNetworkPolicy(kovs::test::policyObject(
        "x", "p", json::parse(R"({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
                                   "ingress": [{}], "policyTypes": ["Ingress"]})")));
    EXPECT_TRUE(bad.ingress && bad.egress);
    EXPECT_TRUE(bad.ingressRules.empty() && bad.egressRules.empty());
    EXPECT_TRUE(bad.podSelector.requirements.empty());
    ASSERT_EQ(bad.warnings.size(), 1u);
    EXPECT_NE(bad.warnings[0].find("isolates every pod"), std::string::npos) << bad.warnings[0];

    EXPECT_THROW(decodeNetworkPolicy(json::parse(R"({"metadata": {"name": "p"}})")), Error) << "no namespace";
}

TEST(PolicyModel, PodsAndNamespaces) {
    const auto objects = kovs::test::netpolPods();
    auto pod = decodePod(kovs::test::podObject(objects[0]));
    ASSERT_TRUE(pod);
    EXPECT_EQ(pod->key(), "x/a");
    EXPECT_EQ(pod->nodeName, "n1");
    EXPECT_EQ(pod->labels, (Labels{{"pod", "a"}}));
    EXPECT_EQ(pod->ips, std::vector<IpPrefix>{IpPrefix::parse("10.244.1.10")});
    EXPECT_EQ(pod->ports.size(), 6u);
    EXPECT_EQ(pod->ports[2], (ContainerPort{"serve-80-udp", Protocol::UDP, 80}));

    auto o = kovs::test::podObject(objects[0]);
    o["status"]["podIPs"].push_back({{"ip", "fd00:10:244:1::a"}});
    EXPECT_EQ(decodePod(o)->ips.size(), 2u);
    o["status"]["phase"] = "Succeeded";
    EXPECT_TRUE(decodePod(o)->ips.empty()) << "an ended pod's address may be another's now";
    o["spec"].erase("nodeName");
    EXPECT_FALSE(decodePod(o)) << "not scheduled yet";
    o = kovs::test::podObject(objects[0]);
    o["spec"]["hostNetwork"] = true;
    EXPECT_TRUE(decodePod(o)->hostNetwork);
    o["status"]["podIPs"] = {{{"ip", "10.244.1.300"}}};
    EXPECT_THROW(decodePod(o), Error);
    o = kovs::test::podObject(objects[0]);
    o["metadata"]["labels"]["n"] = 1;
    EXPECT_THROW(decodePod(o), Error);

    auto ns = decodeNamespace(kovs::test::namespaceObject("y"));
    EXPECT_EQ(ns.name, "y");
    EXPECT_EQ(ns.labels.at("kubernetes.io/metadata.name"), "y");
}
