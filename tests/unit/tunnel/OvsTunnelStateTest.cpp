#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "tunnel/OvsTunnelState.hpp"

using namespace kovs::tunnel;

// Output of OVS 3.1.0 (one route of each kind added by hand, see the commit).
TEST(OvsTunnelState, ParsesOvs31ShowOutput) {
    auto st = parseOvsTunnelState(R"(Route Table:
Cached: 127.0.0.1/32 dev lo SRC 127.0.0.1 local
Cached: 172.30.0.1/32 dev br-phy SRC 172.30.0.1 local
User: 172.30.0.5/32 dev br-phy SRC 172.30.0.1
User: 172.30.0.6/32 dev br-phy GW 172.30.0.254 SRC 172.30.0.1
User: 172.30.0.7/32 MARK 5 dev br-phy SRC 172.30.0.1
User: 10.9.0.0/16 dev br-other SRC 10.9.0.1
User: fd00::5/128 dev br-phy SRC fd00::1
Cached: 172.30.0.0/24 dev br-phy SRC 172.30.0.1
Cached: fe80::/64 dev br-x SRC fe80::702c:8ff:fe7e:7b48
)",
                                  R"(IP                                            MAC                 Bridge
==========================================================================
172.30.0.5                                    02:00:00:00:00:05   br-phy
fd00::5                                       02:00:00:00:00:06   br-phy
10.9.0.7                                      02:00:00:00:00:07   br-other
garbage line
)",
                                  "br-phy");
    EXPECT_EQ(st.userRoutes, (std::map<std::string, OvsRoute>{{"172.30.0.5/32", {"br-phy", ""}},
                                                             {"172.30.0.6/32", {"br-phy", "172.30.0.254"}},
                                                             {"10.9.0.0/16", {"br-other", ""}},
                                                             {"fd00::5/128", {"br-phy", ""}}}));
    EXPECT_EQ(st.neighbours, (std::map<std::string, std::string>{{"172.30.0.5", "02:00:00:00:00:05"},
                                                                 {"fd00::5", "02:00:00:00:00:06"}}));
}

TEST(OvsTunnelState, AFreshVswitchdHoldsNothing) {
    auto st = parseOvsTunnelState("Route Table:\nCached: 127.0.0.1/32 dev lo SRC 127.0.0.1 local\n",
                                  "IP    MAC    Bridge\n=====\n", "br-phy");
    EXPECT_TRUE(st.userRoutes.empty());
    EXPECT_TRUE(st.neighbours.empty());
    EXPECT_TRUE(parseOvsTunnelState("", "", "br-phy").userRoutes.empty());
    // Truncated lines are skipped, not misread.
    EXPECT_TRUE(parseOvsTunnelState("User: 172.30.0.5/32 dev\nUser: x dev br-phy\n", "", "br-phy").userRoutes.empty());
}

TEST(OvsTunnelState, AFailedReadBackNamesTheCommand) {
    auto errorOf = [](const kovs::ovs::UnixctlReplies& r) {
        try {
            parseOvsTunnelReadBack(r, "br-phy");
            return std::string("parsed");
        } catch (const kovs::Error& e) {
            return std::string(e.what());
        }
    };
    kovs::ovs::UnixctlReplies stopped{42, "", {{true, "Route Table:\n"}, {false, "timed out"}}};
    EXPECT_EQ(errorOf(stopped), "tnl/neigh/show: timed out");
    kovs::ovs::UnixctlReplies gone{-1, "ovs-vswitchd: no pid in /run/ovs-vswitchd.pid (is it running?)", {}};
    EXPECT_EQ(errorOf(gone), gone.unreachable);
    kovs::ovs::UnixctlReplies fine{42, "", {{true, "User: 172.30.0.5/32 dev br-phy SRC 172.30.0.1\n"}, {true, ""}}};
    EXPECT_EQ(errorOf(fine), "parsed");
    EXPECT_EQ(parseOvsTunnelReadBack(fine, "br-phy").userRoutes.size(), 1u);
}
