#include <gtest/gtest.h>

#include "tunnel/OvsTunnelState.hpp"

using namespace kovs::tunnel;

TEST(OvsTunnelState, ParsesOvs31ShowOutput) {
    auto st = kovs::tunnel::parseOvsTunnelState(R"(Route Table:
Cached: 127.0.0.1/32 dev lo SRC 127.0.0.1 local
Cached: 172.30.0.1/32 dev br-phy SRC 172.30.0.1 local
User: 172.30.0.5/32 dev br-phy SRC 172.30.0.1
User: 172.30.0.6/32 dev br-phy GW 172.30.0.254 SRC 172.30.0.1
User: 10.9.0.0/16 dev br-other SRC 10.9.0.1
User: fd00::5/128 dev br-phy SRC fd00::1
Cached: 172.30.0.0/24 dev br-phy SRC 172.30.0.1
)",
                                                R"(IP                                            MAC                 Bridge
==========================================================================
172.30.0.5                                    02:00:00:00:00:05   br-phy
fd00::5                                       02:00:00:00:00:06   br-phy
10.9.0.7                                      02:00:00:00:00:07   br-other
garbage line
)",
                                                "br-phy");
    EXPECT_EQ(st.userRoutes, (std::set<std::string>{"172.30.0.5/32", "172.30.0.6/32", "fd00::5/128"}));
    EXPECT_EQ(st.neighbours, (std::map<std::string, std::string>{{"172.30.0.5", "02:00:00:00:00:05"},
                                                                 {"fd00::5", "02:00:00:00:00:06"}}));
    EXPECT_TRUE(kovs::tunnel::parseOvsTunnelState("", "", "br-phy").userRoutes.empty());
}
