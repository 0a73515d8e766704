// Policy logging end to end against a real userspace vswitchd: the flow job
// (FlowReconciler) renders a NetworkPolicy annotated kovs.dev/log: all, the
// logger (PolicyLogger, with its OpenFlow connection and meter) turns the
// controller actions on once the meter is set, and real frames sent into a
// pod's veth are judged by the real pipeline (conntrack, tables 21-28).
// Shown: one entry per new connection, with the rule that decided; retries
// of a denied connection folded into its entry; a flood of new denied
// connections cut to the meter's rate; and after vswitchd restarts (the
// meter gone with it), the flows are added again for the new meter and a
// flood is still cut (the flows of the old generation would not be).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "base/RepairLog.hpp"
#include "flows/FlowReconciler.hpp"
#include "flows/PacketTrace.hpp"
#include "flows/PolicyLogger.hpp"
#include "ovs/OvsdbClient.hpp"
#include "policy/PolicyCompiler.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/unit/ovs/TestFrames.hpp"

using namespace kovs;
using kovs::test::OvsSandbox;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kRate = 50;
struct Pod {
    const char* name;
    const char* port;  // on br-int; its veth peer (port + "p") sends the frames
    const char* ip;
    const char* mac;
    int ofport;
};
const Pod kA{"a", "pa", "10.244.1.5", "0a:58:0a:f4:01:05", 5}, kB{"b", "pb", "10.244.1.6", "0a:58:0a:f4:01:06", 6};

std::string macBytes(const char* mac) {
    std::string out;
    for (int i = 0; i < 6; ++i) out.push_back(static_cast<char>(std::stoi(std::string(mac + i * 3, 2), nullptr, 16)));
    return out;
}

