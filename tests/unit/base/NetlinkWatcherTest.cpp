// The netlink event filter of NetlinkWatcher, on hand-built messages.
#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <cstring>
#include <vector>

#include "base/NetlinkWatcher.hpp"

using namespace kovs;

namespace {

// Builds one rtnetlink message: header, fixed part, then attributes.
class MessageBuilder {
public:
    MessageBuilder(uint16_t type, const void* fixed, size_t fixedLen, uint32_t pid = 0) : buf_(NLMSG_SPACE(fixedLen)) {
        hdr()->nlmsg_type = type;
        hdr()->nlmsg_pid = pid;
        std::memcpy(NLMSG_DATA(hdr()), fixed, fixedLen);
        hdr()->nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(fixedLen));
    }
    MessageBuilder& attr(uint16_t type, const void* data, size_t len) {
        size_t at = NLMSG_ALIGN(hdr()->nlmsg_len);
        buf_.resize(at + RTA_SPACE(len));
        auto* a = reinterpret_cast<rtattr*>(buf_.data() + at);
        a->rta_type = type;
        a->rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
        std::memcpy(RTA_DATA(a), data, len);
        hdr()->nlmsg_len = static_cast<uint32_t>(at + RTA_LENGTH(len));
        return *this;
    }
    const nlmsghdr* msg() { return hdr(); }

private:
    nlmsghdr* hdr() { return reinterpret_cast<nlmsghdr*>(buf_.data()); }
    std::vector<char> buf_;
};

}  // namespace

TEST(NetlinkFilter, MatchesOnlyTheWatchedInterface) {
    NetlinkInterest gw{7, "gw0", 0};
    ifaddrmsg ifa{};
    ifa.ifa_family = AF_INET;
    ifa.ifa_index = 7;
    EXPECT_TRUE(concernsInterface(MessageBuilder(RTM_DELADDR, &ifa, sizeof ifa).msg(), gw));
    ifa.ifa_index = 8;
    EXPECT_FALSE(concernsInterface(MessageBuilder(RTM_DELADDR, &ifa, sizeof ifa).msg(), gw));

    rtmsg rtm{};
    rtm.rtm_family = AF_INET;
    int oif = 7, other = 9;
    EXPECT_TRUE(concernsInterface(MessageBuilder(RTM_DELROUTE, &rtm, sizeof rtm).attr(RTA_OIF, &oif, sizeof oif).msg(), gw));
    EXPECT_FALSE(concernsInterface(MessageBuilder(RTM_NEWROUTE, &rtm, sizeof rtm).attr(RTA_OIF, &other, sizeof other).msg(), gw));
    EXPECT_FALSE(concernsInterface(MessageBuilder(RTM_NEWROUTE, &rtm, sizeof rtm).msg(), gw));  // no oif at all

    // Multipath: the second next hop is gw0.
    char mp[2 * sizeof(rtnexthop)] = {};
    auto* nh = reinterpret_cast<rtnexthop*>(mp);
    nh[0].rtnh_len = sizeof(rtnexthop);
    nh[0].rtnh_ifindex = 9;
    nh[1].rtnh_len = sizeof(rtnexthop);
    nh[1].rtnh_ifindex = 7;
    EXPECT_TRUE(concernsInterface(MessageBuilder(RTM_NEWROUTE, &rtm, sizeof rtm).attr(RTA_MULTIPATH, mp, sizeof mp).msg(), gw));
    nh[1].rtnh_ifindex = 10;
    EXPECT_FALSE(concernsInterface(MessageBuilder(RTM_NEWROUTE, &rtm, sizeof rtm).attr(RTA_MULTIPATH, mp, sizeof mp).msg(), gw));
}

TEST(NetlinkFilter, NewLinkWithTheNameCountsEvenBeforeTheIndexIsKnown) {
    ifinfomsg ifi{};
    ifi.ifi_index = 42;
    NetlinkInterest missing{0, "gw0", 0};
    EXPECT_TRUE(concernsInterface(MessageBuilder(RTM_NEWLINK, &ifi, sizeof ifi).attr(IFLA_IFNAME, "gw0", 4).msg(), missing));
    EXPECT_FALSE(concernsInterface(MessageBuilder(RTM_NEWLINK, &ifi, sizeof ifi).attr(IFLA_IFNAME, "gw00", 5).msg(), missing));
    EXPECT_FALSE(concernsInterface(MessageBuilder(RTM_NEWLINK, &ifi, sizeof ifi).attr(IFLA_IFNAME, "gw", 3).msg(), missing));
    // While gw0 is missing, address and route messages cannot be about it.
    ifaddrmsg ifa{};
    EXPECT_FALSE(concernsInterface(MessageBuilder(RTM_NEWADDR, &ifa, sizeof ifa).msg(), missing));
}

TEST(NetlinkFilter, OwnRequestsAndTruncatedMessagesAreIgnored) {
    ifaddrmsg ifa{};
    ifa.ifa_index = 7;
    EXPECT_FALSE(concernsInterface(MessageBuilder(RTM_NEWADDR, &ifa, sizeof ifa, 1234).msg(), {7, "gw0", 1234}));
    EXPECT_TRUE(concernsInterface(MessageBuilder(RTM_NEWADDR, &ifa, sizeof ifa, 99).msg(), {7, "gw0", 1234}));
    MessageBuilder shortMsg(RTM_NEWADDR, &ifa, sizeof ifa);
    auto* h = const_cast<nlmsghdr*>(shortMsg.msg());
    h->nlmsg_len = NLMSG_LENGTH(2);  // header says the fixed part is cut off
    EXPECT_FALSE(concernsInterface(h, {7, "gw0", 0}));
    size_t left = 3;
    EXPECT_FALSE(netlinkMessageFits(h, left));
}
