#pragma once
// Subscribes to rtnetlink link, IPv4/IPv6 address and route notifications on a
// non-blocking socket driven by the EventLoop, and reports only those about
// one interface. Every message is matched on its fixed header (ifindex, or
// RTA_OIF / IFLA_IFNAME for routes and links) in the receive buffer, with no
// allocation and no libnl object parsing, so a storm of route changes on
// other interfaces costs little more than the recv() calls.
#include <sys/types.h>

#include <atomic>
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
    ~NetlinkWatcher();
    NetlinkWatcher(const NetlinkWatcher&) = delete;
    NetlinkWatcher& operator=(const NetlinkWatcher&) = delete;

    // The interface's current index; 0 while it does not exist (then only a
    // link message carrying its name is relevant).
    void setIfindex(int ifindex) { ifindex_ = ifindex; }
    // Notifications caused by requests from this netlink port (our own repairs)
    // are not news and are discarded.
    void ignoreSender(uint32_t portid) { ignoredPort_ = portid; }

    // Thread-safe snapshot (metrics read it from other threads).
    Counters counters() const {
        return {relevant_.load(std::memory_order_relaxed), discarded_.load(std::memory_order_relaxed),
                overflows_.load(std::memory_order_relaxed)};
    }

private:
    void onReadable();

    EventLoop& loop_;
    std::string ifname_;
    std::function<void()> onChange_;
    nl::Sock sock_;
    int fd_ = -1;
    int ifindex_ = 0;
    uint32_t ignoredPort_ = 0;
    std::vector<char> buf_;
    std::atomic<uint64_t> relevant_{0}, discarded_{0}, overflows_{0};
};

}  // namespace kovs
