#include "base/RtnetlinkClient.hpp"

#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <netlink/route/link/inet6.h>
#include <netlink/route/link/veth.h>

#include <cstring>

#include "base/Error.hpp"

namespace kovs {
namespace {

bool gone(int rc) { return rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND || rc == -NLE_NOADDR; }

std::string protocolName(uint8_t p) {
    switch (p) {
        case RTPROT_KERNEL: return "kernel";
        case RTPROT_BOOT: return "boot";
        case RTPROT_STATIC: return "static";
        case RTPROT_DHCP: return "dhcp";
        case RTPROT_RA: return "ra";
        default: return std::to_string(p);
    }
}

LinkInfo toInfo(rtnl_link* l) {
    LinkInfo i;
    i.index = rtnl_link_get_ifindex(l);
    if (const char* n = rtnl_link_get_name(l)) i.name = n;
    if (nl_addr* mac = rtnl_link_get_addr(l); mac && nl_addr_get_len(mac) == 6) i.mac = nl::toString(mac);
    i.mtu = rtnl_link_get_mtu(l);
    i.flags = rtnl_link_get_flags(l);
    i.master = rtnl_link_get_master(l);
    i.peer = rtnl_link_get_link(l);
    if (int32_t nsid = -1; rtnl_link_get_link_netnsid(l, &nsid) == 0 && nsid >= 0) i.peerNetnsId = nsid;
    if (const char* k = rtnl_link_get_type(l)) i.kind = k;
    return i;
}

// The label an address keeps on another link: "eth0:1" on br-phy is "br-phy:1".
std::string relabel(const std::string& label, const std::string& link) {
    if (label.empty() || label.rfind(link, 0) == 0) return label;
    auto colon = label.find(':');
    return colon == std::string::npos ? link : link + label.substr(colon);
}

}  // namespace

IpPrefix fromNlAddr(const nl_addr* a, int family) {
    IpPrefix p;
    p.family = a ? nl_addr_get_family(a) : family;
    if (p.family != AF_INET && p.family != AF_INET6) p.family = family;
    if (a && nl_addr_get_len(a) == p.size()) std::memcpy(p.bytes.data(), nl_addr_get_binary_addr(a), p.size());
    p.prefixLen = a ? static_cast<int>(nl_addr_get_prefixlen(a)) : 0;
    return p;
}

std::optional<IpPrefix> ipFromNlAddr(const nl_addr* a) {
    if (a == nullptr) return std::nullopt;
    IpPrefix p;
    p.family = nl_addr_get_family(a);
    if (p.family != AF_INET && p.family != AF_INET6) return std::nullopt;
    unsigned len = nl_addr_get_len(a);
    if (len == 0) {
        p.prefixLen = 0;
        return p;
    }
    if (len != p.size()) return std::nullopt;
    std::memcpy(p.bytes.data(), nl_addr_get_binary_addr(a), len);
    p.prefixLen = static_cast<int>(nl_addr_get_prefixlen(a));
    return p;
}

nl::Addr toNlAddr(const IpPrefix& p) {
    nl::Addr a(nl_addr_build(p.family, p.bytes.data(), p.size()));
    if (!a) throw Error("nl_addr_build " + p.str() + ": out of memory");
    nl_addr_set_prefixlen(a.get(), p.prefixLen);
    return a;
}

uint32_t AddressInfo::requestFlags() const {
    return flags & (IFA_F_NODAD | IFA_F_HOMEADDRESS | IFA_F_MANAGETEMPADDR | IFA_F_NOPREFIXROUTE | IFA_F_MCAUTOJOIN);
}

std::string RouteInfo::str() const {
    std::string s = dst.prefixLen == 0 ? "default" : dst.str();
    if (gateway) s += " via " + gateway->addressString();
    if (priority) s += " metric " + std::to_string(priority);
    s += " proto " + protocolName(protocol);
    if (prefsrc) s += " src " + prefsrc->addressString();
    if (onlink) s += " onlink";
    if (multipath) s += " (a next hop of a multipath route)";
    return s;
}

RtnetlinkClient::RtnetlinkClient() : sock_(nl::connectRoute()) {}

uint32_t RtnetlinkClient::localPort() const { return nl_socket_get_local_port(sock_.get()); }

std::optional<LinkInfo> RtnetlinkClient::link(const std::string& name) {
    rtnl_link* raw = nullptr;
    int rc = rtnl_link_get_kernel(sock_.get(), 0, name.c_str(), &raw);
    nl::Link l(raw);
    if (gone(rc)) return std::nullopt;
    nl::check(rc, "link " + name + ": get");
    return toInfo(l.get());
}

std::optional<LinkInfo> RtnetlinkClient::link(int index) {
    rtnl_link* raw = nullptr;
    int rc = rtnl_link_get_kernel(sock_.get(), index, nullptr, &raw);
    nl::Link l(raw);
    if (gone(rc)) return std::nullopt;
    nl::check(rc, "link #" + std::to_string(index) + ": get");
    return toInfo(l.get());
}

LinkInfo RtnetlinkClient::requireLink(const std::string& name) {
    auto l = link(name);
    if (!l) throw Error("link " + name + ": no such device");
    return *l;
}

std::vector<LinkInfo> RtnetlinkClient::links() {
    nl_cache* raw = nullptr;
    nl::check(rtnl_link_alloc_cache(sock_.get(), AF_UNSPEC, &raw), "links: dump");
    nl::Cache cache(raw);
    std::vector<LinkInfo> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o))
        out.push_back(toInfo(reinterpret_cast<rtnl_link*>(o)));
    return out;
}

