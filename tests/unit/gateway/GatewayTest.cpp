// Gateway guard pieces that need no root: address parsing, the gateway
// address of a pod CIDR, option validation and the networkd drop-in files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gateway/GatewayGuard.hpp"
#include "base/IpPrefix.hpp"
#include "gateway/NetworkdDropins.hpp"
#include "base/Error.hpp"

using namespace kovs;

TEST(IpPrefix, ParsesIpv4AndIpv6) {
    auto v4 = IpPrefix::parse("10.244.1.7/24");
    EXPECT_EQ(v4.family, AF_INET);
    EXPECT_EQ(v4.prefixLen, 24);
    EXPECT_EQ(v4.str(), "10.244.1.7/24");
    EXPECT_EQ(v4.network().str(), "10.244.1.0/24");
    auto v6 = IpPrefix::parse("fd00:10:244:1::7/64");
    EXPECT_EQ(v6.family, AF_INET6);
    EXPECT_EQ(v6.network().str(), "fd00:10:244:1::/64");
    EXPECT_EQ(IpPrefix::parse("10.0.0.1").prefixLen, 32);
    EXPECT_EQ(IpPrefix::parse("::1").prefixLen, 128);
    EXPECT_EQ(IpPrefix::parse("10.96.0.0/12").network().str(), "10.96.0.0/12");
    EXPECT_EQ(IpPrefix::parse("10.111.2.3/12").network().str(), "10.96.0.0/12");
}

TEST(IpPrefix, RejectsBadInputWithTheText) {
    for (const char* bad : {"", "/", "10.0.0.1/", "10.0.0.1/33", "10.0.0.1/-1", "10.0.0.1/2x", "10.0.0/24",
                            "fd00::1/129", "fd00:::1/64", "hello", "10.0.0.1/24/1", " 10.0.0.1/24"}) {
        try {
            IpPrefix::parse(bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("'" + std::string(bad) + "'"), std::string::npos) << e.what();
        }
    }
}

TEST(GatewayAddress, IsFirstAddressOfPodCidr) {
    EXPECT_EQ(gatewayAddressFor("10.244.1.0/24").str(), "10.244.1.1/24");
    EXPECT_EQ(gatewayAddressFor("10.244.1.77/24").str(), "10.244.1.1/24");
    EXPECT_EQ(gatewayAddressFor("10.244.0.0/16").str(), "10.244.0.1/16");
    EXPECT_EQ(gatewayAddressFor("fd00:10:244:1::/64").str(), "fd00:10:244:1::1/64");
    EXPECT_EQ(gatewayAddressFor("10.0.0.4/30").str(), "10.0.0.5/30");
    EXPECT_THROW(gatewayAddressFor("10.0.0.0/31"), Error);
    EXPECT_THROW(gatewayAddressFor("10.0.0.0/32"), Error);
    EXPECT_THROW(gatewayAddressFor("fd00::/127"), Error);
    EXPECT_THROW(gatewayAddressFor("bogus"), Error);
}

TEST(GatewayGuardOptions, InvalidOptionsAreRejectedBeforeAnythingHappens) {
    EventLoop loop;
    auto base = [] {
        GatewayGuardOptions o;
        o.addresses = {gatewayAddressFor("10.244.1.0/24")};
        return o;
    };
    auto expectError = [&](GatewayGuardOptions o, const std::string& needle) {
        try {
            GatewayGuard g(loop, o);
            ADD_FAILURE() << "accepted options, expected error with " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    auto o = base(); o.name = ""; expectError(o, "invalid interface name");
    o = base(); o.name = "a-name-that-is-too-long"; expectError(o, "invalid interface name");
    o = base(); o.mtu = 10; expectError(o, "MTU 10");
    o = base(); o.addresses.clear(); expectError(o, "no gateway address");
    o = base(); o.routes = {{IpPrefix::parse("10.96.0.0/12"), IpPrefix::parse("fd00::1")}}; expectError(o, "mixes address families");
    o = base(); o.resyncInterval = std::chrono::milliseconds(0); expectError(o, "resync interval");
    // Disabled: valid options construct without touching netlink.
    o = base(); o.enabled = false;
    GatewayGuard off(loop, o);
    EXPECT_EQ(off.stats().reconciles, 0u);
}

class DropinsTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/kovs-dropins-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    static std::string read(const std::string& path) {
        std::ifstream in(path);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    std::string dir_;
};

TEST_F(DropinsTest, WritesUnmanagedFilesAndRemovesThem) {
    NetworkdDropins d(dir_ + "/network");
    d.install({"gw0", "br-phy", "kovs-shim"});
    auto text = read(dir_ + "/network/10-kovs-gw0.network");
    EXPECT_NE(text.find("[Match]\nName=gw0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("[Link]\nUnmanaged=yes\n"), std::string::npos) << text;
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/network/10-kovs-br-phy.network"));
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/network/10-kovs-kovs-shim.network"));
    d.install({"gw0"});  // idempotent
    d.remove({"gw0", "br-phy", "kovs-shim"});
    d.remove({"gw0"});  // already gone: fine
    EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/network"));
}

// A failed install (disk full, say) takes back what it created, but not the
// drop-ins an earlier run wrote: those keep networkd off gw0 right now.
TEST_F(DropinsTest, AFailedInstallKeepsTheDropinsThatWereThere) {
    NetworkdDropins d(dir_);
    d.install({"gw0"});
    std::filesystem::create_directory(dir_ + "/10-kovs-kovs-shim.network");  // the rename onto it fails
    EXPECT_THROW(d.install({"gw0", "br-phy", "kovs-shim"}), Error);
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/10-kovs-gw0.network")) << "an earlier run's drop-in was removed";
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/10-kovs-br-phy.network")) << "this call's drop-in was left";
}

TEST_F(DropinsTest, BadNamesWriteNothing) {
    NetworkdDropins d(dir_);
    for (const char* bad : {"gw*", "", "../x", "a b", "waytoolonginterfacename", "."}) {
        EXPECT_THROW(d.install({"gw0", bad}), Error) << bad;
        EXPECT_TRUE(std::filesystem::is_empty(dir_)) << bad;
    }
}

// ---- the netlink event filter, on hand-built messages ----

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <cstring>
#include <vector>

#include "base/NetlinkWatcher.hpp"

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
