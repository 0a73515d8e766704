// planEgress: each family's rules from the inputs of both, so that a
// dual-stack node gets a table per family and an IPv4-only one no IPv6 table.
#include <gtest/gtest.h>

#include "egress/EgressPlanner.hpp"

using kovs::IpPrefix;
using kovs::egress::EgressInputs;
using kovs::egress::planEgress;

namespace {

std::vector<IpPrefix> prefixes(std::initializer_list<const char*> texts) {
    std::vector<IpPrefix> out;
    for (const auto* t : texts) out.push_back(IpPrefix::parse(t));
    return out;
}

EgressInputs dualStack() {
    EgressInputs in;
    in.podCidrs = prefixes({"10.244.1.0/24", "fd00:10:244:1::/64", "10.244.2.0/24", "fd00:10:244:2::/64"});
    in.nodeAddresses = prefixes({"172.18.0.2/16", "fc00:f853:ccd:e793::2/64", "172.18.0.3"});
    return in;
}

}  // namespace

TEST(EgressPlanner, EachFamilyFromItsOwnPrefixes) {
    auto v4 = planEgress(dualStack(), AF_INET);
    EXPECT_EQ(v4.describe(), "keep 10.244.1.0/24, 10.244.2.0/24, 172.18.0.2/32, 172.18.0.3/32; masquerade from 10.244.1.0/24, 10.244.2.0/24");
    auto v6 = planEgress(dualStack(), AF_INET6);
    EXPECT_EQ(v6.describe(), "keep fc00:f853:ccd:e793::2/128, fd00:10:244:1::/64, fd00:10:244:2::/64; "
                             "masquerade from fd00:10:244:1::/64, fd00:10:244:2::/64");
}

TEST(EgressPlanner, NoPodsOfAFamilyNoRulesOfIt) {
    EgressInputs in;
    in.podCidrs = prefixes({"10.244.1.0/24"});
    in.nodeAddresses = prefixes({"172.18.0.2", "fc00:f853:ccd:e793::2"});
    EXPECT_FALSE(planEgress(in, AF_INET).empty());
    EXPECT_TRUE(planEgress(in, AF_INET6).empty()) << "an IPv4 cluster got an IPv6 table";
    EXPECT_TRUE(planEgress(in, AF_INET6).keep.empty());
}

// egress.clusterCIDRs replaces the pod CIDRs family by family: a dual-stack
// cluster that configures only its IPv4 podSubnet still masquerades IPv6 pods.
TEST(EgressPlanner, ConfiguredClusterCidrsReplaceOnlyTheirFamily) {
    auto in = dualStack();
    in.clusterCidrs = prefixes({"10.244.0.0/16"});
    EXPECT_EQ(planEgress(in, AF_INET).masquerade, prefixes({"10.244.0.0/16"}));
    EXPECT_EQ(planEgress(in, AF_INET6).masquerade, prefixes({"fd00:10:244:1::/64", "fd00:10:244:2::/64"}));
    in.clusterCidrs.push_back(IpPrefix::parse("fd00:10:244::/56"));
    EXPECT_EQ(planEgress(in, AF_INET6).masquerade, prefixes({"fd00:10:244::/56"}));
}
