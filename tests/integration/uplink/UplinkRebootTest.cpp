// The uplink across a node reboot, with the real kovs-agent binary (meson
// passes it in KOVS_AGENT) against a real OVS: a kind node's OVS database is
// on disk and survives a reboot (or `docker restart`), its run directory is a
// tmpfs and does not, every kernel device is gone and Docker recreates eth0
// with the same MAC and IP (issue 15, item 2).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/UnixJsonRequest.hpp"
#include "base/Process.hpp"
#include "tests/integration/uplink/UplinkUnderlay.hpp"
#include "tests/support/OvsSandbox.hpp"

using kovs::runChecked;
using kovs::runProcess;
using kovs::test::addrsOf;
using kovs::test::ipJson;
using kovs::test::macOf;
using kovs::test::OvsSandbox;
using kovs::test::Underlay;
using nlohmann::json;

namespace {

std::string agentBinary() {
    const char* p = std::getenv("KOVS_AGENT");
    return p ? p : "agent/kovs-agent";
}

extern "C" char** environ;

// kovs-agent as the DaemonSet runs it: started, waited for until it reports
// itself ready on its status socket (or exits, which is the failure seen
// after a reboot), then stopped with SIGTERM, which leaves the datapath.
class AgentProcess {
public:
    AgentProcess(const std::string& config, std::string statusSocket, std::string log)
        : socket_(std::move(statusSocket)), log_(std::move(log)) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        posix_spawnattr_t attr;
        kovs::initSpawnAttrs(attr);
        std::vector<std::string> args{agentBinary(), "--config", config, "--log-level", "debug"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        int rc = posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) throw kovs::SystemError("spawn " + args[0], rc);
    }
    ~AgentProcess() { stop(); }
    AgentProcess(const AgentProcess&) = delete;
    AgentProcess& operator=(const AgentProcess&) = delete;

    // "" once the agent says it is ready; else why not (its exit and log).
    std::string waitReady(std::chrono::seconds timeout = std::chrono::seconds(60)) {
        std::string last = "no answer on " + socket_;
        bool ready = kovs::test::pollUntil(
            [&] {
                if (exited()) return true;
                try {
                    auto s = kovs::unixJsonRequest(socket_, {{"command", "status"}}, 1000);
                    if (s.value("ready", false)) return true;
                    last = s.value("notReadyReason", "");
                } catch (const std::exception& e) {
                    last = e.what();
                }
                return false;
            },
            timeout, std::chrono::milliseconds(50));
        if (exited()) return "kovs-agent exited with status " + std::to_string(status_) + ":\n" + log();
        if (!ready) return "kovs-agent not ready: " + last + "\n" + log();
        return "";
    }

    void stop() {
        if (pid_ <= 0) return;
        if (!exited()) {
            ::kill(pid_, SIGTERM);
            ::waitpid(pid_, &status_, 0);
        }
        pid_ = -1;
    }

    std::string log() const {
        std::ifstream in(log_);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

private:
    bool exited() {
        if (pid_ <= 0) return true;
        if (status_ != -1) return true;
        int st = 0;
        if (::waitpid(pid_, &st, WNOHANG) == pid_) {
            status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            return true;
        }
        return false;
    }

    pid_t pid_ = -1;
    int status_ = -1;
    std::string socket_;
    std::string log_;
};

}  // namespace

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
                                                  << "ovs: {manage: false, rundir: " << ovs.dir() << ", db: " << ovs.dbRemote() << "}\n"
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