// x/web selects x/a for ingress, allows x/b on TCP 80, logs all it decides.
policy::CompiledPolicy compiled() {
    policy::PolicyCluster c;
    c.namespaces["x"] = {"x", {}};
    for (const auto& p : {kA, kB}) {
        policy::PolicyPod pod{"x", p.name, "node1", {}, {IpPrefix::parse(p.ip)}, false, {}};
        pod.labels["app"] = p.name;
        c.pods[pod.key()] = pod;
    }
    auto np = policy::decodeNetworkPolicy(nlohmann::json::parse(R"({
        "metadata": {"namespace": "x", "name": "web", "annotations": {"kovs.dev/log": "all"}},
        "spec": {"podSelector": {"matchLabels": {"app": "a"}},
                 "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "b"}}}], "ports": [{"protocol": "TCP", "port": 80}]}]}})"));
    c.policies[np.key()] = np;
    return policy::compilePolicy(c, "node1");
}

class PolicyLogTest : public ::testing::Test {
protected:
    PolicyLogTest() {
        std::vector<std::string> args{"add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev", "fail_mode=secure",
                                      "--", "add-port", "br-int", "gw0", "--", "set", "interface", "gw0", "type=internal", "ofport_request=1",
                                      "--", "add-port", "br-int", "tun0", "--", "set", "interface", "tun0", "type=vxlan",
                                      "options:remote_ip=flow", "options:key=flow", "ofport_request=2"};
        for (const auto& p : {kA, kB}) {
            runChecked({"ip", "link", "add", p.port, "type", "veth", "peer", "name", std::string(p.port) + "p"});
            runChecked({"ip", "link", "set", p.port, "up"});
            runChecked({"ip", "link", "set", std::string(p.port) + "p", "up"});
            args.insert(args.end(), {"--", "add-port", "br-int", p.port, "--", "set", "interface", p.port,
                                     "ofport_request=" + std::to_string(p.ofport), fmt::format("external_ids:attached-mac=\"{}\"", p.mac),
                                     fmt::format("external_ids:ip-address=\"{}/24\"", p.ip), "external_ids:kovs-owner=kovs-cni"});
        }
        ovs.vsctl(args);
        ovs::OvsdbClientOptions o;
        o.remote = ovs.dbRemote();
        db = std::make_unique<ovs::OvsdbClient>(loop, o);
        db->start();
        EXPECT_TRUE(db->waitReady(10s));
        db->addChangeHandler([this] { flows->onDatabaseChange(); });
        flows::FlowReconcilerOptions f;
        f.rundir = ovs.dir();
        f.gatewayAddresses = {IpPrefix::parse("10.244.1.1/24")};
        f.readBack = 1h;
        flows = std::make_unique<flows::FlowReconciler>(loop, db->replica(), repairs, f);
        flows->setPeers({});
        flows->setPolicy(compiled());
        flows->start();
        logger = std::make_unique<flows::PolicyLogger>(
            loop, flows::PolicyLogFlows::of(*flows),
            flows::PolicyLoggerOptions{.socketPath = ovs.dir() + "/br-int.mgmt", .ratePktps = kRate, .meterStatsInterval = 200ms}, [](const IpPrefix& a) {
                return a.addressString() == kA.ip ? std::string("x/a") : a.addressString() == kB.ip ? std::string("x/b") : std::string();
            });
        logger->start();
    }
    ~PolicyLogTest() override {
        for (const auto& p : {kA, kB}) runProcess({"ip", "link", "del", p.port});
    }

    nlohmann::json status() const {
        nlohmann::json s;
        logger->status(s);
        flows->status(s);
        return s;
    }
    // The meter is set on this vswitchd (a connection of generation
    // `minGeneration` or later) and the table with that generation's
    // controller actions is on the bridge.
    bool loggingInstalled(uint32_t minGeneration) {
        return loop.runUntil(
            [&] {
                const auto s = status()["policyLog"];
                const auto generation = s.value("generation", 0u);
                if (!s.value("meterSet", false) || generation < minGeneration) return false;
                // The whole table (after a vswitchd restart the flow job reads
                // it back and installs it whole), with the logging flows.
                const auto dump = ovs.ofctl({"dump-flows", "br-int"});
                const auto desired = flows->desired();
                seen = fmt::format("generation {}, {} lines dumped, {} desired:\n{}", generation, std::count(dump.begin(), dump.end(), '\n'),
                                   std::count(desired.begin(), desired.end(), '\n'), dump);
                return std::count(dump.begin(), dump.end(), '\n') == std::count(desired.begin(), desired.end(), '\n') + 1 &&
                       dump.find(fmt::format("userdata=00.00.00.{:02x}", generation)) != std::string::npos;
            },
            20s);
    }
    std::string seen;  // what loggingInstalled saw last
    size_t entries() const { return logger->entries(0, 100000)["entries"].size(); }
    // Waits until no new entry has come for 300 ms.
    void settle() {
        size_t last = SIZE_MAX;
        while (entries() != last) {
            last = entries();
            loop.runUntil([] { return false; }, 300ms);
        }
    }

    OvsSandbox ovs;
    EventLoop loop;
    RepairLog repairs;
    std::unique_ptr<ovs::OvsdbClient> db;
    std::unique_ptr<flows::FlowReconciler> flows;
    std::unique_ptr<flows::PolicyLogger> logger;
};

// TCP SYNs from x/b to x/a: `count` of them from ports first.., or as many as fit in `duration`.
size_t syns(uint16_t dport, uint16_t firstSport, size_t count, std::chrono::milliseconds duration = 0ms) {
    UniqueFd s(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = static_cast<int>(::if_nametoindex("pbp"));
    to.sll_halen = 6;
    const auto deadline = std::chrono::steady_clock::now() + duration;
    size_t sent = 0;
    while (duration > 0ms ? std::chrono::steady_clock::now() < deadline : sent < count) {
        const auto f = test::ipFrame(kB.ip, kA.ip, IPPROTO_TCP, uint16_t(firstSport + sent % 30000), dport, macBytes(kA.mac), macBytes(kB.mac));
        if (::sendto(s.get(), f.data(), f.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == ssize_t(f.size())) ++sent;
    }
    return sent;
}

// A flood of new denied connections for `duration` while the loop reads: frames sent, entries made.
// CPU time of the calling thread (the loop's: the logger's packet-ins, log lines, ring).
double threadCpuSeconds() {
    rusage u{};
    ::getrusage(RUSAGE_THREAD, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::pair<size_t, size_t> flood(EventLoop& loop, const std::function<size_t()>& entries, std::chrono::milliseconds duration, uint16_t firstSport) {
    const size_t before = entries();
    const double cpu0 = threadCpuSeconds();
    std::atomic<size_t> sent{0};
    std::atomic<bool> done{false};
    std::thread sender([&] {
        sent = syns(81, firstSport, 0, duration);
        done = true;
    });
    loop.runUntil([&] { return done.load(); }, duration + 10s);
    sender.join();
    // A figure, not a test: the sanitizer build runs several times slower than the product.
    std::printf("the loop thread (the logger) used %.1f %% of a core during the flood\n",
                100 * (threadCpuSeconds() - cpu0) / std::chrono::duration<double>(duration).count());
    size_t last = SIZE_MAX;
    while (entries() != last) {
        last = entries();
        loop.runUntil([] { return false; }, 300ms);
    }
    return {sent.load(), entries() - before};
}

}  // namespace

TEST_F(PolicyLogTest, OneEntryPerNewConnectionWithTheRuleThatDecided) {
    ASSERT_TRUE(loggingInstalled(1)) << status().dump(2) << seen;
    // (ip, not /sys: this mount namespace's sysfs is the first network namespace's)
    const auto rxBefore = nlohmann::json::parse(runChecked({"ip", "-j", "-s", "link", "show", "pap"}))[0]["stats64"]["rx"]["packets"].get<uint64_t>();
    // Three allowed connections (TCP 80) and three denied (81), each SYN sent twice.
    for (int round = 0; round < 2; ++round) {
        syns(80, 1001, 3);
        syns(81, 2001, 3);
    }
    ASSERT_TRUE(loop.runUntil([&] { return entries() >= 6; }, 10s)) << logger->entries(0, 100).dump(2);
    settle();
    auto all = logger->entries(0, 100)["entries"];
    ASSERT_EQ(all.size(), 6u) << all.dump(2);
    size_t allowed = 0, denied = 0;
    for (const auto& e : all) {
        EXPECT_EQ(e["policy"], "x/web");
        EXPECT_EQ(e["tier"], "NetworkPolicy");
        EXPECT_EQ(e["direction"], "ingress");
        EXPECT_EQ(e["sourcePod"], "x/b");
        EXPECT_EQ(e["destinationPod"], "x/a");
        EXPECT_EQ(e["protocol"], "TCP");
        if (e["verdict"] == "allow") {
            ++allowed;
            EXPECT_EQ(e["rule"], "0");
            EXPECT_EQ(e["destination"], "10.244.1.5:80");
        } else {
            ++denied;
            EXPECT_EQ(e["rule"], "") << "isolated, no rule allowed it";
            EXPECT_EQ(e["destination"], "10.244.1.5:81");
            EXPECT_EQ(e["packets"], 2) << "the retry is folded into its connection's entry";
        }
    }
    EXPECT_EQ(allowed, 3u);
    EXPECT_EQ(denied, 3u);
    // Enforcement is as without logging: every denied SYN hit the isolated
    // pod's drop flow, and the allowed ones reached x/a.
    // (the datapath's counts reach the OpenFlow flows a revalidation later)
    std::string table;
    EXPECT_TRUE(loop.runUntil(
        [&] {
            table = ovs.ofctl({"dump-flows", "br-int", fmt::format("table={},ip,nw_dst=10.244.1.5", flows::number(flows::Table::IngressPolicy))});
            return table.find("n_packets=6, n_bytes=324, idle_age") != std::string::npos;
        },
        10s))
        << table;
    const auto rx = nlohmann::json::parse(runChecked({"ip", "-j", "-s", "link", "show", "pap"}))[0]["stats64"]["rx"]["packets"].get<uint64_t>();
    EXPECT_GE(rx - rxBefore, 3u);
    // kovsctl trace still tells a logged drop from a forward.
    auto in = flows->currentInputs();
    auto trace = ovs.appctl({"ofproto/trace", "br-int",
                             fmt::format("in_port={},dl_src={},dl_dst={},tcp,nw_src={},nw_dst={},tp_src=5,tp_dst=81", kB.ofport, kB.mac, kA.mac, kB.ip, kA.ip),
                             "--ct-next", "trk,new"});
    auto explained = flows::explainTrace(trace, in);
    EXPECT_TRUE(explained.dropped) << trace;
    EXPECT_NE(explained.verdict.find("isolated for ingress (by x/web)"), std::string::npos) << explained.verdict;
}

TEST_F(PolicyLogTest, AFloodIsCutToTheMetersRateAlsoAfterAVswitchdRestart) {
    ASSERT_TRUE(loggingInstalled(1)) << status().dump(2) << seen;
    auto count = [&] { return entries(); };
    auto [sent, logged] = flood(loop, count, 2000ms, 3000);
    std::printf("meter %u pkt/s: %zu new denied connections sent in 2 s, %zu logged\n", kRate, sent, logged);
    EXPECT_GT(sent, 20u * kRate) << "the flood was too slow to show anything";
    EXPECT_GE(logged, kRate);
    EXPECT_LE(logged, 4u * kRate);

    // vswitchd restarts: the meter is gone with it. The agent's supervisor
    // asks the flow job to read its table back; the logger reconnects, sets
    // the meter and the flows come back with generation 2.
    ovs.killVswitchd(SIGKILL);
    ovs.startVswitchd();
    flows->verifySoon();
    ASSERT_TRUE(loggingInstalled(2)) << status().dump(2) << seen;
    auto [sent2, logged2] = flood(loop, count, 1000ms, 40000);
    std::printf("after a vswitchd restart: %zu sent in 1 s, %zu logged\n", sent2, logged2);
    EXPECT_GT(sent2, 20u * kRate);
    EXPECT_LE(logged2, 3u * kRate);
    const auto s = status()["policyLog"];
    EXPECT_GT(s["meter"].value("dropped", 0), 0) << s.dump(2);
}
