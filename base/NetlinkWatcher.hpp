#pragma once
// rtnetlink notifications on the EventLoop: RtnetlinkSubscription is the one
// notification socket kovs has (joins multicast groups, drains on each
// wake-up, reports lost notifications); NetlinkWatcher uses it for link,
// IPv4/IPv6 address and route notifications and reports only those about
// one interface. Every message is matched on its fixed header (ifindex, or
// RTA_OIF / IFLA_IFNAME for routes and links) in the receive buffer, with no
// allocation and no libnl object parsing, so a storm of route changes on
// other interfaces costs little more than the recv() calls.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/Netlink.hpp"

namespace kovs {

// Walks a buffer of netlink messages without the sign-mixing NLMSG_* macros.
bool netlinkMessageFits(const struct nlmsghdr* h, size_t left);
const struct nlmsghdr* nextNetlinkMessage(const struct nlmsghdr* h, size_t& left);

// Whether one rtnetlink message (already known to fit its buffer) is about
// the interface: link messages by index or IFLA_IFNAME, address messages by
// index, route messages by RTA_OIF or a multipath next hop. ifindex 0 means
// the interface does not exist yet (only a link message with its name counts).
// Messages sent in answer to requests of `ignoredPort` (0: none) never count.
struct NetlinkInterest {
    int ifindex = 0;
    std::string_view name;
    uint32_t ignoredPort = 0;
};
bool concernsInterface(const struct nlmsghdr* h, const NetlinkInterest& interest);
// IFLA_IFNAME of an RTM_NEWLINK/RTM_DELLINK message; empty for any other.
std::string_view linkMessageName(const struct nlmsghdr* h);

// A non-blocking rtnetlink socket joined to `groups` (RTNLGRP_*) and watched
// by the loop. On each wake-up every message received is handed to
// `onMessage`, then, once the socket is drained, `onDrained(overflowed)`
// runs; `overflowed` means the kernel dropped notifications (ENOBUFS) and
// only a full look can tell what changed. `what` names it in errors.
class RtnetlinkSubscription {
public:
    RtnetlinkSubscription(EventLoop& loop, std::string what, const std::vector<int>& groups,
                          std::function<void(const struct nlmsghdr*)> onMessage,
                          std::function<void(bool overflowed)> onDrained);
    ~RtnetlinkSubscription();
    RtnetlinkSubscription(const RtnetlinkSubscription&) = delete;
    RtnetlinkSubscription& operator=(const RtnetlinkSubscription&) = delete;

private:
    void onReadable();

    EventLoop& loop_;
    std::string what_;
    std::function<void(const struct nlmsghdr*)> onMessage_;
    std::function<void(bool)> onDrained_;
    nl::Sock sock_;
    int fd_ = -1;
};

class NetlinkWatcher {
public:
    struct Counters {
        uint64_t relevant = 0;   // messages about the watched interface
        uint64_t discarded = 0;  // messages about other interfaces or our own requests
        uint64_t overflows = 0;  // ENOBUFS: the kernel dropped notifications
    };

    // `onChange` runs at most once per socket wake-up, after the socket is
    // drained, when at least one message was about the interface or when
    // notifications were lost (overflow).
    NetlinkWatcher(EventLoop& loop, std::string ifname, std::function<void()> onChange);

    // The interface's current index; 0 while it does not exist (then only a
    // link message carrying its name is relevant).
    void setIfindex(int ifindex) { ifindex_ = ifindex; }
    // Notifications caused by requests from this netlink port (our own repairs)
    // are not news and are discarded.
    void ignoreSender(uint32_t portid) { ignoredPort_ = portid; }

    Counters counters() const { return counters_; }

private:
    std::string ifname_;
    std::function<void()> onChange_;
    int ifindex_ = 0;
    uint32_t ignoredPort_ = 0;
    bool hit_ = false;  // this wake-up saw a relevant message
    Counters counters_;
    RtnetlinkSubscription subscription_;  // last: its callbacks use the members above
};

}  // namespace kovs
