// missingNodeFamily: each family of node.podCIDRs needs an address of that
// family on the uplink (eth0) or on br-phy where the shim moved it (link-local
// ones do not count: linkAddresses leaves them out).
#include <gtest/gtest.h>

#include <map>

#include "agent/Config.hpp"
#include "agent/NodeFamilies.hpp"

using namespace kovs;
using namespace kovs::agent;

namespace {

Config config(const std::string& podCIDRs, const std::string& extra = "") {
    return parseConfig("node: {name: n1, podCIDRs: [" + podCIDRs + "]}\n" + extra);
}

auto addresses(std::map<std::string, std::vector<std::string>> byDevice) {
    return [byDevice](const std::string& dev) {
        std::vector<IpPrefix> out;
        if (auto it = byDevice.find(dev); it != byDevice.end())
            for (const auto& a : it->second) out.push_back(IpPrefix::parse(a));
        return out;
    };
}

}  // namespace

TEST(NodeFamilies, EachPodFamilyNeedsANodeAddressOfIt) {
    auto dual = config("10.244.1.0/24, 'fd00:10:244:1::/64'");
    EXPECT_EQ(missingNodeFamily(dual, addresses({{"eth0", {"172.18.0.2/16", "fc00:f853:ccd:e793::2/64"}}})), "");
    // Where the shim moved them: br-phy.
    EXPECT_EQ(missingNodeFamily(dual, addresses({{"br-phy", {"172.18.0.2/16", "fc00:f853:ccd:e793::2/64"}}})), "");
    auto why = missingNodeFamily(dual, addresses({{"eth0", {"172.18.0.2/16"}}}));
    EXPECT_EQ(why.rfind("node.podCIDRs has the IPv6 pod CIDR fd00:10:244:1::/64, but this node has no IPv6 address (eth0 or br-phy)", 0),
              0u) << why;
    EXPECT_NE(why.find("EnableIPv6"), std::string::npos) << why;
    auto v4 = missingNodeFamily(config("'fd00:10:244:1::/64', 10.244.1.0/24"), addresses({{"eth0", {"fc00::2/64"}}}));
    EXPECT_EQ(v4, "node.podCIDRs has the IPv4 pod CIDR 10.244.1.0/24, but this node has no IPv4 address (eth0 or br-phy): its pods "
                  "could not reach beyond it over IPv4.");
}

// Nothing to judge by: companion mode (the other CNI's network), uplink.mode
// none (the node's address may be on any interface), an uplink with no
// address yet.
TEST(NodeFamilies, NothingToJudgeByNothingSaid) {
    EXPECT_EQ(missingNodeFamily(config("'fd00:10:244:1::/64'", "uplink: {mode: none, interface: ens3}\n"),
                                addresses({{"ens3", {"172.18.0.2/16"}}})), "");
    EXPECT_EQ(missingNodeFamily(config("'fd00:10:244:1::/64'", "mode: companion\n"), addresses({{"eth0", {"172.18.0.2/16"}}})), "");
    EXPECT_EQ(missingNodeFamily(config("'fd00:10:244:1::/64'"), addresses({})), "");
}
