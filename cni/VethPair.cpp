#include "cni/VethPair.hpp"

#include <linux/if_link.h>
#include <netlink/route/link/inet6.h>
#include <netlink/route/link/veth.h>
#include <net/if.h>

#include <cstdio>

#include "base/Error.hpp"
#include "base/Netlink.hpp"
#include "base/HostVeth.hpp"
#include "base/Netns.hpp"

namespace kovs::cni {
namespace {

std::string macOf(nl_sock* sock, const std::string& name) {
    rtnl_link* raw = nullptr;
    nl::check(rtnl_link_get_kernel(sock, 0, name.c_str(), &raw), "link " + name + ": get");
    nl::Link link(raw);
    nl_addr* mac = rtnl_link_get_addr(link.get());
    if (!mac) throw Error("link " + name + ": no MAC address");
    return nl::toString(mac);
}

void setUp(nl_sock* sock, const std::string& name) {
    rtnl_link* raw = nullptr;
    nl::check(rtnl_link_get_kernel(sock, 0, name.c_str(), &raw), "link " + name + ": get");
    nl::Link current(raw);
    nl::Link change(rtnl_link_alloc());
    rtnl_link_set_flags(change.get(), IFF_UP);
    nl::check(rtnl_link_change(sock, current.get(), change.get(), 0), "link " + name + ": set up");
}

// The pod end's IPv6 link-local from its MAC (modified EUI-64), whatever
// the namespace's default (stable_privacy, random): the flow table knows a
// pod's link-local only from its MAC, and drops other sources.
void setEui64LinkLocal(nl_sock* sock, const std::string& name) {
    rtnl_link* raw = nullptr;
    nl::check(rtnl_link_get_kernel(sock, 0, name.c_str(), &raw), "link " + name + ": get");
    nl::Link current(raw);
    nl::Link change(rtnl_link_alloc());
    nl::check(rtnl_link_inet6_set_addr_gen_mode(change.get(), IN6_ADDR_GEN_MODE_EUI64), "link " + name + ": addrgenmode eui64");
    nl::check(rtnl_link_change(sock, current.get(), change.get(), 0), "link " + name + ": addrgenmode eui64");
}

}  // namespace

std::string VethPair::hostNameFor(const std::string& containerId, const std::string& ifname) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
    for (unsigned char c : containerId + '\0' + ifname) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, "kovs%011llx", static_cast<unsigned long long>(h & 0xfffffffffffULL));
    return buf;
}

VethEnds VethPair::create(const std::string& hostName, const std::string& podNetns, const std::string& podIfname, int mtu,
                          bool ipv6) {
    auto what = "veth " + hostName + " <-> " + podNetns + ":" + podIfname;
    auto nsFd = Netns::open(podNetns);
    auto sock = nl::connectRoute();

    nl::Link veth(rtnl_link_veth_alloc());
    if (!veth) throw Error(what + ": out of memory");
    nl::Link peer(rtnl_link_veth_get_peer(veth.get()));  // takes a reference
    rtnl_link_set_name(veth.get(), hostName.c_str());
    rtnl_link_set_mtu(veth.get(), static_cast<unsigned>(mtu));
    rtnl_link_set_name(peer.get(), podIfname.c_str());
    rtnl_link_set_mtu(peer.get(), static_cast<unsigned>(mtu));
    rtnl_link_set_ns_fd(peer.get(), nsFd.get());
    // libnl 3.7 cannot carry IFF_UP in a veth NEWLINK (the kernel rejects the
    // request), so both ends are brought up afterwards.
    nl::check(rtnl_link_add(sock.get(), veth.get(), NLM_F_CREATE | NLM_F_EXCL), what + ": create");

    VethEnds ends{hostName, "", podIfname, ""};
    try {
        ends.hostMac = macOf(sock.get(), hostName);
        isolateHostVeth(hostName);  // no ARP, no IPv6: the end is OVS's alone
        setUp(sock.get(), hostName);
        Netns in(podNetns);
        auto podSock = nl::connectRoute();
        ends.podMac = macOf(podSock.get(), podIfname);
        if (ipv6) setEui64LinkLocal(podSock.get(), podIfname);  // before up: the link-local is made then
        setUp(podSock.get(), podIfname);
    } catch (...) {
        remove(hostName);
        throw;
    }
    return ends;
}

bool VethPair::exists(const std::string& hostName) {
    auto sock = nl::connectRoute();
    rtnl_link* raw = nullptr;
    int rc = rtnl_link_get_kernel(sock.get(), 0, hostName.c_str(), &raw);
    nl::Link link(raw);
    if (rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND) return false;
    nl::check(rc, "link " + hostName + ": get");
    return true;
}

bool VethPair::remove(const std::string& hostName) {
    auto sock = nl::connectRoute();
    nl::Link link(rtnl_link_alloc());
    rtnl_link_set_name(link.get(), hostName.c_str());
    int rc = rtnl_link_delete(sock.get(), link.get());
    if (rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND) return false;
    nl::check(rc, "veth " + hostName + ": delete");
    return true;
}

}  // namespace kovs::cni
