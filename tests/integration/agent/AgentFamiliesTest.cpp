// kovs-agent's start-up check of the node's families: a pod CIDR of a family
// the node has no address of (ipFamily dual on a network without IPv6) stops
// the agent with one line naming it, before anything is moved: eth0 keeps its
// address, no bridge, gw0 or drop-in is made. In a network namespace of its
// own, with no OVS at all (the check comes before OVS is started).
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/TempDir.hpp"
#include "tests/support/TestNetns.hpp"

namespace fs = std::filesystem;

TEST(AgentFamilies, APodFamilyTheNodeHasNoAddressOfStopsItBeforeAnythingMoves) {
    const char* agent = std::getenv("KOVS_AGENT");
    ASSERT_TRUE(agent && *agent) << "KOVS_AGENT is not set (meson test sets it)";
    kovs::test::TempDir dir("kovs-agent-families");
    kovs::test::TestNetns ns("kovs-families-test");
    // No dummy module on these machines: one end of a veth is eth0.
    ASSERT_TRUE(ns.exec({"ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer"}).ok());
    ASSERT_TRUE(ns.exec({"ip", "addr", "add", "172.18.0.2/16", "dev", "eth0"}).ok());
    ASSERT_TRUE(ns.exec({"ip", "link", "set", "eth0", "up"}).ok());
    fs::create_directories(dir / "run");
    auto config = fs::path(dir / "agent.yaml");
    std::ofstream(config) << "node: {name: families-test, podCIDRs: [10.250.1.0/24, 'fd00:10:250:1::/64']}\n"
                          << "ovs: {manage: true, rundir: " << dir / "run" << ", database: " << dir / "run" / "conf.db" << "}\n"
                          << "gateway: {networkdDropinDir: " << dir / "networkd" << "}\n"
                          << "uplink: {mode: shim, interface: eth0}\n"
                          << "peers: {source: none}\n"
                          << "statusSocket: " << dir / "run" / "agent.sock" << "\n";

    // Bounded: an agent that does not stop here would go on moving eth0.
    auto r = ns.exec({"timeout", "20", agent, "--config", config.string()});
    // An agent that went on started OVS, whose daemons outlive it (the datapath stays).
    for (const char* pidfile : {"ovsdb-server.pid", "ovs-vswitchd.pid"}) {
        std::ifstream in(dir / "run" / pidfile);
        if (int pid = 0; in >> pid && pid > 1) ::kill(pid, SIGKILL);
    }
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("kovs-agent: node.podCIDRs has the IPv6 pod CIDR fd00:10:250:1::/64, but this node has no IPv6 "
                         "address (eth0 or br-phy): its pods could not reach beyond it over IPv6. Is the node's network "
                         "without IPv6"),
              std::string::npos) << r.err;
    EXPECT_NE(ns.exec({"ip", "-4", "addr", "show", "dev", "eth0"}).out.find("172.18.0.2/16"), std::string::npos) << "eth0 was moved";
    for (const char* link : {"br-phy", "br-int", "gw0"}) EXPECT_FALSE(ns.exec({"ip", "link", "show", "dev", link}).ok()) << link;
    EXPECT_FALSE(fs::exists(dir / "networkd")) << "drop-ins were written";
    EXPECT_FALSE(fs::exists(dir / "run" / "conf.db")) << "OVS was started";
}
