// The uplink across a node reboot, with the real kovs-agent binary (meson
// passes it in KOVS_AGENT) against a real OVS: a kind node's OVS database is
// on disk and survives a reboot (or `docker restart`), its run directory is a
// tmpfs and does not, every kernel device is gone and Docker recreates eth0
// with the same MAC and IP (issue 15, item 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/UnixJsonRequest.hpp"
#include "base/Process.hpp"
#include "tests/integration/uplink/UplinkUnderlay.hpp"
#include "tests/support/AgentProcess.hpp"
#include "tests/support/OvsSandbox.hpp"

using kovs::runChecked;
using kovs::runProcess;
using kovs::test::AgentProcess;
using kovs::test::addrsOf;
using kovs::test::ipJson;
using kovs::test::macOf;
using kovs::test::OvsSandbox;
using kovs::test::Underlay;
using nlohmann::json;

class UplinkRebootTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(agentDir());
        writeConfig("shim");
        originalMac = macOf("eth0");
    }

    std::string agentDir() const { return ovs.dir() + "/agent"; }

    void writeConfig(const std::string& mode) {
        std::ofstream(agentDir() + "/agent.yaml") << "node: {name: node1, podCIDR: 10.244.1.0/24}\n"
                                                  << "ovs: {manage: false, rundir: " << ovs.dir() << ", remote: " << ovs.dbRemote() << "}\n"
                                                  << "gateway: {networkdDropinDir: " << agentDir() << "/networkd}\n"
                                                  << "uplink: {mode: " << mode << ", interface: eth0}\n"
                                                  << "statusSocket: " << agentDir() << "/agent.sock\n";
    }

    // Starts the agent, waits until it is ready, stops it: "" or why it failed.
    std::string runAgentUntilReady() {
        AgentProcess agent(agentDir() + "/agent.yaml", agentDir() + "/agent.sock", agentDir() + "/agent.log");
        auto why = agent.waitReady();
        agent.stop();

        lastLog = agent.log();
        return why;
    }

    // A reboot: the OVS daemons stop, the run directory (a tmpfs: pidfiles,
    // sockets, the agent's uplink record) is emptied, every network device of
    // the node vanishes; the database file stays. Then the daemons start
    // again and Docker gives the node its eth0 back.
    void reboot(const std::string& eth0Mac) {
        ovs.killVswitchd(SIGKILL);
        ovs.stopOvsdb();
        for (const auto& e : std::filesystem::directory_iterator(ovs.dir())) {
            auto name = e.path().filename().string();
            if (name == "conf.db" || name == "agent" || name.ends_with(".log")) continue;
            std::filesystem::remove_all(e.path());
        }
        auto links = ipJson({"link", "show"});
        for (const auto& link : links) {
            auto name = link.at("ifname").get<std::string>();
            if (name != "lo") runProcess({"ip", "link", "del", name});
        }
        ovs.startOvsdb();
        ovs.startVswitchd();
        underlay.recreate(eth0Mac);
    }

    // Exactly one uplink port in the database, and it is br-phy's.
    void expectOneUplinkPort(const std::string& port) {
        EXPECT_EQ(ovs.vsctl({"--bare", "--columns=name", "find", "Port", "name=" + port}), port + "\n");
        EXPECT_EQ(ovs.vsctl({"--bare", "--columns=name", "find", "Interface", "name=" + port}), port + "\n");
        EXPECT_EQ(ovs.vsctl({"port-to-br", port}), "br-phy\n");
    }

    // Bridges and their ports first: the reboot must find them in the database.
    OvsSandbox ovs;
    Underlay underlay;
    std::string originalMac;
    std::string lastLog;  // the last agent run's
};

TEST_F(UplinkRebootTest, ShimNodeComesBackAfterARebootWithItsDatabaseKept) {
    ASSERT_EQ(runAgentUntilReady(), "");
    ASSERT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "fd31::2/64"})) << lastLog;

    reboot(originalMac);
    ASSERT_EQ(addrsOf("eth0"), json({"172.31.0.2/24", "fd31::2/64"})) << "the reboot gave eth0 its addressing back";
    ASSERT_EQ(macOf("eth0"), originalMac);

    ASSERT_EQ(runAgentUntilReady(), "") << "the agent must come up on a rebooted node";
    EXPECT_EQ(addrsOf("br-phy"), json({"172.31.0.2/24", "fd31::2/64"}));
    EXPECT_EQ(addrsOf("eth0"), json::array());
    EXPECT_EQ(macOf("br-phy"), originalMac) << "the node's IP<->MAC binding survives the reboot";
    expectOneUplinkPort("kovs-up1");
    EXPECT_TRUE(underlay.pingHost()) << "node -> host through br-phy after the reboot";
    EXPECT_EQ(underlay.hostToNodeBytes(), 512u * 1024u) << "host -> node TCP after the reboot";
}
