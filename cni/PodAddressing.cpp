#include "cni/PodAddressing.hpp"

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "base/Error.hpp"
#include "base/RtnetlinkClient.hpp"

namespace kovs::cni {
namespace {

bool isDefault(const std::string& dst) { return dst == "0.0.0.0/0" || dst == "::/0"; }
bool isV6(const std::string& addr) { return addr.find(':') != std::string::npos; }

}  // namespace

int PodAddressing::ifindex(const std::string& ifname) { return RtnetlinkClient().requireLink(ifname).index; }

std::vector<ResultRoute> PodAddressing::apply(const std::string& ifname, const CniResult& ipam) {
    RtnetlinkClient nl;
    for (const auto& ip : ipam.ips) {
        AddressInfo a;
        a.local = IpPrefix::parse(ip.address);
        // Usable at once, as kindnet's pods are: duplicate address detection
        // would hold an IPv6 address tentative for about a second, and the
        // pod's first connections (a DNS query) would fail. IPAM made it unique.
        if (ip.isV6()) a.flags = IFA_F_NODAD;
        nl.addAddress(ifname, a);
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
    for (const auto& r : routes) {
        RouteInfo route;
        route.dst = IpPrefix::parse(r.dst).network();
        if (!r.gw.empty()) route.gateway = IpPrefix::parse(r.gw).host();
        route.scope = r.gw.empty() ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
        nl.addRoute(ifname, route);
    }
    return routes;
}

std::vector<std::string> PodAddressing::addresses(const std::string& ifname) {
    std::vector<std::string> out;
    for (const auto& a : RtnetlinkClient().addresses(ifname)) out.push_back(a.str());
    return out;
}

}  // namespace kovs::cni
