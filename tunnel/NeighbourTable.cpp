#include "tunnel/NeighbourTable.hpp"

#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/Error.hpp"
#include "base/Netlink.hpp"
#include "base/UniqueFd.hpp"
#include "peers/Peer.hpp"

namespace kovs::tunnel {

std::map<std::string, std::string> KernelNeighbourTable::resolved(const std::string& ifname) {
    unsigned ifindex = ::if_nametoindex(ifname.c_str());
    if (ifindex == 0) throwErrno("neighbour table of " + ifname + ": interface lookup");
    auto sock = nl::connectRoute();
    nl_cache* raw = nullptr;
    nl::check(rtnl_neigh_alloc_cache(sock.get(), &raw), "neighbour table of " + ifname + ": dump");
    nl::Cache cache(raw);
    std::map<std::string, std::string> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* n = reinterpret_cast<rtnl_neigh*>(o);
        if (rtnl_neigh_get_ifindex(n) != static_cast<int>(ifindex)) continue;
        int state = rtnl_neigh_get_state(n);
        if (state == NUD_NONE || (state & (NUD_INCOMPLETE | NUD_FAILED))) continue;
        nl_addr* dst = rtnl_neigh_get_dst(n);
        nl_addr* lladdr = rtnl_neigh_get_lladdr(n);
        if (!dst || !lladdr || nl_addr_get_len(lladdr) != 6) continue;
        char ip[INET6_ADDRSTRLEN];
        if (!::inet_ntop(nl_addr_get_family(dst), nl_addr_get_binary_addr(dst), ip, sizeof ip)) continue;
        auto* b = static_cast<const uint8_t*>(nl_addr_get_binary_addr(lladdr));
        char mac[18];
        std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
        out[ip] = mac;
    }
    return out;
}

void KernelNeighbourTable::trigger(const std::string& ip) {
    sockaddr_storage ss{};
    socklen_t len;
    int family;
    if (auto* v4 = reinterpret_cast<sockaddr_in*>(&ss); ::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = family = AF_INET;
        v4->sin_port = htons(9);
        len = sizeof *v4;
    } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss); ::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = family = AF_INET6;
        v6->sin6_port = htons(9);
        len = sizeof *v6;
    } else {
        throw Error("resolve neighbour " + ip + ": not an IP address");
    }
    UniqueFd fd(::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throwErrno("resolve neighbour " + ip + ": socket");
    // Errors (no route yet, queue full) just mean no resolution this round;
    // the reconciler retries.
    [[maybe_unused]] auto n = ::sendto(fd.get(), "", 0, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&ss), len);
}

}  // namespace kovs::tunnel
