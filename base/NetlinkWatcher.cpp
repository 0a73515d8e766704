#include "base/NetlinkWatcher.hpp"

#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "base/Error.hpp"

namespace kovs {
namespace {

// Large enough that a flush of thousands of routes does not overflow between
// two wake-ups of a busy loop; needs CAP_NET_ADMIN to exceed rmem_max.
constexpr int kRcvBuf = 8 << 20;

}  // namespace

// NLMSG_OK/NLMSG_NEXT compare signed and unsigned lengths (clang -Wsign-compare).
bool netlinkMessageFits(const nlmsghdr* h, size_t left) {
    return left >= sizeof(nlmsghdr) && h->nlmsg_len >= sizeof(nlmsghdr) && h->nlmsg_len <= left;
}

const nlmsghdr* nextNetlinkMessage(const nlmsghdr* h, size_t& left) {
    size_t step = std::min<size_t>(NLMSG_ALIGN(h->nlmsg_len), left);
    left -= step;
    return reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(h) + step);
}

RtnetlinkSubscription::RtnetlinkSubscription(EventLoop& loop, std::string what, const std::vector<int>& groups,
                                             std::function<void(const nlmsghdr*)> onMessage,
                                             std::function<void(bool overflowed)> onDrained)
    : loop_(loop), what_(std::move(what)), onMessage_(std::move(onMessage)), onDrained_(std::move(onDrained)) {
    sock_.reset(nl_socket_alloc());
    if (!sock_) throw Error(what_ + ": nl_socket_alloc: out of memory");
    nl_socket_disable_seq_check(sock_.get());
    nl::check(nl_connect(sock_.get(), NETLINK_ROUTE), what_ + ": connect");
    for (int g : groups) nl::check(nl_socket_add_memberships(sock_.get(), g, 0), what_ + ": join group " + std::to_string(g));
    nl::check(nl_socket_set_nonblocking(sock_.get()), what_ + ": set non-blocking");
    fd_ = nl_socket_get_fd(sock_.get());
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &kRcvBuf, sizeof kRcvBuf) < 0)
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &kRcvBuf, sizeof kRcvBuf);
    loop_.watch(fd_, EPOLLIN, [this](uint32_t) { onReadable(); });
}

RtnetlinkSubscription::~RtnetlinkSubscription() { loop_.unwatch(fd_); }

void RtnetlinkSubscription::onReadable() {
    // One receive buffer for every subscription of this thread (the loop's):
    // each is drained before the next is read, and the messages are handed
    // out before the next recv(). 64 KiB each, zeroed, would be resident in
    // every job that listens (the gateway, offload and uplink jobs).
    thread_local std::vector<char> buf(64 * 1024);
    bool overflowed = false;
    while (true) {
        ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == ENOBUFS) {
                overflowed = true;
                continue;
            }
            throwErrno(what_ + ": recv");
        }
        size_t left = static_cast<size_t>(n);
        for (auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); netlinkMessageFits(h, left);
             h = nextNetlinkMessage(h, left))
            onMessage_(h);
    }
    onDrained_(overflowed);
}

NetlinkWatcher::NetlinkWatcher(EventLoop& loop, std::string ifname, std::function<void()> onChange)
    : ifname_(std::move(ifname)), onChange_(std::move(onChange)),
      subscription_(
          loop, "netlink watcher for " + ifname_,
          {RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE},
          [this](const nlmsghdr* h) {
              bool hit = concernsInterface(h, {ifindex_, ifname_, ignoredPort_});
              ++(hit ? counters_.relevant : counters_.discarded);
              hit_ |= hit;
          },
          [this](bool overflowed) {
              counters_.overflows += overflowed ? 1 : 0;
              bool changed = hit_ || overflowed;  // after an overflow only a full reconcile can tell
              hit_ = false;
              if (changed) onChange_();
          }) {}

bool concernsInterface(const nlmsghdr* h, const NetlinkInterest& interest) {
    const int ifindex = interest.ifindex;
    if (interest.ignoredPort != 0 && h->nlmsg_pid == interest.ignoredPort) return false;
    switch (h->nlmsg_type) {
    case RTM_NEWLINK:
    case RTM_DELLINK: {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg))) return false;
        auto* ifi = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
        if (ifindex != 0 && ifi->ifi_index == ifindex) return true;
        // A link with our name but a new index: gw0 re-created.
        auto name = linkMessageName(h);
        return !name.empty() && name == interest.name;
    }
    case RTM_NEWADDR:
    case RTM_DELADDR: {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(ifaddrmsg))) return false;
        auto* ifa = static_cast<const ifaddrmsg*>(NLMSG_DATA(h));
        return ifindex != 0 && static_cast<int>(ifa->ifa_index) == ifindex;
    }
    case RTM_NEWROUTE:
    case RTM_DELROUTE: {
        if (ifindex == 0 || h->nlmsg_len < NLMSG_LENGTH(sizeof(rtmsg))) return false;
        auto* rtm = static_cast<const rtmsg*>(NLMSG_DATA(h));
        int len = static_cast<int>(RTM_PAYLOAD(h));
        for (auto* a = RTM_RTA(rtm); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
            if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(int)) {
                int oif;
                std::memcpy(&oif, RTA_DATA(a), sizeof oif);
                if (oif == ifindex) return true;
            } else if (a->rta_type == RTA_MULTIPATH) {
                auto* nh = static_cast<const rtnexthop*>(RTA_DATA(a));
                int left = static_cast<int>(RTA_PAYLOAD(a));
                while (left >= static_cast<int>(sizeof(rtnexthop)) && nh->rtnh_len >= sizeof(rtnexthop) &&
                       nh->rtnh_len <= left) {
                    if (nh->rtnh_ifindex == ifindex) return true;
                    left -= RTNH_ALIGN(nh->rtnh_len);
                    nh = RTNH_NEXT(nh);
                }
            }
        }
        return false;
    }
    default:
        return false;
    }
}

std::string_view linkMessageName(const nlmsghdr* h) {
    if ((h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK) || h->nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg)))
        return {};
    auto* ifi = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
    int len = static_cast<int>(IFLA_PAYLOAD(h));
    for (auto* a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type != IFLA_IFNAME) continue;
        const char* data = static_cast<const char*>(RTA_DATA(a));
        return {data, strnlen(data, RTA_PAYLOAD(a))};
    }
    return {};
}

}  // namespace kovs