nl::Link RtnetlinkClient::linkObject(const std::string& name, const std::string& what) {
    rtnl_link* raw = nullptr;
    int rc = rtnl_link_get_kernel(sock_.get(), 0, name.c_str(), &raw);
    nl::Link l(raw);
    nl::check(rc, "link " + name + ": " + what);
    return l;
}

void RtnetlinkClient::change(const std::string& name, const std::string& what, rtnl_link* changes) {
    auto current = linkObject(name, what);
    nl::check(rtnl_link_change(sock_.get(), current.get(), changes, 0), "link " + name + ": " + what);
}

std::vector<AddressInfo> RtnetlinkClient::addresses(const std::string& linkName) {
    int index = requireLink(linkName).index;
    nl_cache* raw = nullptr;
    nl::check(rtnl_addr_alloc_cache(sock_.get(), &raw), "link " + linkName + ": dump addresses");
    nl::Cache cache(raw);
    std::vector<AddressInfo> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) != index) continue;
        AddressInfo i;
        int family = rtnl_addr_get_family(a);
        i.local = fromNlAddr(rtnl_addr_get_local(a), family);
        i.local.prefixLen = static_cast<int>(rtnl_addr_get_prefixlen(a));
        i.scope = static_cast<uint8_t>(rtnl_addr_get_scope(a));
        i.flags = rtnl_addr_get_flags(a);
        if (nl_addr* b = rtnl_addr_get_broadcast(a); b && nl_addr_get_len(b) > 0) {
            i.broadcast = fromNlAddr(b, family).host();
        }
        if (const char* label = rtnl_addr_get_label(a); label && family == AF_INET) i.label = label;
        out.push_back(std::move(i));
    }
    return out;
}

