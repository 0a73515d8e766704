#pragma once
// Requests to the kernel's routing netlink (libnl-route-3) in plain values:
// links, addresses and routes as the uplink (and any job that moves or
// restores them) reads and writes them, and the ids of other network
// namespaces (how a veth names the namespace of its peer). Every failure is
// a kovs::Error that names the object and the operation ("address
// 172.31.0.2/24 on br-phy: add: Object exists"). Removals of something that is already gone succeed, and so
// do additions of something already there: each request means "make it so",
// which keeps an unwinding or a repeated plan from failing on its own effects.
//
// Every rtnetlink request of kovs goes through this client (or, for gw0's
// guard, whose steps keep a tight loop of their own, through its socket()).
// Not for notifications (NetlinkWatcher, RtnetlinkSubscription).
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "base/Netlink.hpp"

namespace kovs {

struct LinkInfo {
    int index = 0;
    std::string name;
    std::string mac;       // "aa:bb:cc:dd:ee:ff"; "" when the link has none
    unsigned mtu = 0;
    unsigned flags = 0;    // IFF_*
    int master = 0;        // ifindex of the bridge/bond it is enslaved to, 0 for none
    int peer = 0;          // IFLA_LINK: a veth's peer ifindex, 0 when unknown
    // IFLA_LINK_NETNSID: the namespace of a veth's peer, as netnsId() names
    // it; none when the peer is in this namespace.
    std::optional<int32_t> peerNetnsId;
    std::string kind;      // "veth", "bridge", "tun", ... ("" for a plain device)
    bool up() const { return (flags & IFF_UP) != 0; }
    bool noArp() const { return (flags & IFF_NOARP) != 0; }
};

struct AddressInfo {
    IpPrefix local;                     // address and prefix length
    uint8_t scope = RT_SCOPE_UNIVERSE;  // RT_SCOPE_*
    uint32_t flags = 0;                 // IFA_F_* as the kernel reports them
    std::optional<IpPrefix> broadcast;  // IPv4 only, when set
    std::string label;                  // IPv4 only ("eth0", "eth0:1")

    int family() const { return local.family; }
    // The flags a request may carry (the kernel computes the others:
    // permanent, secondary, tentative, ...).
    uint32_t requestFlags() const;
    std::string str() const { return local.str(); }
    bool sameAddress(const AddressInfo& o) const { return local == o.local; }
    bool operator==(const AddressInfo&) const = default;
};

struct RouteInfo {
    IpPrefix dst;                         // 0.0.0.0/0 or ::/0 for the default route
    std::optional<IpPrefix> gateway;      // a host prefix (/32, /128)
    uint32_t priority = 0;                // the metric
    uint8_t protocol = RTPROT_BOOT;       // RTPROT_*
    uint8_t scope = RT_SCOPE_UNIVERSE;    // RT_SCOPE_*
    uint8_t type = RTN_UNICAST;           // RTN_*
    uint32_t table = RT_TABLE_MAIN;
    std::optional<IpPrefix> prefsrc;      // a host prefix
    bool onlink = false;                  // RTNH_F_ONLINK on its next hop
    // One next hop of a multipath route: routes() gives one RouteInfo per
    // next hop through the link. Such a route is seen, never added or
    // deleted by next hop (deleteRoute refuses it).
    bool multipath = false;

    int family() const { return dst.family; }
    // "default via 172.31.0.1 metric 50 proto static", as `ip route` spells it.
    std::string str() const;
    // The route the kernel means by dst/gateway/metric in one table.
    bool sameRoute(const RouteInfo& o) const {
        return dst == o.dst && gateway == o.gateway && priority == o.priority && table == o.table;
    }
    bool operator==(const RouteInfo&) const = default;
};

// How the kernel would send a packet to one address (RTM_GETROUTE): the
// route its lookup picked, or the errno of its "no route".
struct RouteLookup {
    int error = 0;                     // ENETUNREACH, EHOSTUNREACH (unreachable), EACCES (prohibit), EINVAL (blackhole)
    uint8_t type = RTN_UNICAST;        // RTN_LOCAL for an address of this host
    int ifindex = 0;                   // the device it goes out of
    std::optional<IpPrefix> gateway;   // the next hop's address; none: on-link
    std::optional<IpPrefix> source;    // the source address the kernel would pick
    unsigned mtu = 0;                  // the route's MTU metric; 0: the device's
    bool found() const { return error == 0 && type == RTN_UNICAST && ifindex > 0; }
};

class RtnetlinkClient {
public:
    // Connects a NETLINK_ROUTE socket in the calling thread's network namespace.
    RtnetlinkClient();

