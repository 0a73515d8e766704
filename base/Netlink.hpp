#pragma once
// RAII ownership for libnl-3 / libnl-route-3 objects, shared by every module
// that speaks rtnetlink (gateway guard, uplink, CNI veths, neighbours).
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>

#include <memory>
#include <string>

#include "base/Error.hpp"

namespace kovs::nl {

struct SockDeleter { void operator()(nl_sock* s) const { nl_socket_free(s); } };
struct CacheDeleter { void operator()(nl_cache* c) const { nl_cache_free(c); } };
struct AddrDeleter { void operator()(nl_addr* a) const { nl_addr_put(a); } };
struct LinkDeleter { void operator()(rtnl_link* l) const { rtnl_link_put(l); } };
struct RtAddrDeleter { void operator()(rtnl_addr* a) const { rtnl_addr_put(a); } };
struct RouteDeleter { void operator()(rtnl_route* r) const { rtnl_route_put(r); } };
struct NeighDeleter { void operator()(rtnl_neigh* n) const { rtnl_neigh_put(n); } };

using Sock = std::unique_ptr<nl_sock, SockDeleter>;
using Cache = std::unique_ptr<nl_cache, CacheDeleter>;
using Addr = std::unique_ptr<nl_addr, AddrDeleter>;
using Link = std::unique_ptr<rtnl_link, LinkDeleter>;
using RtAddr = std::unique_ptr<rtnl_addr, RtAddrDeleter>;
using Route = std::unique_ptr<rtnl_route, RouteDeleter>;
using Neigh = std::unique_ptr<rtnl_neigh, NeighDeleter>;

// libnl returns negative NLE_* codes; this turns one into an Error naming the operation.
inline void check(int rc, const std::string& what) {
    if (rc < 0) throw Error(what + ": " + nl_geterror(rc));
}

// A connected NETLINK_ROUTE socket (for requests, not notifications).
inline Sock connectRoute() {
    Sock s(nl_socket_alloc());
    if (!s) throw Error("nl_socket_alloc: out of memory");
    check(nl_connect(s.get(), NETLINK_ROUTE), "netlink connect NETLINK_ROUTE");
    return s;
}

// Parses "10.0.0.1/24", "fd00::1" (family AF_UNSPEC: either).
inline Addr parseAddr(const std::string& text, int family = AF_UNSPEC) {
    nl_addr* a = nullptr;
    check(nl_addr_parse(text.c_str(), family, &a), "parse address '" + text + "'");
    return Addr(a);
}

inline std::string toString(const nl_addr* a) {
    char buf[128];
    return nl_addr2str(a, buf, sizeof buf);
}

}  // namespace kovs::nl