std::vector<RouteInfo> RtnetlinkClient::routes(const std::string& linkName) {
    int index = requireLink(linkName).index;
    nl_cache* raw = nullptr;
    nl::check(rtnl_route_alloc_cache(sock_.get(), AF_UNSPEC, 0, &raw), "link " + linkName + ": dump routes");
    nl::Cache cache(raw);
    std::vector<RouteInfo> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* rt = reinterpret_cast<rtnl_route*>(o);
        if (rtnl_route_get_table(rt) != RT_TABLE_MAIN) continue;
        const int hops = rtnl_route_get_nnexthops(rt);
        for (int i = 0; i < hops; ++i) {
            rtnl_nexthop* nh = rtnl_route_nexthop_n(rt, i);
            if (rtnl_route_nh_get_ifindex(nh) != index) continue;
            int family = rtnl_route_get_family(rt);
            RouteInfo r;
            r.dst = fromNlAddr(rtnl_route_get_dst(rt), family);
            if (nl_addr* gw = rtnl_route_nh_get_gateway(nh); gw && nl_addr_get_len(gw) > 0) {
                r.gateway = fromNlAddr(gw, family).host();
            }
            r.priority = rtnl_route_get_priority(rt);
            r.protocol = rtnl_route_get_protocol(rt);
            r.scope = rtnl_route_get_scope(rt);
            r.type = rtnl_route_get_type(rt);
            r.table = rtnl_route_get_table(rt);
            if (nl_addr* src = rtnl_route_get_pref_src(rt); src && nl_addr_get_len(src) > 0) {
                r.prefsrc = fromNlAddr(src, family).host();
            }
            r.onlink = (rtnl_route_nh_get_flags(nh) & RTNH_F_ONLINK) != 0;
            r.multipath = hops > 1;
            out.push_back(std::move(r));
        }
    }
    return out;
}

bool RtnetlinkClient::addAddress(const std::string& linkName, const AddressInfo& a) {
    const std::string what = "address " + a.str() + " on " + linkName + ": add";
    std::unique_ptr<rtnl_addr, nl::RtAddrDeleter> req(rtnl_addr_alloc());
    if (!req) throw Error(what + ": out of memory");
    rtnl_addr_set_ifindex(req.get(), requireLink(linkName).index);
    auto local = toNlAddr(a.local);
    nl::check(rtnl_addr_set_local(req.get(), local.get()), what);
    rtnl_addr_set_prefixlen(req.get(), a.local.prefixLen);
    rtnl_addr_set_scope(req.get(), a.scope);
    rtnl_addr_set_flags(req.get(), a.requestFlags());
    if (a.broadcast) {
        auto b = toNlAddr(*a.broadcast);
        nl::check(rtnl_addr_set_broadcast(req.get(), b.get()), what);
    }
    if (auto label = relabel(a.label, linkName); !label.empty()) rtnl_addr_set_label(req.get(), label.c_str());
    // libnl takes a prefix length of 0 for none and refuses to build the
    // request ("Missing attribute"): built with 1, the header set to 0 after.
    if (a.local.prefixLen == 0) rtnl_addr_set_prefixlen(req.get(), 1);
    nl_msg* msg = nullptr;
    nl::check(rtnl_addr_build_add_request(req.get(), 0, &msg), what);
    std::unique_ptr<nl_msg, void (*)(nl_msg*)> owned(msg, nlmsg_free);
    static_cast<ifaddrmsg*>(nlmsg_data(nlmsg_hdr(msg)))->ifa_prefixlen = static_cast<uint8_t>(a.local.prefixLen);
    int rc = nl_send_auto(sock_.get(), msg);
    if (rc >= 0) rc = nl_wait_for_ack(sock_.get());
    if (rc == -NLE_EXIST) return false;
    nl::check(rc, what);
    return true;
}

void RtnetlinkClient::deleteAddress(const std::string& linkName, const AddressInfo& a) {
    const std::string what = "address " + a.str() + " on " + linkName + ": delete";
    auto l = link(linkName);
    if (!l) return;
    std::unique_ptr<rtnl_addr, nl::RtAddrDeleter> req(rtnl_addr_alloc());
    if (!req) throw Error(what + ": out of memory");
    rtnl_addr_set_ifindex(req.get(), l->index);
    auto local = toNlAddr(a.local);
    nl::check(rtnl_addr_set_local(req.get(), local.get()), what);
    rtnl_addr_set_prefixlen(req.get(), a.local.prefixLen);
    int rc = rtnl_addr_delete(sock_.get(), req.get(), 0);
    if (gone(rc)) return;
    nl::check(rc, what);
}

