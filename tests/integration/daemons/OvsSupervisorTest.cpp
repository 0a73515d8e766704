// OvsSupervisor runs the real daemons in a temp dir (private netns): kill -9
// of either one is repaired and the bridges come back.
#include "daemons/OvsSupervisor.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "bridge/BridgeReconciler.hpp"
#include "ovs/UnixctlClient.hpp"
#include "tests/support/AgentSignals.hpp"
#include "tests/support/Poll.hpp"
#include "tests/support/TempDir.hpp"

using kovs::bridge::BridgeReconciler;
using kovs::EventLoop;
using kovs::ovs::OvsdbClient;
using kovs::daemons::OvsSupervisor;
using kovs::test::pollUntil;
using Daemon = kovs::daemons::OvsSupervisor::Daemon;
using Clock = std::chrono::steady_clock;

namespace {

kovs::daemons::OvsSupervisorOptions optionsIn(const std::string& dir) {
    kovs::daemons::OvsSupervisorOptions o;
    o.rundir = dir + "/run";
    o.dbPath = dir + "/db/conf.db";
    o.backoffMin = std::chrono::milliseconds(50);
    return o;
}

bool linkExists(const std::string& name) { return kovs::runProcess({"ip", "link", "show", name}).ok(); }

}  // namespace

TEST(OvsSupervisor, CreatesDbRestartsKilledDaemonsAndBridgesComeBack) {
    kovs::test::TempDir tmp("kovs-sup");
    EventLoop loop;
    OvsSupervisor sup(loop, optionsIn(tmp.path()));
    // Leftovers of a crashed run: a pidfile naming a dead pid and its ctl file.
    std::filesystem::create_directories(tmp.path() + "/run");
    std::ofstream(tmp.path() + "/run/ovs-vswitchd.pid") << "999999\n";
    std::ofstream(tmp.path() + "/run/ovs-vswitchd.999999.ctl") << "";
    sup.start();
    EXPECT_TRUE(std::filesystem::exists(tmp.path() + "/db/conf.db"));
    EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/run/ovs-vswitchd.999999.ctl"));

    kovs::ovs::OvsdbClientOptions co;
    co.remote = sup.dbRemote();
    OvsdbClient client(loop, co);
    BridgeReconciler bridges(loop, client, kovs::bridge::BridgeOptions{});
    std::vector<std::pair<Daemon, pid_t>> restarts;
    sup.setRestartHandler([&](Daemon d, pid_t pid) {
        restarts.emplace_back(d, pid);
        bridges.trigger();
    });
    // A fresh db has no root row: the reconciler creates it with the bridges.
    ASSERT_TRUE(bridges.reconcileOnce(std::chrono::seconds(15))) << bridges.lastError();
    ASSERT_TRUE(pollUntil([] { return linkExists("br-int") && linkExists("gw0"); }, std::chrono::seconds(10)));
    kovs::ovs::BlockingUnixctlClient unixctl(sup.options().rundir);
    ASSERT_TRUE(pollUntil(
        [&] {
            try {
                return unixctl.call("version").size() > 0;
            } catch (const kovs::Error&) {
                return false;  // vswitchd still starting
            }
        },
        std::chrono::seconds(5)));
    pid_t firstVs = sup.pid(Daemon::Vswitchd);
    EXPECT_EQ(unixctl.pid(), firstVs);

    // kill -9 ovs-vswitchd: restarted, the userspace ports are re-created.
    ::kill(firstVs, SIGKILL);
    auto t0 = Clock::now();
    ASSERT_TRUE(loop.runUntil([&] { return restarts.size() == 1; }, std::chrono::seconds(10)));
    EXPECT_EQ(restarts[0].first, Daemon::Vswitchd);
    EXPECT_NE(restarts[0].second, firstVs);
    ASSERT_TRUE(loop.runUntil(
        [&] {
            try {
                return unixctl.call("dpif/show").find("gw0") != std::string::npos;
            } catch (const kovs::Error&) {
                return false;
            }
        },
        std::chrono::seconds(15)));
    std::printf("[ figure ] ovs-vswitchd kill -9 -> gw0 back in the datapath after %.0f ms\n",
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    EXPECT_EQ(unixctl.pid(), sup.pid(Daemon::Vswitchd));
    EXPECT_TRUE(pollUntil([] { return linkExists("gw0"); }, std::chrono::seconds(10)));

    // kill -9 ovsdb-server: restarted, the client reconnects, the state holds.
    auto reconnects = client.reconnects();
    ::kill(sup.pid(Daemon::OvsdbServer), SIGKILL);
    ASSERT_TRUE(loop.runUntil(
        [&] { return client.reconnects() > reconnects && client.state() == OvsdbClient::State::Ready; },
        std::chrono::seconds(15)));
    EXPECT_EQ(sup.restarts(Daemon::OvsdbServer), 1u);
    ASSERT_TRUE(bridges.reconcileOnce(std::chrono::seconds(5))) << bridges.lastError();
    EXPECT_TRUE(client.replica().findByName("Port", "tun0"));

    pid_t vs = sup.pid(Daemon::Vswitchd), db = sup.pid(Daemon::OvsdbServer);
    sup.stop();
    EXPECT_NE(::kill(vs, 0), 0);
    EXPECT_NE(::kill(db, 0), 0);
}

// The agent's main() blocks SIGTERM and SIGINT (a signalfd reads them) and
// ignores SIGPIPE. The daemons it starts must not inherit that, or `kill`
// and the supervisor's own stop() (SIGTERM, then SIGKILL after 10 s) cannot
// shut OVS down cleanly.
TEST(OvsSupervisor, DaemonsStartWithTheAgentsSignalMaskUndone) {
    kovs::test::TempDir tmp("kovs-sup");
    EventLoop loop;
    OvsSupervisor sup(loop, optionsIn(tmp.path()));
    {
        kovs::test::AgentSignals asInTheAgent;
        sup.start();
    }
    for (auto d : {Daemon::OvsdbServer, Daemon::Vswitchd}) {
        auto status = kovs::runChecked({"grep", "^SigBlk", "/proc/" + std::to_string(sup.pid(d)) + "/status"});
        EXPECT_EQ(status, "SigBlk:\t0000000000000000\n") << toString(d);
    }
    // SIGTERM by hand ends vswitchd; the supervisor restarts it.
    pid_t vs = sup.pid(Daemon::Vswitchd);
    ::kill(vs, SIGTERM);
    EXPECT_TRUE(loop.runUntil([&] { return sup.restarts(Daemon::Vswitchd) == 1; }, std::chrono::seconds(5)))
        << "ovs-vswitchd ignored SIGTERM";
    sup.stop();
}

// A restart that cannot start the daemon (here: the binary is gone for a
// while; in life, out of pids or memory) is retried with backoff until it
// works, instead of leaving the datapath down until the agent restarts.
TEST(OvsSupervisor, RetriesARestartThatFailed) {
    kovs::test::TempDir tmp("kovs-sup");
    std::string bin = tmp.path() + "/bin";
    std::filesystem::create_directories(bin);
    std::string vswitchd;
    for (const char* b : {"ovsdb-tool", "ovsdb-server", "ovs-vswitchd"}) {
        auto where = kovs::runChecked({"sh", "-c", std::string("command -v ") + b});
        vswitchd = where.substr(0, where.find('\n'));
        std::filesystem::create_symlink(vswitchd, bin + "/" + b);
    }
    std::string path = ::getenv("PATH");
    ::setenv("PATH", bin.c_str(), 1);  // posix_spawnp looks only here now
    EventLoop loop;
    auto o = optionsIn(tmp.path());
    OvsSupervisor sup(loop, o);
    sup.start();
    std::filesystem::remove(bin + "/ovs-vswitchd");
    ::kill(sup.pid(Daemon::Vswitchd), SIGKILL);
    // Several attempts fail (backoff 50, 100, 200 ms...).
    loop.runUntil([] { return false; }, std::chrono::milliseconds(800));
    EXPECT_EQ(sup.pid(Daemon::Vswitchd), -1);
    EXPECT_EQ(sup.restarts(Daemon::Vswitchd), 0u);
    std::filesystem::create_symlink(vswitchd, bin + "/ovs-vswitchd");
    bool restarted = loop.runUntil([&] { return sup.restarts(Daemon::Vswitchd) == 1; }, std::chrono::seconds(10));
    ::setenv("PATH", path.c_str(), 1);
    EXPECT_TRUE(restarted) << "the failed restart was never tried again";
    EXPECT_GT(sup.pid(Daemon::Vswitchd), 0);
    sup.stop();
}

TEST(OvsSupervisor, AdoptsRunningDaemonsInsteadOfStartingTwice) {
    kovs::test::TempDir tmp("kovs-sup");
    auto o = optionsIn(tmp.path());
    EventLoop loop;
    pid_t vs = -1, db = -1;
    {
        o.keepRunningOnExit = true;
        OvsSupervisor first(loop, o);
        first.start();
        ASSERT_TRUE(pollUntil(
            [&] {
                return std::filesystem::exists(o.rundir + "/ovs-vswitchd.pid") &&
                       std::filesystem::exists(o.rundir + "/ovsdb-server.pid");
            },
            std::chrono::seconds(10)));
        vs = first.pid(Daemon::Vswitchd);
        db = first.pid(Daemon::OvsdbServer);
    }
    ASSERT_EQ(::kill(vs, 0), 0) << "keepRunningOnExit: vswitchd must survive the supervisor";
    o.keepRunningOnExit = false;
    OvsSupervisor second(loop, o);
    second.start();
    EXPECT_EQ(second.pid(Daemon::Vswitchd), vs);
    EXPECT_EQ(second.pid(Daemon::OvsdbServer), db);
    second.stop();
    EXPECT_NE(::kill(vs, 0), 0);
    EXPECT_NE(::kill(db, 0), 0);
}

// An ovsdb-server the supervisor has no pidfile for (started by hand, or by
// an agent killed before the daemon wrote its pidfile) holds the database.
// The supervisor's own server must fail on the database lock, not take it
// away: two servers writing one conf.db corrupt it.
TEST(OvsSupervisor, LeavesADatabaseAnotherServerHoldsAlone) {
    kovs::test::TempDir tmp("kovs-sup");
    auto o = optionsIn(tmp.path());
    std::filesystem::create_directories(tmp.path() + "/db");
    kovs::runChecked({"ovsdb-tool", "create", o.dbPath, o.schemaPath});
    std::string foreignSock = tmp.path() + "/foreign.sock", foreignPid = tmp.path() + "/foreign.pid";
    kovs::runChecked({"ovsdb-server", o.dbPath, "--remote=punix:" + foreignSock, "--pidfile=" + foreignPid,
                      "--unixctl=" + tmp.path() + "/foreign.ctl", "--log-file=" + tmp.path() + "/foreign.log", "--detach"});
    pid_t foreign = -1;
    std::ifstream(foreignPid) >> foreign;
    ASSERT_GT(foreign, 0);

    EventLoop loop;
    OvsSupervisor sup(loop, o);
    sup.start();
    bool refused = loop.runUntil([&] { return sup.restarts(Daemon::OvsdbServer) >= 1; }, std::chrono::seconds(10));
    std::string log;
    std::getline(std::ifstream(o.rundir + "/ovsdb-server.console"), log, '\0');
    sup.stop();
    EXPECT_TRUE(refused) << "the supervisor's ovsdb-server kept running next to the one holding the db";
    EXPECT_NE(log.find("failed to lock lockfile"), std::string::npos) << log;
    EXPECT_TRUE(kovs::runProcess({"ovsdb-client", "list-dbs", "unix:" + foreignSock}).ok())
        << "the server holding the db must still answer";
    ::kill(foreign, SIGTERM);
    EXPECT_TRUE(pollUntil([&] { return ::kill(foreign, 0) != 0; }, std::chrono::seconds(5)));
}

// vswitchd is started once ovsdb-server listens: one that finds no db.sock
// waits a second (its reconnect back-off) before it can bring the datapath
// up, and that second is every pod's on a node whose kovs pod restarted.
TEST(OvsSupervisor, StartsVswitchdOnceOvsdbListens) {
    kovs::test::TempDir tmp("kovs-sup");
    EventLoop loop;
    auto opts = optionsIn(tmp.path());
    OvsSupervisor sup(loop, opts);
    sup.start();
    auto log = [&] {
        std::ifstream f(opts.rundir + "/ovs-vswitchd.log");
        return std::string(std::istreambuf_iterator<char>(f), {});
    };
    ASSERT_TRUE(pollUntil([&] { return log().find("db.sock: connected") != std::string::npos; }, std::chrono::seconds(10)))
        << log();
    EXPECT_EQ(log().find("connection attempt failed"), std::string::npos) << "vswitchd started before ovsdb-server listened:\n"
                                                                          << log();
    sup.stop();
}
