#include "tunnel/Underlay.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "base/Error.hpp"
#include "base/IpPrefix.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/UniqueFd.hpp"
#include "peers/Peer.hpp"

namespace kovs::tunnel {

NarrowestPath narrowestPath(const std::map<std::string, PeerPath>& paths) {
    NarrowestPath out;
    for (const auto& [ip, p] : paths) {
        if (p.mtu && (out.mtu == 0 || p.mtu < out.mtu)) out = {ip, p.mtu};
    }
    return out;
}

RtnetlinkClient& KernelUnderlay::rtnl() {
    if (!rtnl_) rtnl_.emplace();
    return *rtnl_;
}

std::map<std::string, std::string> KernelUnderlay::resolved(const std::string& ifname) {
    return rtnl().resolvedNeighbours(ifname);
}

PeerPath KernelUnderlay::pathTo(const std::string& ip) {
    PeerPath path;
    try {
        auto route = rtnl().routeTo(IpPrefix::parse(ip));
        if (route.error != 0) {
            path.problem = std::string("the kernel has no route to it: ") + std::strerror(route.error);
        } else if (route.type == RTN_LOCAL) {
            path.problem = "it is an address of this node";
        } else if (!route.found()) {
            path.problem = "the kernel's route to it is not a unicast route (type " + std::to_string(route.type) + ")";
        } else {
            if (route.gateway) path.gateway = route.gateway->addressString();
            auto dev = rtnl().link(route.ifindex);
            path.device = dev ? dev->name : "ifindex " + std::to_string(route.ifindex);
            path.mtu = route.mtu ? route.mtu : (dev ? dev->mtu : 0);
        }
    } catch (const std::exception& e) {
        path.problem = e.what();
        rtnl_.reset();  // a reply left half-read on the socket must not answer the next request
    }
    return path;
}

std::vector<AddressInfo> KernelUnderlay::addresses(const std::string& ifname) {
    try {
        if (!rtnl().link(ifname)) throw Error("no interface " + ifname);
        return rtnl().addresses(ifname);
    } catch (const Error&) {
        rtnl_.reset();
        throw;
    }
}

void KernelUnderlay::setAddress(const std::string& ifname, const AddressInfo& a, bool present) {
    try {
        if (present) {
            rtnl().addAddress(ifname, a);
        } else {
            rtnl().deleteAddress(ifname, a);
        }
    } catch (const Error&) {
        rtnl_.reset();
        throw;
    }
}

void KernelUnderlay::trigger(const std::string& ip) {
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