namespace {

nl::Route routeRequest(const RouteInfo& r, int ifindex, const std::string& what) {
    nl::Route rt(rtnl_route_alloc());
    if (!rt) throw Error(what + ": out of memory");
    rtnl_route_set_family(rt.get(), static_cast<uint8_t>(r.family()));
    auto dst = toNlAddr(r.dst);
    nl::check(rtnl_route_set_dst(rt.get(), dst.get()), what);
    rtnl_route_set_table(rt.get(), r.table);
    rtnl_route_set_protocol(rt.get(), r.protocol);
    rtnl_route_set_scope(rt.get(), r.scope);
    rtnl_route_set_type(rt.get(), r.type);
    rtnl_route_set_priority(rt.get(), r.priority);
    if (r.prefsrc) {
        auto src = toNlAddr(*r.prefsrc);
        nl::check(rtnl_route_set_pref_src(rt.get(), src.get()), what);
    }
    rtnl_nexthop* nh = rtnl_route_nh_alloc();
    if (!nh) throw Error(what + ": out of memory");
    rtnl_route_nh_set_ifindex(nh, ifindex);
    if (r.gateway) {
        auto via = toNlAddr(*r.gateway);
        rtnl_route_nh_set_gateway(nh, via.get());
    }
    if (r.onlink) rtnl_route_nh_set_flags(nh, RTNH_F_ONLINK);
    rtnl_route_add_nexthop(rt.get(), nh);  // the route owns nh from here
    return rt;
}

}  // namespace

bool RtnetlinkClient::addRoute(const std::string& linkName, const RouteInfo& r) {
    const std::string what = "route " + r.str() + " dev " + linkName + ": add";
    if (r.multipath) throw Error(what + ": one next hop of a multipath route cannot be added alone");
    auto req = routeRequest(r, requireLink(linkName).index, what);
    // Exclusive, as `ip route add`: a route with the same destination and
    // metric on another link is a conflict, never a silent second route.
    int rc = rtnl_route_add(sock_.get(), req.get(), NLM_F_EXCL);
    if (rc == -NLE_EXIST) {
        for (const auto& have : routes(linkName))
            if (have.sameRoute(r)) return false;
    }
    nl::check(rc, what);
    return true;
}

void RtnetlinkClient::deleteRoute(const std::string& linkName, const RouteInfo& r) {
    const std::string what = "route " + r.str() + " dev " + linkName + ": delete";
    if (r.multipath) throw Error(what + ": one next hop of a multipath route cannot be deleted alone");
    auto l = link(linkName);
    if (!l) return;
    auto req = routeRequest(r, l->index, what);
    int rc = rtnl_route_delete(sock_.get(), req.get(), 0);
    if (gone(rc)) return;
    nl::check(rc, what);
}

void RtnetlinkClient::createVeth(const std::string& name, const std::string& peerName, unsigned mtu,
                                 std::optional<int> peerNetnsFd) {
    const std::string what = "veth " + name + "/" + peerName + ": create";
    nl::Link veth(rtnl_link_veth_alloc());
    if (!veth) throw Error(what + ": out of memory");
    nl::Link peer(rtnl_link_veth_get_peer(veth.get()));  // takes a reference
    rtnl_link_set_name(veth.get(), name.c_str());
    rtnl_link_set_mtu(veth.get(), mtu);
    rtnl_link_set_name(peer.get(), peerName.c_str());
    rtnl_link_set_mtu(peer.get(), mtu);
    if (peerNetnsFd) rtnl_link_set_ns_fd(peer.get(), *peerNetnsFd);
    nl::check(rtnl_link_add(sock_.get(), veth.get(), NLM_F_CREATE | NLM_F_EXCL), what);
}

