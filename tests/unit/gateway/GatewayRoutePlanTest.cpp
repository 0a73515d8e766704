// Which routes the gateway guard keeps on gw0 and what one pass changes:
// the prefix routes of its addresses and the extra routes, matched on
// destination and next hop; only kovs's own stale routes are removed, and
// only once the route set is complete.
#include "gateway/GatewayRoutePlan.hpp"

#include <gtest/gtest.h>

using kovs::gateway::DesiredGatewayRoute;
using kovs::gateway::desiredGatewayRoutes;
using kovs::gateway::GatewayRoute;
using kovs::IpPrefix;
using kovs::gateway::kKovsRouteProtocol;
using kovs::gateway::ObservedGatewayRoute;
using kovs::gateway::planGatewayRoutes;

namespace {

IpPrefix ip(const char* s) { return IpPrefix::parse(s); }

ObservedGatewayRoute seen(const char* dst, uint8_t protocol, std::vector<std::optional<IpPrefix>> vias = {std::nullopt}) {
    return {ip(dst), std::move(vias), protocol};
}

}  // namespace

TEST(GatewayRoutePlan, AddressesBringTheirPrefixRoutesAndExtrasTheirSource) {
    auto desired = desiredGatewayRoutes({ip("10.244.1.1/24"), ip("fd00:10:244:1::1/64"), ip("10.9.9.9/32")},
                                        {{ip("10.244.2.0/24"), ip("10.244.2.1")}, {ip("10.96.0.7/12"), std::nullopt},
                                         {ip("fd00:10:244:2::/64"), std::nullopt}});
    ASSERT_EQ(desired.size(), 5u) << "a host address (/32) brings no prefix route";
    // The kernel's own prefix routes, as it adds them with the address.
    EXPECT_EQ(desired[0], (DesiredGatewayRoute{ip("10.244.1.0/24"), std::nullopt, ip("10.244.1.1/24"), RT_SCOPE_LINK, 0}));
    EXPECT_EQ(desired[1], (DesiredGatewayRoute{ip("fd00:10:244:1::/64"), std::nullopt, std::nullopt, RT_SCOPE_LINK, 256}));
    // Extras: through a next hop at universe scope, on the link otherwise,
    // from the first IPv4 gateway address; host bits of the destination cleared.
    EXPECT_EQ(desired[2], (DesiredGatewayRoute{ip("10.244.2.0/24"), ip("10.244.2.1"), ip("10.244.1.1/24"), RT_SCOPE_UNIVERSE, 0}));
    EXPECT_EQ(desired[3], (DesiredGatewayRoute{ip("10.96.0.0/12"), std::nullopt, ip("10.244.1.1/24"), RT_SCOPE_LINK, 0}));
    EXPECT_EQ(desired[4], (DesiredGatewayRoute{ip("fd00:10:244:2::/64"), std::nullopt, std::nullopt, RT_SCOPE_LINK, 1024}));

    auto ipv6Only = desiredGatewayRoutes({ip("fd00::1/64")}, {{ip("10.96.0.0/12"), std::nullopt}});
    ASSERT_EQ(ipv6Only.size(), 2u);
    EXPECT_EQ(ipv6Only[1].src, std::nullopt) << "no IPv4 gateway address, no source";
}

TEST(GatewayRoutePlan, WhatIsThereWhoeverAddedItStaysAndWhatIsMissingIsAdded) {
    auto desired = desiredGatewayRoutes({ip("10.244.1.1/24")}, {{ip("10.244.2.0/24"), ip("10.244.2.1")}});
    // The kernel's prefix route is present; the peer route is not.
    auto plan = planGatewayRoutes(desired, {seen("10.244.1.0/24", RTPROT_KERNEL)}, true);
    EXPECT_TRUE(plan.remove.empty());
    ASSERT_EQ(plan.add.size(), 1u);
    EXPECT_EQ(plan.add[0].dst, ip("10.244.2.0/24"));

    // Converged: nothing to do.
    auto done = planGatewayRoutes(desired, {seen("10.244.1.0/24", RTPROT_KERNEL),
                                            seen("10.244.2.0/24", kKovsRouteProtocol, {ip("10.244.2.1/32")})}, true);
    EXPECT_TRUE(done.add.empty());
    EXPECT_TRUE(done.remove.empty());
}

TEST(GatewayRoutePlan, ANextHopCountsAndOneOfAMultipathRouteIsEnough) {
    auto desired = desiredGatewayRoutes({ip("10.244.1.1/24")}, {{ip("10.244.2.0/24"), ip("10.244.2.1")}});
    // The right destination through another next hop, or directly: not the route wanted.
    for (auto via : {std::optional<IpPrefix>(ip("10.244.2.9/32")), std::optional<IpPrefix>()}) {
        auto plan = planGatewayRoutes(desired, {seen("10.244.1.0/24", RTPROT_KERNEL), seen("10.244.2.0/24", kKovsRouteProtocol, {via})}, true);
        ASSERT_EQ(plan.add.size(), 1u);
        EXPECT_EQ(plan.add[0].via, ip("10.244.2.1"));
        EXPECT_EQ(plan.remove, std::vector<size_t>{1}) << "kovs's route through the wrong next hop goes";
    }
    auto multipath = planGatewayRoutes(
        desired, {seen("10.244.1.0/24", RTPROT_KERNEL), seen("10.244.2.0/24", RTPROT_STATIC, {ip("10.244.2.9/32"), ip("10.244.2.1/32")})}, true);
    EXPECT_TRUE(multipath.add.empty());
    EXPECT_TRUE(multipath.remove.empty());
}

TEST(GatewayRoutePlan, OnlyKovssOwnStaleRoutesGoAndOnlyOnceTheRouteSetIsComplete) {
    auto desired = desiredGatewayRoutes({ip("10.244.1.1/24")}, {});
    std::vector<ObservedGatewayRoute> observed{seen("10.244.1.0/24", RTPROT_KERNEL), seen("10.244.7.0/24", kKovsRouteProtocol),
                                               seen("192.168.50.0/24", RTPROT_STATIC), seen("10.244.8.0/24", kKovsRouteProtocol)};
    auto plan = planGatewayRoutes(desired, observed, true);
    EXPECT_TRUE(plan.add.empty());
    EXPECT_EQ(plan.remove, (std::vector<size_t>{1, 3})) << "someone else's route on gw0 stays";

    auto early = planGatewayRoutes(desired, observed, false);
    EXPECT_TRUE(early.remove.empty()) << "the peers have not arrived yet: a kovs route may still be wanted";
}
