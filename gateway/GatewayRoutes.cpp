#include "gateway/GatewayRoutes.hpp"

#include "base/Error.hpp"
#include "base/Netlink.hpp"
#include "base/RtnetlinkClient.hpp"

namespace kovs::gateway {
namespace {

// A route request's address: next hops and sources are host addresses.
nl::Addr hostNlAddr(const IpPrefix& p) { return toNlAddr(p.host()); }

}  // namespace

void GatewayRoutes::reconcile(nl_sock* sock, int ifindex, const std::vector<DesiredGatewayRoute>& desired, bool removeStale,
                              GatewayRepairs& r) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_route_alloc_cache(sock, AF_UNSPEC, 0, &raw), "gateway guard " + name_ + ": dump routes");
    nl::Cache cache(raw);
    std::vector<ObservedGatewayRoute> observed;
    std::vector<rtnl_route*> objects;  // of `observed`, for removals
    for (auto* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
        auto* rt = reinterpret_cast<rtnl_route*>(o);
        if (rtnl_route_get_table(rt) != RT_TABLE_MAIN || rtnl_route_get_type(rt) != RTN_UNICAST) continue;
        auto dst = ipFromNlAddr(rtnl_route_get_dst(rt));
        if (!dst) continue;
        ObservedGatewayRoute seen{*dst, {}, rtnl_route_get_protocol(rt)};
        for (int i = 0; i < rtnl_route_get_nnexthops(rt); ++i) {
            auto* nh = rtnl_route_nexthop_n(rt, i);
            if (rtnl_route_nh_get_ifindex(nh) == ifindex) seen.vias.push_back(ipFromNlAddr(rtnl_route_nh_get_gateway(nh)));
        }
        if (seen.vias.empty()) continue;  // not through the gateway
        observed.push_back(std::move(seen));
        objects.push_back(rt);
    }

    auto plan = planGatewayRoutes(desired, observed, removeStale);

    for (size_t i : plan.remove) {
        int rc = rtnl_route_delete(sock, objects[i], 0);
        if (rc == -NLE_OBJ_NOTFOUND) continue;
        nl::check(rc, "gateway guard " + name_ + ": remove stale route " + observed[i].dst.str());
        ++r.routeRemoved;
    }
    for (const auto& d : plan.add) {
        nl::Route rt(rtnl_route_alloc());
        if (!rt) throw Error("gateway guard " + name_ + ": rtnl_route_alloc: out of memory");
        rtnl_route_set_family(rt.get(), static_cast<uint8_t>(d.dst.family));
        auto dst = toNlAddr(d.dst);
        nl::check(rtnl_route_set_dst(rt.get(), dst.get()), "gateway guard " + name_ + ": route " + d.dst.str());
        rtnl_route_set_table(rt.get(), RT_TABLE_MAIN);
        rtnl_route_set_protocol(rt.get(), kKovsRouteProtocol);
        rtnl_route_set_scope(rt.get(), d.scope);
        rtnl_route_set_type(rt.get(), RTN_UNICAST);
        if (d.priority != 0) rtnl_route_set_priority(rt.get(), d.priority);
        if (d.src) {
            auto src = hostNlAddr(*d.src);
            rtnl_route_set_pref_src(rt.get(), src.get());
        }
        rtnl_nexthop* nh = rtnl_route_nh_alloc();
        if (nh == nullptr) throw Error("gateway guard " + name_ + ": rtnl_route_nh_alloc: out of memory");
        rtnl_route_nh_set_ifindex(nh, ifindex);
        if (d.via) {
            auto via = hostNlAddr(*d.via);
            rtnl_route_nh_set_gateway(nh, via.get());
        }
        rtnl_route_add_nexthop(rt.get(), nh);  // the route owns nh from here
        int rc = rtnl_route_add(sock, rt.get(), 0);
        if (rc == -NLE_EXIST) continue;
        nl::check(rc, "gateway guard " + name_ + ": add route " + d.dst.str() + " dev " + name_);
        ++r.routeAdded;
    }
}

}  // namespace kovs::gateway
