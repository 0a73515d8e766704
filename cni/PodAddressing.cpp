#include "cni/PodAddressing.hpp"

#include <linux/rtnetlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>

#include "base/Error.hpp"
#include "base/Netlink.hpp"

namespace kovs::cni {
namespace {

bool isDefault(const std::string& dst) { return dst == "0.0.0.0/0" || dst == "::/0"; }
bool isV6(const std::string& addr) { return addr.find(':') != std::string::npos; }

void addRoute(nl_sock* sock, int ifindex, const ResultRoute& r) {
    auto what = "route " + r.dst + (r.gw.empty() ? "" : " via " + r.gw);
    nl::Route route(rtnl_route_alloc());
    auto dst = nl::parseAddr(r.dst);
    nl::check(rtnl_route_set_dst(route.get(), dst.get()), what + ": set dst");
    rtnl_route_set_table(route.get(), RT_TABLE_MAIN);
    rtnl_route_set_protocol(route.get(), RTPROT_BOOT);
    rtnl_route_set_type(route.get(), RTN_UNICAST);
    rtnl_route_set_scope(route.get(), r.gw.empty() ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE);
    rtnl_nexthop* nh = rtnl_route_nh_alloc();
    if (!nh) throw Error(what + ": out of memory");
    rtnl_route_nh_set_ifindex(nh, ifindex);
    if (!r.gw.empty()) {
        auto gw = nl::parseAddr(r.gw);
        rtnl_route_nh_set_gateway(nh, gw.get());
    }
    rtnl_route_add_nexthop(route.get(), nh);  // the route owns nh now
    nl::check(rtnl_route_add(sock, route.get(), NLM_F_CREATE | NLM_F_EXCL), what + ": add");
}

}  // namespace

int PodAddressing::ifindex(const std::string& ifname) {
    auto sock = nl::connectRoute();
    rtnl_link* raw = nullptr;
    nl::check(rtnl_link_get_kernel(sock.get(), 0, ifname.c_str(), &raw), "link " + ifname + ": get");
    nl::Link link(raw);
    return rtnl_link_get_ifindex(link.get());
}

std::vector<ResultRoute> PodAddressing::apply(const std::string& ifname, const CniResult& ipam) {
    auto sock = nl::connectRoute();
    int index = ifindex(ifname);
    for (const auto& ip : ipam.ips) {
        nl::RtAddr addr(rtnl_addr_alloc());
        auto local = nl::parseAddr(ip.address);
        rtnl_addr_set_ifindex(addr.get(), index);
        nl::check(rtnl_addr_set_local(addr.get(), local.get()), "address " + ip.address + " on " + ifname + ": set");
        // Usable at once, as kindnet's pods are: duplicate address detection
        // would hold an IPv6 address tentative for about a second, and the
        // pod's first connections (a DNS query) would fail. IPAM made it unique.
        if (ip.isV6()) rtnl_addr_set_flags(addr.get(), IFA_F_NODAD);
        nl::check(rtnl_addr_add(sock.get(), addr.get(), 0), "address " + ip.address + " on " + ifname + ": add");
    }
    auto gatewayFor = [&](bool v6) -> std::string {
        for (const auto& ip : ipam.ips) {
            if (ip.isV6() == v6 && !ip.gateway.empty()) return ip.gateway;
        }
        return "";
    };
    std::vector<ResultRoute> routes;
    bool hasDefault[2] = {false, false};
    for (auto r : ipam.routes) {
        if (r.gw.empty()) r.gw = gatewayFor(isV6(r.dst));
        if (isDefault(r.dst)) hasDefault[isV6(r.dst)] = true;
        routes.push_back(r);
    }
    for (bool v6 : {false, true}) {
        auto gw = gatewayFor(v6);
        if (!hasDefault[v6] && !gw.empty()) routes.push_back({v6 ? "::/0" : "0.0.0.0/0", gw});
    }
    for (const auto& r : routes) addRoute(sock.get(), index, r);
    return routes;
}

std::vector<std::string> PodAddressing::addresses(const std::string& ifname) {
    auto sock = nl::connectRoute();
    int index = ifindex(ifname);
    nl_cache* raw = nullptr;
    nl::check(rtnl_addr_alloc_cache(sock.get(), &raw), "addresses of " + ifname + ": list");
    nl::Cache cache(raw);
    std::vector<std::string> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) != index || !rtnl_addr_get_local(a)) continue;
        // libnl leaves the prefix length out when it is the full length (/32, /128).
        auto text = nl::toString(rtnl_addr_get_local(a));
        if (text.find('/') == std::string::npos) text += "/" + std::to_string(rtnl_addr_get_prefixlen(a));
        out.push_back(text);
    }
    return out;
}

}  // namespace kovs::cni
