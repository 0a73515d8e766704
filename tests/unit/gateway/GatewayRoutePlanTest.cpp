// Which routes the gateway guard keeps on gw0 and what one pass changes:
// the prefix routes of its addresses and the extra routes, matched on
// destination and next hop; only kovs's own stale routes are removed, and
// only once the route set is complete. Routes are RtnetlinkClient's
// RouteInfo on both sides, as routes() observes them.
#include "gateway/GatewayRoutePlan.hpp"

#include <gtest/gtest.h>

using kovs::gateway::desiredGatewayRoutes;
using kovs::IpPrefix;
using kovs::gateway::kKovsRouteProtocol;
using kovs::gateway::planGatewayRoutes;
using kovs::RouteInfo;

namespace {

IpPrefix ip(const char* s) { return IpPrefix::parse(s); }

// A route through gw0 as routes() gives it: one per next hop through gw0.
RouteInfo seen(const char* dst, uint8_t protocol, std::optional<IpPrefix> via = std::nullopt, bool multipath = false) {
    RouteInfo r{.dst = ip(dst), .gateway = via, .protocol = protocol};
    r.multipath = multipath;
    return r;
}

RouteInfo want(const char* dst, std::optional<IpPrefix> via, std::optional<IpPrefix> src, uint8_t scope, uint32_t priority) {
    RouteInfo r{.dst = ip(dst), .gateway = via, .priority = priority, .protocol = kKovsRouteProtocol, .scope = scope};
    r.prefsrc = src;
    return r;
}

std::vector<std::string> named(const std::vector<RouteInfo>& routes) {
    std::vector<std::string> out;
    for (const auto& r : routes) out.push_back(r.dst.str());
    return out;
}

}  // namespace

TEST(GatewayRoutePlan, AddressesBringTheirPrefixRoutesAndExtrasTheirSource) {
    auto desired = desiredGatewayRoutes({ip("10.244.1.1/24"), ip("fd00:10:244:1::1/64"), ip("10.9.9.9/32")},
                                        {{ip("10.244.2.0/24"), ip("10.244.2.1")}, {ip("10.96.0.7/12"), std::nullopt},
                                         {ip("fd00:10:244:2::/64"), std::nullopt}});
    ASSERT_EQ(desired.size(), 5u) << "a host address (/32) brings no prefix route";
    // The kernel's own prefix routes, as it adds them with the address.
    EXPECT_EQ(desired[0], want("10.244.1.0/24", std::nullopt, ip("10.244.1.1/32"), RT_SCOPE_LINK, 0)) << desired[0].str();
    EXPECT_EQ(desired[1], want("fd00:10:244:1::/64", std::nullopt, std::nullopt, RT_SCOPE_LINK, 256)) << desired[1].str();
    // Extras: through a next hop at universe scope, on the link otherwise,
    // from the first IPv4 gateway address; host bits of the destination cleared.
    EXPECT_EQ(desired[2], want("10.244.2.0/24", ip("10.244.2.1/32"), ip("10.244.1.1/32"), RT_SCOPE_UNIVERSE, 0)) << desired[2].str();
    EXPECT_EQ(desired[3], want("10.96.0.0/12", std::nullopt, ip("10.244.1.1/32"), RT_SCOPE_LINK, 0)) << desired[3].str();
    EXPECT_EQ(desired[4], want("fd00:10:244:2::/64", std::nullopt, std::nullopt, RT_SCOPE_LINK, 1024)) << desired[4].str();

    auto ipv6Only = desiredGatewayRoutes({ip("fd00::1/64")}, {{ip("10.96.0.0/12"), std::nullopt}});
    ASSERT_EQ(ipv6Only.size(), 2u);
    EXPECT_EQ(ipv6Only[1].prefsrc, std::nullopt) << "no IPv4 gateway address, no source";
}

