#include <gtest/gtest.h>
#include <sys/socket.h>

#include "base/Error.hpp"
#include "peers/PeerFile.hpp"

using kovs::Error;
using kovs::joinPrefixes;
using kovs::peers::parseNodeIP;
using kovs::peers::parsePodCIDR;
using kovs::peers::parsePeerFile;

TEST(PeerAddress, ParsesAndRejects) {
    EXPECT_EQ(parseNodeIP("172.18.0.3", "x").str(), "172.18.0.3/32");
    EXPECT_EQ(parseNodeIP("fd00:0::01", "x").addressString(), "fd00::1");
    EXPECT_THROW(parseNodeIP("172.18.0.300", "x"), Error);
    EXPECT_THROW(parseNodeIP("172.18.0.3/32", "x"), Error);
    EXPECT_THROW(parseNodeIP("", "x"), Error);
    EXPECT_EQ(parsePodCIDR("10.244.1.0/24", "x").str(), "10.244.1.0/24");
    EXPECT_EQ(parsePodCIDR("fd00:10:244:1::/64", "x").str(), "fd00:10:244:1::/64");
    EXPECT_THROW(parsePodCIDR("10.244.1.1/24", "x"), Error);  // host bits
    EXPECT_THROW(parsePodCIDR("10.244.1.0/33", "x"), Error);
    EXPECT_THROW(parsePodCIDR("10.244.1.0/", "x"), Error);
    EXPECT_THROW(parsePodCIDR("10.244.1.0/-1", "x"), Error);
    EXPECT_THROW(parsePodCIDR("10.244.1.0", "x"), Error);
    EXPECT_THROW(parsePodCIDR("fd00::/129", "x"), Error);
}

TEST(PeerFile, ParsesYamlMapping) {
    auto peers = parsePeerFile(R"(
peers:
  - name: node2
    nodeIP: 172.18.0.3
    podCIDRs: [10.244.2.0/24, 10.244.1.0/24]
  - name: node3
    nodeIP: "fd00::3"
)", "peers.yaml");
    ASSERT_EQ(peers.size(), 2u);
    EXPECT_EQ(peers.at("node2").tunnelAddress(), "172.18.0.3");
    EXPECT_EQ(joinPrefixes(peers.at("node2").podCIDRs), "10.244.2.0/24, 10.244.1.0/24") << "the file's order";
    EXPECT_EQ(peers.at("node3").tunnelAddress(), "fd00::3");
    EXPECT_TRUE(peers.at("node3").podCIDRs.empty());
}

TEST(PeerFile, ParsesJsonList) {
    auto peers = parsePeerFile(R"([{"name": "a", "nodeIP": "10.0.0.2", "podCIDRs": ["10.1.0.0/16"]}])", "p.json");
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers.at("a").podCIDRs.at(0).str(), "10.1.0.0/16");
}

TEST(PeerFile, EmptyFileIsNoPeers) {
    EXPECT_TRUE(parsePeerFile("", "p").empty());
    EXPECT_TRUE(parsePeerFile("peers: []", "p").empty());
    EXPECT_TRUE(parsePeerFile("peers:", "p").empty());
}

TEST(PeerFile, RejectsBadInputWithClearErrors) {
    auto errorOf = [](const std::string& text) -> std::string {
        try {
            parsePeerFile(text, "p.yaml");
        } catch (const Error& e) {
            return e.what();
        }
        return "no error";
    };
    auto expectError = [&](const std::string& text, const std::string& part) {
        auto msg = errorOf(text);
        EXPECT_NE(msg.find(part), std::string::npos) << "input: " << text << "\nerror: " << msg;
        EXPECT_NE(msg.find("p.yaml"), std::string::npos) << msg;
    };
    expectError("peers: [ {name: a, nodeIP: 1.2.3.4", "p.yaml");  // YAML syntax
    expectError("peers: {name: a}", "'peers' must be a list");
    expectError("nodes: []", "unknown top-level key");
    expectError("42", "expected a list");
    expectError("- name: a\n  nodeIp: 1.2.3.4", "unknown key 'nodeIp'");
    expectError("- name: a", "nodeIP");
    expectError("- nodeIP: 1.2.3.4", "name");
    expectError("- name: ''\n  nodeIP: 1.2.3.4", "must not be empty");
    expectError("- name: a\n  nodeIP: 1.2.3", "not an IPv4 or IPv6 address");
    expectError("- name: a\n  nodeIP: [1]", "expected a string");
    expectError("- name: a\n  nodeIP: 1.2.3.4\n  podCIDRs: 10.0.0.0/8", "expected a list");
    expectError("- name: a\n  nodeIP: 1.2.3.4\n  podCIDRs: [10.0.0.1/8]", "host bits");
    expectError("- {name: a, nodeIP: 1.2.3.4}\n- {name: a, nodeIP: 1.2.3.5}", "duplicate name 'a'");
    expectError("- {name: a, nodeIP: 1.2.3.4}\n- {name: b, nodeIP: 1.2.3.4}", "duplicate nodeIP");
    expectError("- just-a-string", "expected a mapping");
    expectError("- {name: a, nodeIP: 1.2.3.4, nodeIPs: [1.2.3.4]}", "nodeIP and nodeIPs both given");
    expectError("- {name: a, nodeIPs: []}", "nodeIPs: expected a list of addresses, one per family");
    expectError("- {name: a, nodeIPs: 1.2.3.4}", "nodeIPs: expected a list");
    expectError("- {name: a, nodeIPs: [1.2.3.4, 1.2.3.5]}", "nodeIPs[1]: a second address of one family (1.2.3.4, 1.2.3.5)");
    expectError("- {name: a, nodeIPs: [1.2.3.4, 'fd00::1/64']}", "not an IPv4 or IPv6 address");
    expectError("- {name: a, nodeIPs: [1.2.3.4, 'fd00::1']}\n- {name: b, nodeIPs: [1.2.3.5, 'fd00::1']}", "duplicate nodeIP fd00::1");
}

// A dual-stack node as the Node object lists it: an address of each family,
// the first one the tunnel's.
TEST(PeerFile, NodeIPsOfBothFamilies) {
    auto peers = parsePeerFile("- name: node2\n  nodeIPs: ['fc00:f853:ccd:e793::3', 172.18.0.3]\n"
                               "  podCIDRs: [10.244.2.0/24, 'fd00:10:244:2::/64']\n", "p.yaml");
    const auto& p = peers.at("node2");
    ASSERT_EQ(p.nodeIPs.size(), 2u);
    EXPECT_EQ(p.tunnelAddress(), "fc00:f853:ccd:e793::3");
    ASSERT_NE(p.nodeIP(AF_INET), nullptr);
    EXPECT_EQ(p.nodeIP(AF_INET)->addressString(), "172.18.0.3");
    EXPECT_EQ(p.podCIDRs.size(), 2u);
}