void RtnetlinkClient::deleteLink(const std::string& name) {
    nl::Link l(rtnl_link_alloc());
    if (!l) throw Error("link " + name + ": delete: out of memory");
    rtnl_link_set_name(l.get(), name.c_str());
    int rc = rtnl_link_delete(sock_.get(), l.get());
    if (gone(rc)) return;
    nl::check(rc, "link " + name + ": delete");
}

void RtnetlinkClient::setMac(const std::string& name, const std::string& mac) {
    const std::string what = "set MAC " + mac;
    nl::Link c(rtnl_link_alloc());
    nl_addr* raw = nullptr;
    nl::check(nl_addr_parse(mac.c_str(), AF_LLC, &raw), "link " + name + ": " + what);
    nl::Addr addr(raw);
    rtnl_link_set_addr(c.get(), addr.get());
    change(name, what, c.get());
}

void RtnetlinkClient::setMtu(const std::string& name, unsigned mtu) {
    nl::Link c(rtnl_link_alloc());
    rtnl_link_set_mtu(c.get(), mtu);
    change(name, "set MTU " + std::to_string(mtu), c.get());
}

void RtnetlinkClient::setUp(const std::string& name, bool up) {
    nl::Link c(rtnl_link_alloc());
    if (up) {
        rtnl_link_set_flags(c.get(), IFF_UP);
    } else {
        rtnl_link_unset_flags(c.get(), IFF_UP);
    }
    change(name, up ? "set up" : "set down", c.get());
}

void RtnetlinkClient::setIpv6AddrGenMode(const std::string& name, uint8_t mode) {
    const std::string what = "addrgenmode " + std::to_string(mode);
    nl::Link g(rtnl_link_alloc());
    nl::check(rtnl_link_inet6_set_addr_gen_mode(g.get(), mode), "link " + name + ": " + what);
    change(name, what, g.get());
}

std::optional<LinkInfo> RtnetlinkClient::linkHolding(const IpPrefix& address) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_addr_alloc_cache(sock_.get(), &raw), "addresses: dump");
    nl::Cache cache(raw);
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        int family = rtnl_addr_get_family(a);
        if (family != address.family || !rtnl_addr_get_local(a)) continue;
        if (fromNlAddr(rtnl_addr_get_local(a), family).host() == address.host()) return link(rtnl_addr_get_ifindex(a));
    }
    return std::nullopt;
}

std::map<std::string, std::string> RtnetlinkClient::resolvedNeighbours(const std::string& linkName) {
    int index = requireLink(linkName).index;
    nl_cache* raw = nullptr;
    nl::check(rtnl_neigh_alloc_cache(sock_.get(), &raw), "neighbour table of " + linkName + ": dump");
    nl::Cache cache(raw);
    std::map<std::string, std::string> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* n = reinterpret_cast<rtnl_neigh*>(o);
        if (rtnl_neigh_get_ifindex(n) != index) continue;
        int state = rtnl_neigh_get_state(n);
        if (state == NUD_NONE || (state & (NUD_INCOMPLETE | NUD_FAILED))) continue;
        nl_addr* dst = rtnl_neigh_get_dst(n);
        nl_addr* lladdr = rtnl_neigh_get_lladdr(n);
        int family = dst ? nl_addr_get_family(dst) : AF_UNSPEC;
        if ((family != AF_INET && family != AF_INET6) || !lladdr || nl_addr_get_len(lladdr) != 6) continue;
        out[fromNlAddr(dst, family).addressString()] = nl::toString(lladdr);
    }
    return out;
}

void RtnetlinkClient::setNoArp(const std::string& name) {
    nl::Link c(rtnl_link_alloc());
    rtnl_link_set_flags(c.get(), IFF_NOARP);
    change(name, "set noarp", c.get());
}

void RtnetlinkClient::setNomaster(const std::string& name) {
    nl::Link c(rtnl_link_alloc());
    rtnl_link_set_master(c.get(), 0);
    change(name, "nomaster", c.get());
}

}  // namespace kovs