    std::optional<LinkInfo> link(const std::string& name);
    std::optional<LinkInfo> link(int index);
    // Throws kovs::Error ("link eth0: no such device") when it does not exist.
    LinkInfo requireLink(const std::string& name);
    // Every link of the namespace (one dump).
    std::vector<LinkInfo> links();

    // Every address of the link, in the kernel's order (IPv4 primary first,
    // IPv6 newest first).
    std::vector<AddressInfo> addresses(const std::string& link);
    // Routes of the main table with a next hop through the link: one
    // RouteInfo per such next hop (`multipath` set when the route has others).
    std::vector<RouteInfo> routes(const std::string& link);

    // Returns false when the address was there already.
    bool addAddress(const std::string& link, const AddressInfo& a);
    void deleteAddress(const std::string& link, const AddressInfo& a);
    // Exclusive, as `ip route add`. Returns false when the same route
    // (RouteInfo::sameRoute) was there already.
    bool addRoute(const std::string& link, const RouteInfo& r);
    void deleteRoute(const std::string& link, const RouteInfo& r);

    // Both ends down, at `mtu`; the peer end in the network namespace
    // `peerNetnsFd` refers to when given (a pod's), else in this one.
    void createVeth(const std::string& name, const std::string& peer, unsigned mtu, std::optional<int> peerNetnsFd = std::nullopt);
    void deleteLink(const std::string& name);
    void setMac(const std::string& name, const std::string& mac);
    void setMtu(const std::string& name, unsigned mtu);
    void setUp(const std::string& name, bool up);
    void setNoArp(const std::string& name);
    void setNomaster(const std::string& name);
    // IN6_ADDR_GEN_MODE_*: how the kernel makes the link's IPv6 link-local
    // when it goes up.
    void setIpv6AddrGenMode(const std::string& name, uint8_t mode);

    // The link that holds `address` (compared without the prefix length), if any.
    std::optional<LinkInfo> linkHolding(const IpPrefix& address);
    // The neighbours of `link` the kernel resolved (neither incomplete nor
    // failed), by IP address ("172.18.0.3", "fc00::3"): their MAC.
    std::map<std::string, std::string> resolvedNeighbours(const std::string& link);

    // The id this network namespace has given the one `netnsFd` refers to
    // (RTM_GETNSID), i.e. what IFLA_LINK_NETNSID of a veth leading there
    // reads; none when it has given it no id (no link of ours leads there).
    std::optional<int32_t> netnsId(int netnsFd);
    // The route the kernel would take to `address` (a host address), with
    // its next hop; a lookup the kernel answers with "no route" is a
    // RouteLookup with `error` set, any other failure throws.
    RouteLookup routeTo(const IpPrefix& address);

    nl_sock* socket() { return sock_.get(); }
    // The socket's netlink port: what a subscriber sees as the sender of the
    // notifications this client's own requests cause.
    uint32_t localPort() const;

private:
    nl::Link linkObject(const std::string& name, const std::string& what);
    void change(const std::string& name, const std::string& what, rtnl_link* changes);

    nl::Sock sock_;
};

// IpPrefix <-> libnl addresses; a host prefix when libnl has no length.
IpPrefix fromNlAddr(const nl_addr* a, int family);
nl::Addr toNlAddr(const IpPrefix& p);
// Stricter than fromNlAddr, for dumps that hold more than IP (a route's next
// hop may be absent or of another family): none for anything but a
// well-formed IPv4/IPv6 address. libnl's empty address (a default route's
// destination) is the family's /0.
std::optional<IpPrefix> ipFromNlAddr(const nl_addr* a);

}  // namespace kovs
