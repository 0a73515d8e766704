#include "tunnel/NeighbourTable.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/Error.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/UniqueFd.hpp"
#include "peers/Peer.hpp"

namespace kovs::tunnel {

std::map<std::string, std::string> KernelNeighbourTable::resolved(const std::string& ifname) {
    return RtnetlinkClient().resolvedNeighbours(ifname);
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
