#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "base/IpPrefix.hpp"

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

TEST(IpPrefix, ContainsAndOverlaps) {
    auto p = [](const char* t) { return IpPrefix::parse(t); };
    EXPECT_TRUE(p("10.244.0.0/16").contains(p("10.244.1.0/24")));
    EXPECT_TRUE(p("10.244.0.0/16").contains(p("10.244.1.7")));
    EXPECT_FALSE(p("10.244.1.0/24").contains(p("10.244.0.0/16")));
    EXPECT_FALSE(p("10.244.1.0/24").contains(p("10.244.2.1")));
    EXPECT_TRUE(p("0.0.0.0/0").contains(p("172.18.0.2")));
    EXPECT_FALSE(p("10.0.0.0/8").contains(p("fd00::1")));
    EXPECT_TRUE(p("10.244.1.0/24").overlaps(p("10.244.0.0/16")));
    EXPECT_TRUE(p("10.244.0.0/16").overlaps(p("10.244.1.0/24")));
    EXPECT_FALSE(p("10.244.1.0/24").overlaps(p("10.244.2.0/24")));
    EXPECT_TRUE(p("fd00::/64").overlaps(p("fd00::5")));
}

TEST(IpPrefix, SubtractCarvesHolesIntoTheFewestPrefixes) {
    auto text = [](const std::vector<IpPrefix>& v) { return kovs::joinPrefixes(v); };
    EXPECT_EQ(text(kovs::subtractPrefixes(IpPrefix::parse("10.0.0.0/8"), {})), "10.0.0.0/8");
    EXPECT_EQ(text(kovs::subtractPrefixes(IpPrefix::parse("10.0.0.0/8"), {IpPrefix::parse("0.0.0.0/0")})), "none");
    EXPECT_EQ(text(kovs::subtractPrefixes(IpPrefix::parse("10.0.0.0/30"), {IpPrefix::parse("10.0.0.1/32")})),
              "10.0.0.0/32, 10.0.0.2/31");
    auto v = kovs::subtractPrefixes(IpPrefix::parse("10.0.0.0/8"), {IpPrefix::parse("10.1.2.3/32"), IpPrefix::parse("fd00::/8")});
    EXPECT_EQ(v.size(), 24u) << text(v);
    for (const auto& p : v) EXPECT_FALSE(p.contains(IpPrefix::parse("10.1.2.3"))) << p.str();
    EXPECT_EQ(text(kovs::subtractPrefixes(IpPrefix::parse("fd00::/62"), {IpPrefix::parse("fd00::/64")})), "fd00:0:0:1::/64, fd00:0:0:2::/63");
}
