// Which addresses the gateway guard keeps (issue 16, defect 5): configured
// ones exactly, or on another CNI's device the ones that CNI gave it.
#include "gateway/GatewayAddressPlan.hpp"

#include <gtest/gtest.h>

using kovs::gateway::GatewayAddressPolicy;
using kovs::IpPrefix;
using kovs::gateway::planGatewayAddresses;

namespace {

std::vector<IpPrefix> ips(std::initializer_list<const char*> list) {
    std::vector<IpPrefix> out;
    for (const auto* s : list) out.push_back(IpPrefix::parse(s));
    return out;
}

const GatewayAddressPolicy kAdopt{{}, true};

}  // namespace

TEST(GatewayAddressPlan, ConfiguredAddressesAreAddedAndForeignOnesRemoved) {
    GatewayAddressPolicy policy{ips({"10.244.1.1/24"}), false};
    auto plan = planGatewayAddresses(policy, {}, ips({"10.244.1.7/24", "fe80::1/64"}));
    EXPECT_EQ(plan.add, ips({"10.244.1.1/24"}));
    EXPECT_EQ(plan.remove, ips({"10.244.1.7/24"})) << "a second gateway address on the pod subnet breaks ARP";
    EXPECT_EQ(plan.guarded, ips({"10.244.1.1/24"}));
    auto converged = planGatewayAddresses(policy, plan.guarded, ips({"10.244.1.1/24", "fe80::1/64"}));
    EXPECT_TRUE(converged.add.empty());
    EXPECT_TRUE(converged.remove.empty()) << "IPv6 link-local addresses are the kernel's";
}

// OVN-Kubernetes' management port: .2 of the node subnet, given by ovnkube-node.
TEST(GatewayAddressPlan, AnotherCnisDeviceKeepsWhatItWasGiven) {
    auto seen = planGatewayAddresses(kAdopt, {}, ips({"10.244.1.2/24", "fe80::858:aff:fef4:102/64"}));
    EXPECT_TRUE(seen.add.empty());
    EXPECT_TRUE(seen.remove.empty());
    EXPECT_EQ(seen.guarded, ips({"10.244.1.2/24"}));
    // networkd's reconfigure flushed it: the addresses come back.
    auto flushed = planGatewayAddresses(kAdopt, seen.guarded, ips({"fe80::858:aff:fef4:102/64"}));
    EXPECT_EQ(flushed.add, ips({"10.244.1.2/24"}));
    EXPECT_TRUE(flushed.remove.empty());
    EXPECT_EQ(flushed.guarded, seen.guarded);
}

TEST(GatewayAddressPlan, ADeviceThatAppearsWithoutAddressesIsGuardedOnceItHasSome) {
    auto bare = planGatewayAddresses(kAdopt, {}, {});
    EXPECT_TRUE(bare.add.empty());
    EXPECT_TRUE(bare.guarded.empty()) << "nothing to restore before the CNI addressed its device";
    auto later = planGatewayAddresses(kAdopt, bare.guarded, ips({"100.64.0.2/16"}));  // Kube-OVN's ovn0 on its join subnet
    EXPECT_EQ(later.guarded, ips({"100.64.0.2/16"}));
}

TEST(GatewayAddressPlan, TheCniMayReaddressItsDeviceAndNothingOfItsIsRemoved) {
    auto before = ips({"10.244.1.2/24"});
    auto moved = planGatewayAddresses(kAdopt, before, ips({"10.244.9.2/24"}));
    EXPECT_TRUE(moved.add.empty()) << "the old address is not forced back next to the new one";
    EXPECT_TRUE(moved.remove.empty());
    EXPECT_EQ(moved.guarded, ips({"10.244.9.2/24"}));
    auto both = planGatewayAddresses(kAdopt, moved.guarded, ips({"10.244.9.2/24", "10.244.9.3/24"}));
    EXPECT_TRUE(both.remove.empty()) << "never remove from a device that is not kovs's";
    EXPECT_EQ(both.guarded, ips({"10.244.9.2/24", "10.244.9.3/24"}));
}

TEST(GatewayAddressPlan, EachFamilyIsRestoredOnItsOwn) {
    auto dual = ips({"10.244.1.2/24", "fd00:10:244:1::2/64"});
    auto v6gone = planGatewayAddresses(kAdopt, dual, ips({"10.244.1.2/24"}));
    EXPECT_EQ(v6gone.add, ips({"fd00:10:244:1::2/64"}));
    EXPECT_EQ(v6gone.guarded, dual);
}

// Whatever the earlier plan is said to have adopted, an IPv6 link-local
// address is the kernel's: never added back, never guarded (found by
// fuzz_gateway_tunnel, seeded with an adopted list that holds one).
TEST(GatewayAddressPlan, ALinkLocalInTheAdoptedListIsNeitherGuardedNorAdded) {
    auto plan = planGatewayAddresses(kAdopt, ips({"10.244.1.1/24", "fe80::2/64", "fd00:10:244:1::1/64"}), ips({"10.244.1.1/24"}));
    EXPECT_EQ(plan.add, ips({"fd00:10:244:1::1/64"}));
    EXPECT_EQ(plan.guarded, ips({"10.244.1.1/24", "fd00:10:244:1::1/64"}));
}
