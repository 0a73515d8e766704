// The gateway's sysctl step on a directory laid out as /proc/sys/net
// (ipv4/conf, ipv6/conf): which values it keeps, which it changes, and that a
// link without a family's settings fails nothing. (The real /proc/sys:
// tests/integration/gateway/GatewayGuardTest.cpp.)
#include "gateway/GatewaySysctls.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/TempDir.hpp"

using kovs::gateway::GatewayRepairs;
using kovs::gateway::GatewaySysctls;

namespace {

class GatewaySysctlsTest : public ::testing::Test {
protected:
    void SetUp() override { std::filesystem::create_directories(dir_ / "ipv4/conf/gw0"); }
    void set(const std::string& key, const std::string& value, const std::string& link = "gw0", const std::string& family = "ipv4") {
        auto d = std::filesystem::path(dir_.path()) / family / "conf" / link;
        std::filesystem::create_directories(d);
        std::ofstream(d / key) << value << "\n";
    }
    std::string get(const std::string& key, const std::string& family = "ipv4") {
        std::string v;
        std::ifstream(std::filesystem::path(dir_.path()) / family / "conf/gw0" / key) >> v;
        return v;
    }
    kovs::test::TempDir dir_{"kovs-sysctls"};
};

}  // namespace

TEST_F(GatewaySysctlsTest, StrictReversePathFilteringBecomesLooseAndRedirectsGoOff) {
    set("rp_filter", "1");
    set("send_redirects", "1");
    GatewaySysctls step("gw0", dir_.path());
    GatewayRepairs r;
    step.reconcile(r);
    EXPECT_EQ(get("rp_filter"), "2");
    EXPECT_EQ(get("send_redirects"), "0");
    EXPECT_EQ(r.sysctl, 2u);

    GatewayRepairs again;
    step.reconcile(again);
    EXPECT_EQ(again.total(), 0u) << "nothing left to change";
}

TEST_F(GatewaySysctlsTest, NoFilteringAtAllIsKept) {
    set("rp_filter", "0");
    set("send_redirects", "0");
    GatewayRepairs r;
    GatewaySysctls("gw0", dir_.path()).reconcile(r);
    EXPECT_EQ(get("rp_filter"), "0") << "only strict filtering (1) is overwritten";
    EXPECT_EQ(r.sysctl, 0u);
}

TEST_F(GatewaySysctlsTest, NoFilteringOnTheGatewayUnderStrictFilteringForAllBecomesLoose) {
    // The kernel applies max(all, gw0): gw0's 0 under all's 1 filters strictly.
    set("rp_filter", "1", "all");
    set("rp_filter", "0");
    set("send_redirects", "0");
    GatewayRepairs r;
    GatewaySysctls("gw0", dir_.path()).reconcile(r);
    EXPECT_EQ(get("rp_filter"), "2");
    EXPECT_EQ(r.sysctl, 1u);
}

TEST_F(GatewaySysctlsTest, ALinkWithoutIpv4SettingsIsLeftAlone) {
    GatewayRepairs r;
    EXPECT_NO_THROW(GatewaySysctls("gw1", dir_.path()).reconcile(r));
    EXPECT_FALSE(std::filesystem::exists(dir_ / "ipv4/conf/gw1"));
    EXPECT_FALSE(std::filesystem::exists(dir_ / "ipv6/conf/gw1"));
    EXPECT_EQ(r.sysctl, 0u);
}

// With IPv6 on the link (a dual-stack or IPv6 node), gw0 is the pods' router
// and takes nothing from router advertisements; without it (IPv6 disabled,
// no conf/gw0 there) the IPv4 settings are kept all the same.
TEST_F(GatewaySysctlsTest, OnIpv6TheGatewayIsARouterThatAcceptsNoAdvertisements) {
    set("rp_filter", "2");
    set("send_redirects", "0");
    set("forwarding", "0", "gw0", "ipv6");
    set("accept_ra", "1", "gw0", "ipv6");
    GatewaySysctls step("gw0", dir_.path());
    GatewayRepairs r;
    step.reconcile(r);
    EXPECT_EQ(get("forwarding", "ipv6"), "1");
    EXPECT_EQ(get("accept_ra", "ipv6"), "0");
    EXPECT_EQ(r.sysctl, 2u);
    set("accept_ra", "2", "gw0", "ipv6");  // "even when forwarding": the value that would take a pod's RA
    GatewayRepairs again;
    step.reconcile(again);
    EXPECT_EQ(get("accept_ra", "ipv6"), "0");
    EXPECT_EQ(again.sysctl, 1u);
}