TEST(GatewayRoutePlan, WhatIsThereWhoeverAddedItStaysAndWhatIsMissingIsAdded) {
    auto desired = desiredGatewayRoutes({ip("10.244.1.1/24")}, {{ip("10.244.2.0/24"), ip("10.244.2.1")}});
    // The kernel's prefix route is present; the peer route is not.
    auto plan = planGatewayRoutes(desired, {seen("10.244.1.0/24", RTPROT_KERNEL)}, true);
    EXPECT_TRUE(plan.remove.empty());
    ASSERT_EQ(plan.add.size(), 1u);
    EXPECT_EQ(plan.add[0].dst, ip("10.244.2.0/24"));
    EXPECT_EQ(plan.add[0].protocol, kKovsRouteProtocol);

    // Converged: nothing to do.
    auto done = planGatewayRoutes(desired, {seen("10.244.1.0/24", RTPROT_KERNEL),
                                            seen("10.244.2.0/24", kKovsRouteProtocol, ip("10.244.2.1/32"))}, true);
    EXPECT_TRUE(done.add.empty());
    EXPECT_TRUE(done.remove.empty());
}

TEST(GatewayRoutePlan, ANextHopCountsAndOneOfAMultipathRouteIsEnough) {
    auto desired = desiredGatewayRoutes({ip("10.244.1.1/24")}, {{ip("10.244.2.0/24"), ip("10.244.2.1")}});
    // The right destination through another next hop, or directly: not the route wanted.
    for (auto via : {std::optional<IpPrefix>(ip("10.244.2.9/32")), std::optional<IpPrefix>()}) {
        auto plan = planGatewayRoutes(desired, {seen("10.244.1.0/24", RTPROT_KERNEL), seen("10.244.2.0/24", kKovsRouteProtocol, via)}, true);
        ASSERT_EQ(plan.add.size(), 1u);
        EXPECT_EQ(plan.add[0].gateway, ip("10.244.2.1/32"));
        EXPECT_EQ(named(plan.remove), std::vector<std::string>{"10.244.2.0/24"}) << "kovs's route through the wrong next hop goes";
    }
    // A multipath route, seen as one RouteInfo per next hop through gw0: one of them is enough.
    auto multipath = planGatewayRoutes(desired, {seen("10.244.1.0/24", RTPROT_KERNEL),
                                                 seen("10.244.2.0/24", RTPROT_STATIC, ip("10.244.2.9/32"), true),
                                                 seen("10.244.2.0/24", RTPROT_STATIC, ip("10.244.2.1/32"), true)}, true);
    EXPECT_TRUE(multipath.add.empty());
    EXPECT_TRUE(multipath.remove.empty());
    // A multipath route is never removed by next hop, even one carrying kovs's protocol.
    auto foreignMultipath = planGatewayRoutes(desired, {seen("10.244.1.0/24", RTPROT_KERNEL),
                                                        seen("10.244.2.0/24", kKovsRouteProtocol, ip("10.244.2.1/32")),
                                                        seen("10.244.5.0/24", kKovsRouteProtocol, ip("10.244.2.9/32"), true)}, true);
    EXPECT_TRUE(foreignMultipath.remove.empty());
}

TEST(GatewayRoutePlan, OnlyKovssOwnStaleUnicastRoutesGoAndOnlyOnceTheRouteSetIsComplete) {
    auto desired = desiredGatewayRoutes({ip("10.244.1.1/24")}, {});
    std::vector<RouteInfo> observed{seen("10.244.1.0/24", RTPROT_KERNEL), seen("10.244.7.0/24", kKovsRouteProtocol),
                                    seen("192.168.50.0/24", RTPROT_STATIC), seen("10.244.8.0/24", kKovsRouteProtocol),
                                    seen("10.244.9.0/24", kKovsRouteProtocol)};
    observed.back().type = RTN_BLACKHOLE;
    auto plan = planGatewayRoutes(desired, observed, true);
    EXPECT_TRUE(plan.add.empty());
    EXPECT_EQ(named(plan.remove), (std::vector<std::string>{"10.244.7.0/24", "10.244.8.0/24"}))
        << "someone else's route on gw0 stays, and so does anything but a unicast route";

    auto early = planGatewayRoutes(desired, observed, false);
    EXPECT_TRUE(early.remove.empty()) << "the peers have not arrived yet: a kovs route may still be wanted";
}
