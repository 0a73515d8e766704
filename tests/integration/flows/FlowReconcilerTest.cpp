// The flow job against a real userspace OVS: it installs the table the replica
// asks for, repairs a table someone changed (read back), counts the packets
// its ingress checks drop, and the pipeline decides as flows/FlowTable.hpp
// says (ofproto/trace, the decision OVS itself makes for a packet).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <signal.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/EventLoop.hpp"
#include "base/RepairLog.hpp"
#include "flows/FlowDump.hpp"
#include "flows/FlowReconciler.hpp"
#include "base/Process.hpp"
#include "ovs/OvsdbClient.hpp"
#include "tests/support/OvsSandbox.hpp"

using namespace kovs;
using kovs::test::OvsSandbox;
using namespace std::chrono_literals;

namespace {

constexpr const char* kPodMac = "0a:58:0a:f4:01:05";

// The pids of our children whose argv is `ovs-ofctl bundle ...`: the one the
// bridge keeps waiting for the next change.
std::vector<pid_t> waitingBundles() {
    std::vector<pid_t> out;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const auto name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(e.path() / "stat"), cmdline(e.path() / "cmdline");
        std::string statLine, argv;
        std::getline(stat, statLine);
        std::getline(cmdline, argv, '\n');
        auto close = statLine.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(statLine.substr(close + 2));
        std::string state;
        pid_t ppid = 0;
        rest >> state >> ppid;
        if (ppid == ::getpid() && argv.rfind(std::string("ovs-ofctl\0bundle\0", 17), 0) == 0) out.push_back(std::stoi(name));
    }
    return out;
}

flows::FlowPeer peer(const char* nodeIP, const char* cidr) { return {IpPrefix::parse(nodeIP), {IpPrefix::parse(cidr)}, {IpPrefix::parse(nodeIP)}}; }

class FlowReconcilerTest : public ::testing::Test {
protected:
    FlowReconcilerTest() {
        // br-int as the agent and kovs-cni make it: gw0 (ofport 1), tun0 (2), one pod port (7).
        ovs.vsctl({"add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev", "fail_mode=secure",
                   "--", "add-port", "br-int", "gw0", "--", "set", "interface", "gw0", "type=internal", "ofport_request=1",
                   "--", "add-port", "br-int", "tun0", "--", "set", "interface", "tun0", "type=vxlan",
                   "options:remote_ip=flow", "options:key=flow", "ofport_request=2",
                   "--", "add-port", "br-int", "pod1", "--", "set", "interface", "pod1", "type=internal", "ofport_request=7",
                   std::string("external_ids:attached-mac=\"") + kPodMac + "\"", "external_ids:ip-address=\"10.244.1.5/24\"",
                   "external_ids:kovs-owner=kovs-cni"});
        ovs::OvsdbClientOptions o;
        o.remote = ovs.dbRemote();
        db = std::make_unique<ovs::OvsdbClient>(loop, o);
        db->start();
        EXPECT_TRUE(db->waitReady(10s));
        db->addChangeHandler([this] {
            if (flows) flows->onDatabaseChange();
        });
        startReconciler();
    }

    // The flow job as the agent starts it (again, after a restart).
    void startReconciler(std::vector<IpPrefix> gatewayAddresses = {IpPrefix::parse("10.244.1.1/24")},
                         std::vector<flows::FlowPeer> peers = {peer("172.18.0.3", "10.244.2.0/24")}) {
        flows.reset();
        flows::FlowReconcilerOptions f;
        f.rundir = ovs.dir();
        f.gatewayAddresses = std::move(gatewayAddresses);
        f.readBack = 1h;  // the tests ask for read-backs themselves
        flows = std::make_unique<flows::FlowReconciler>(loop, db->replica(), repairs, f);
        flows->setPeers(std::move(peers));
        flows->start();
    }

    nlohmann::json status() const {
        nlohmann::json s;
        flows->status(s);
        return s["flows"];
    }
    bool runUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) { return loop.runUntil(done, timeout); }
    bool installedWithPod() {
        return runUntil([&] { return status().value("installs", 0) > 0 && flows->desired().find("nw_dst=10.244.1.5 ") != std::string::npos; });
    }
    std::string dump() const { return ovs.ofctl({"dump-flows", "br-int"}); }
    std::string trace(const std::string& packet, const std::string& ctNext = "") const {
        std::vector<std::string> args{"ofproto/trace", "br-int", packet};
        if (!ctNext.empty()) args.insert(args.end(), {"--ct-next", ctNext});
        return ovs.appctl(args);
    }
    static std::string lastLine(const std::string& text) {
        std::istringstream in(text);
        std::string line, last;
        while (std::getline(in, line)) {
            if (!line.empty()) last = line;
        }
        return last;
    }

    OvsSandbox ovs;
    EventLoop loop;
    RepairLog repairs;
    std::unique_ptr<ovs::OvsdbClient> db;
    std::unique_ptr<flows::FlowReconciler> flows;
};

}  // namespace

TEST_F(FlowReconcilerTest, InstallsTheTableAndRepairsOneThatChangedUnderIt) {
    ASSERT_TRUE(installedWithPod()) << status().dump();
    EXPECT_NE(dump().find("nw_dst=10.244.2.0/24 actions=load:0xac120003->NXM_NX_TUN_IPV4_DST[],output:2"), std::string::npos) << dump();
    // One line of the rendered table is one flow on the bridge: what `kovsctl doctor` counts.
    const auto& desired = flows->desired();
    EXPECT_EQ(flows::parseFlowDump(dump()).count, static_cast<size_t>(std::count(desired.begin(), desired.end(), '\n')))
        << desired << dump();
    auto installs = status()["installs"].get<int>();

    // Someone wipes the table (a vswitchd restart does the same): the read-back puts it back.
    ovs.ofctl({"del-flows", "br-int"});
    flows->verifySoon();
    ASSERT_TRUE(runUntil([&] { return status()["readBackRepairs"] == 1 && status()["installs"] == installs + 1; })) << status().dump();
    EXPECT_NE(dump().find("nw_dst=10.244.2.0/24"), std::string::npos) << dump();
    EXPECT_EQ(repairs.count("flows"), 1u);
    EXPECT_EQ(status()["installs"].get<int>(), installs + 1);

    // A table that is as installed is left alone: no install, no repair.
    flows->verifySoon();
    loop.runUntil([] { return false; }, 300ms);
    EXPECT_EQ(status()["installs"].get<int>(), installs + 1);
    EXPECT_EQ(status()["readBackRepairs"], 1);
}

TEST_F(FlowReconcilerTest, APeerChangeReplacesOnlyWhatChanged) {
    ASSERT_TRUE(installedWithPod());
    flows->setPeers({peer("172.18.0.4", "10.244.3.0/24")});
    ASSERT_TRUE(runUntil([&] { return dump().find("10.244.3.0/24") != std::string::npos; })) << dump();
    EXPECT_EQ(dump().find("10.244.2.0/24"), std::string::npos) << "the old peer's flows are gone:\n" << dump();
    EXPECT_EQ(dump().find("tun_src=172.18.0.3"), std::string::npos) << dump();
}

// Once the bridge holds a table, one `ovs-ofctl bundle` waits on its stdin
// for the next change (its exec is most of a small change's cost): the next
// change goes through it and another is started; one that died meanwhile is
// replaced by a fresh start, and the change still goes in.
TEST_F(FlowReconcilerTest, AChangeGoesThroughTheBundleWaitingForItOrAFreshOne) {
    ASSERT_TRUE(installedWithPod());
    std::vector<pid_t> waiting;
    ASSERT_TRUE(runUntil([&] { return (waiting = waitingBundles()).size() == 1; }, 5s)) << waiting.size();
    const pid_t first = waiting[0];
    flows->setPeers({peer("172.18.0.4", "10.244.3.0/24")});
    ASSERT_TRUE(runUntil([&] { return dump().find("10.244.3.0/24") != std::string::npos; })) << dump();
    ASSERT_TRUE(runUntil([&] { waiting = waitingBundles(); return waiting.size() == 1 && waiting[0] != first; }, 5s));
    EXPECT_NE(::kill(first, 0), 0) << "the bundle that waited took the change and exited";

    ::kill(waiting[0], SIGKILL);
    flows->setPeers({peer("172.18.0.5", "10.244.4.0/24")});
    ASSERT_TRUE(runUntil([&] { return dump().find("10.244.4.0/24") != std::string::npos; })) << dump() << status().dump();
    EXPECT_EQ(dump().find("10.244.3.0/24"), std::string::npos) << dump();
    EXPECT_TRUE(runUntil([&] { return waitingBundles().size() == 1; }, 5s));

    flows.reset();  // the agent leaving: nothing of it stays behind
    EXPECT_TRUE(runUntil([&] { return waitingBundles().empty(); }, 5s));
}

TEST_F(FlowReconcilerTest, IngressDropsUnknownTunnelSourcesAndSpoofedPodsAndCountsThem) {
    ASSERT_TRUE(installedWithPod());
    auto known = trace("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,ip,nw_src=10.244.2.7,nw_dst=10.244.1.5", "trk,new");
    EXPECT_NE(known.find("output:7"), std::string::npos) << known;
    auto unknown = trace("in_port=2,tun_src=172.18.0.66,tun_dst=172.18.0.2,ip,nw_src=10.244.2.7,nw_dst=10.244.1.5");
    EXPECT_NE(lastLine(unknown).find("Datapath actions: drop"), std::string::npos) << unknown;
    auto spoofIp = trace(std::string("in_port=7,dl_src=") + kPodMac + ",ip,nw_src=10.244.1.1,nw_dst=10.244.2.7");
    EXPECT_NE(lastLine(spoofIp).find("drop"), std::string::npos) << spoofIp;
    auto spoofMac = trace("in_port=7,dl_src=0a:58:0a:f4:01:99,ip,nw_src=10.244.1.5,nw_dst=10.244.2.7");
    EXPECT_NE(lastLine(spoofMac).find("drop"), std::string::npos) << spoofMac;
    auto spoofArp = trace(std::string("in_port=7,dl_src=") + kPodMac + ",arp,arp_spa=10.244.1.1,arp_sha=" + kPodMac);
    EXPECT_NE(lastLine(spoofArp).find("drop"), std::string::npos) << spoofArp;

    // Real packets through the table: two spoofed frames from the pod's port.
    for (int i = 0; i < 2; ++i) {
        // Ethernet (dst gw, src the pod's MAC) + IPv4 from 10.244.1.1 (the gateway's address) to 10.244.2.7, UDP.
        ovs.ofctl({"packet-out", "br-int",
                   "in_port=7,packet=aabbcc000001" + std::string("0a580af40105") + "0800"
                   "4500001c000100004011" "0000" "0af40101" "0af40207" "303930390008" "0000"
                   ",actions=resubmit(,0)"});
    }
    flows->verifySoon();
    ASSERT_TRUE(runUntil([&] { return status()["dropped"]["podSpoofed"] == 2; })) << status().dump() << dump();
    MetricsText m;
    flows->metrics(m);
    EXPECT_NE(m.str().find("kovs_flow_drops_total{reason=\"pod_spoofed\"} 2"), std::string::npos) << m.str();
}

// A row anyone with the OVSDB socket can write must not take a running pod's
// traffic: before rows were checked, a second port claiming pod1's address
// got its own nw_dst=10.244.1.5 flows next to pod1's, and one of the two won.
TEST_F(FlowReconcilerTest, APortRowClaimingARunningPodsAddressIsRefusedAndThePodKeepsIt) {
    ASSERT_TRUE(installedWithPod());
    ovs.vsctl({"add-port", "br-int", "thief", "--", "set", "interface", "thief", "type=internal", "ofport_request=8",
               "external_ids:attached-mac=\"0a:58:0a:f4:01:66\"", "external_ids:ip-address=\"10.244.1.5/24\"",
               "external_ids:kovs-owner=kovs-cni"});
    ASSERT_TRUE(runUntil([&] { return status()["podsLeftOut"].size() == 1; })) << status().dump();
    EXPECT_NE(status()["podsLeftOut"][0].get<std::string>().find("pod thief: 10.244.1.5 is pod1's, which holds it: refused"),
              std::string::npos)
        << status().dump();
    auto toPod = trace("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,ip,nw_src=10.244.2.7,nw_dst=10.244.1.5", "trk,new");
    EXPECT_NE(toPod.find("output:7"), std::string::npos) << toPod;
    EXPECT_EQ(toPod.find("output:8"), std::string::npos) << toPod;
    auto fromThief = trace("in_port=8,dl_src=0a:58:0a:f4:01:66,ip,nw_src=10.244.1.5,nw_dst=10.244.2.7");
    EXPECT_NE(lastLine(fromThief).find("drop"), std::string::npos) << fromThief;
    // A restarted agent reads the holder back from the table vswitchd kept.
    startReconciler();
    ASSERT_TRUE(runUntil([&] { return status().value("installs", 0) > 0 && status()["podsLeftOut"].size() == 1; }))
        << status().dump();
    EXPECT_NE(status()["podsLeftOut"].dump().find("pod thief: 10.244.1.5 is pod1's, which holds it: refused"), std::string::npos)
        << status().dump();
    EXPECT_NE(flows->desired().find("output:7"), std::string::npos) << flows->desired();
    // kovsctl doctor's dry run reads the holders back from the bridge, as vswitchd prints the table.
    auto holders = flows::FlowTable::holdersIn(flows::parseFlowDump(dump()), {{"pod1", kPodMac, {}, 7}, {"thief", "", {}, 8}});
    EXPECT_EQ(holders, (std::map<std::string, std::string>{{"10.244.1.5", "pod1"}, {kPodMac, "pod1"}})) << dump();

    // A port on another bridge, or a row kovs-cni did not write, is no pod of br-int's at all.
    ovs.vsctl({"add-br", "br-other", "--", "set", "bridge", "br-other", "datapath_type=netdev", "--", "add-port", "br-other",
               "elsewhere", "--", "set", "interface", "elsewhere", "type=internal", "ofport_request=9",
               "external_ids:attached-mac=\"0a:58:0a:f4:01:09\"", "external_ids:ip-address=\"10.244.1.9/24\"",
               "external_ids:kovs-owner=kovs-cni"});
    ovs.vsctl({"add-port", "br-int", "foreign", "--", "set", "interface", "foreign", "type=internal", "ofport_request=10",
               "external_ids:attached-mac=\"0a:58:0a:f4:01:0a\"", "external_ids:ip-address=\"10.244.1.10/24\""});
    ovs.vsctl({"add-port", "br-int", "pod3", "--", "set", "interface", "pod3", "type=internal", "ofport_request=11",
               "external_ids:attached-mac=\"0a:58:0a:f4:01:0b\"", "external_ids:ip-address=\"10.244.1.11/24\"",
               "external_ids:kovs-owner=kovs-cni"});
    ASSERT_TRUE(runUntil([&] { return flows->desired().find("nw_dst=10.244.1.11 ") != std::string::npos; })) << flows->desired();
    EXPECT_EQ(flows->desired().find("10.244.1.9 "), std::string::npos) << flows->desired();
    EXPECT_EQ(flows->desired().find("10.244.1.10 "), std::string::npos) << flows->desired();

    // The claim withdrawn, nothing is left out.
    ovs.vsctl({"del-port", "br-int", "thief"});
    ASSERT_TRUE(runUntil([&] { return status()["podsLeftOut"].empty(); })) << status().dump();
}

// A VXLAN packet proves nothing about its sender: before the inner source
// was bound to the outer, a packet from a known peer's address was delivered
// with any source in any peer's pod CIDR, and anything else went to gw0.
TEST_F(FlowReconcilerTest, FromTheTunnelAPeerSpeaksOnlyForItsOwnPodsAndItself) {
    startReconciler({IpPrefix::parse("10.244.1.1/24")}, {peer("172.18.0.3", "10.244.2.0/24"), peer("172.18.0.4", "10.244.3.0/24")});
    ASSERT_TRUE(installedWithPod()) << status().dump();
    ASSERT_TRUE(runUntil([&] { return dump().find("10.244.3.0/24") != std::string::npos; })) << dump();
    auto own = trace("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,ip,nw_src=10.244.2.7,nw_dst=10.244.1.5", "trk,new");
    EXPECT_NE(own.find("output:7"), std::string::npos) << own;
    // From 172.18.0.3: the other peer's pod, a local pod, this node's gateway, an address outside every CIDR.
    for (const char* src : {"10.244.3.7", "10.244.1.9", "10.244.1.1", "192.0.2.1"}) {
        auto forged = trace(std::string("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,ip,nw_src=") + src + ",nw_dst=10.244.1.5",
                            "trk,new");
        EXPECT_NE(lastLine(forged).find("Datapath actions: drop"), std::string::npos) << src << ":\n" << forged;
        EXPECT_EQ(forged.find("output:1"), std::string::npos) << src << " must not reach the node's kernel either:\n" << forged;
    }
    // Real packets: two forged frames from the tunnel port are counted.
    for (int i = 0; i < 2; ++i) {
        // Ethernet + IPv4 from 10.244.3.7 (the other peer's pod) to 10.244.1.5, UDP.
        ovs.ofctl({"packet-out", "br-int",
                   "in_port=2,packet=aabbcc000001" "0a580af40307" "0800"
                   "4500001c000100004011" "0000" "0af40307" "0af40105" "303930390008" "0000"
                   ",actions=set_field:172.18.0.3->tun_src,resubmit(,0)"});
    }
    flows->verifySoon();
    ASSERT_TRUE(runUntil([&] { return status()["dropped"]["tunnelForgedSource"] == 2; })) << status().dump() << dump();
    MetricsText m;
    flows->metrics(m);
    EXPECT_NE(m.str().find("kovs_flow_drops_total{reason=\"tunnel_forged_source\"} 2"), std::string::npos) << m.str();
}

// kind's `ipFamily: dual`: vswitchd takes the IPv6 stages as rendered, they
// decide as flows/FlowTable.hpp says, and the node's kernel accepts the
// advertisement the table makes for a peer's pod.
TEST_F(FlowReconcilerTest, ADualStackTableDecidesBothFamiliesAndAnswersTheNodesSolicitations) {
    ovs.vsctl({"set", "interface", "pod1", "external_ids:ip-address=\"10.244.1.5/24,fd00:10:244:1::5/64\""});
    flows::FlowPeer dual{IpPrefix::parse("172.18.0.3"),
                         {IpPrefix::parse("10.244.2.0/24"), IpPrefix::parse("fd00:10:244:2::/64")},
                         {IpPrefix::parse("172.18.0.3"), IpPrefix::parse("fc00:f853:ccd:e793::3")}};
    startReconciler({IpPrefix::parse("10.244.1.1/24"), IpPrefix::parse("fd00:10:244:1::1/64")}, {dual});
    ASSERT_TRUE(runUntil([&] { return status().value("installs", 0) > 0 && dump().find("ipv6_dst=fd00:10:244:1::5 ") != std::string::npos; }))
        << status().dump() << dump();
    const auto& desired = flows->desired();
    EXPECT_EQ(flows::parseFlowDump(dump()).count, static_cast<size_t>(std::count(desired.begin(), desired.end(), '\n')))
        << "every flow rendered is on the bridge:\n" << desired << dump();

    auto in6 = trace("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,ipv6,ipv6_src=fd00:10:244:2::7,ipv6_dst=fd00:10:244:1::5", "trk,new");
    EXPECT_NE(in6.find("output:7"), std::string::npos) << in6;
    const std::string pod = std::string("in_port=7,dl_src=") + kPodMac + ",";
    auto out6 = trace(pod + "ipv6,ipv6_src=fd00:10:244:1::5,ipv6_dst=fd00:10:244:2::7", "trk,new");
    EXPECT_NE(out6.find("set_field:172.18.0.3->tun_dst"), std::string::npos) << out6;
    EXPECT_NE(out6.find("output:2"), std::string::npos) << out6;
    auto forged6 = trace("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,ipv6,ipv6_src=fd00:10:244:1::9,ipv6_dst=fd00:10:244:1::5");
    EXPECT_NE(lastLine(forged6).find("Datapath actions: drop"), std::string::npos) << forged6;
    auto spoofed6 = trace(pod + "ipv6,ipv6_src=fd00:10:244:1::1,ipv6_dst=fd00:10:244:2::7");
    EXPECT_NE(lastLine(spoofed6).find("drop"), std::string::npos) << spoofed6;
    // The pod may announce itself, not the gateway, and not be a router.
    auto ownNa = trace(pod + "icmp6,ipv6_src=fd00:10:244:1::5,ipv6_dst=ff02::1,icmpv6_type=136,nd_target=fd00:10:244:1::5,nd_tll=" + kPodMac);
    EXPECT_EQ(lastLine(ownNa).find("drop"), std::string::npos) << ownNa;
    auto gatewayNa = trace(pod + "icmp6,ipv6_src=fd00:10:244:1::5,ipv6_dst=ff02::1,icmpv6_type=136,nd_target=fd00:10:244:1::1,nd_tll=" + kPodMac);
    EXPECT_NE(lastLine(gatewayNa).find("drop"), std::string::npos) << gatewayNa;
    auto ra = trace(pod + "icmp6,ipv6_src=fe80::858:aff:fef4:105,ipv6_dst=ff02::1,icmpv6_type=134");
    EXPECT_NE(lastLine(ra).find("drop"), std::string::npos) << ra;

    // Real packets: the node's kernel solicits a peer's pod on gw0 and takes
    // the table's answer (gw0 as the address; the tunnel carries the rest).
    runChecked({"ip", "link", "set", "gw0", "up"});
    runChecked({"ip", "-6", "addr", "add", "fd00:10:244:1::1/64", "dev", "gw0", "nodad"});
    runChecked({"ip", "-6", "route", "add", "fd00:10:244:2::/64", "dev", "gw0"});
    auto link = runChecked({"ip", "-o", "link", "show", "gw0"});  // "... link/ether aa:bb:.. brd ..."
    auto at = link.find("link/ether ");
    ASSERT_NE(at, std::string::npos) << link;
    auto gwMac = link.substr(at + 11, 17);
    std::string neigh;
    ASSERT_TRUE(runUntil([&] {
        runProcess({"ping", "-6", "-c1", "-W1", "fd00:10:244:2::7"});
        neigh = runChecked({"ip", "-6", "neigh", "show", "fd00:10:244:2::7", "dev", "gw0"});
        return neigh.find("lladdr " + gwMac) != std::string::npos;
    }, 10s)) << neigh << dump();
    EXPECT_EQ(neigh.find("FAILED"), std::string::npos) << neigh;
}

TEST_F(FlowReconcilerTest, TheReplyOfAConnectionTheKernelForwardedGoesBackToIt) {
    ASSERT_TRUE(installedWithPod());
    // A connection the node's kernel DNATed (a Service) comes in from gw0 and is committed with a mark...
    auto fromKernel = trace("in_port=1,tcp,nw_src=10.244.2.7,nw_dst=10.244.1.5,tp_src=40000,tp_dst=8080", "trk,new");
    EXPECT_NE(fromKernel.find("ct(commit,zone=107"), std::string::npos) << fromKernel;
    EXPECT_NE(fromKernel.find("output:7"), std::string::npos) << fromKernel;
    // ...and its reply from the pod goes to gw0, not to the client directly.
    auto reply = trace(std::string("in_port=7,dl_src=") + kPodMac + ",tcp,nw_src=10.244.1.5,nw_dst=10.244.2.7,"
                                                                     "tp_src=8080,tp_dst=40000,ct_mark=1",
                       "trk,est,rpl");
    EXPECT_NE(lastLine(reply).find("Datapath actions:"), std::string::npos) << reply;
    EXPECT_NE(reply.find("output:1"), std::string::npos) << reply;
    // A pod's own connection to a remote pod goes out the tunnel.
    auto direct = trace(std::string("in_port=7,dl_src=") + kPodMac + ",ip,nw_src=10.244.1.5,nw_dst=10.244.2.7", "trk,new");
    EXPECT_NE(direct.find("output:2"), std::string::npos) << direct;
    // A remote node's own address answering a pod (a hostNetwork Service backend) goes through the kernel.
    auto hostReply = trace("in_port=2,tun_src=172.18.0.3,tun_dst=172.18.0.2,ip,nw_src=172.18.0.3,nw_dst=10.244.1.5", "trk,new");
    EXPECT_NE(hostReply.find("output:1"), std::string::npos) << hostReply;
}

// kovs-cni's ADD waits on this: a new pod port is reported ready once its
// flows are in the bridge, and a port that never gets them times out with a reason.
TEST_F(FlowReconcilerTest, TellsWhenANewPodPortsFlowsAreIn) {
    ASSERT_TRUE(installedWithPod());
    int answers = 0;
    bool ready1 = false;
    flows->whenPortReady("pod1", 1s, [&](bool ready, const std::string&) { ready1 = ready, ++answers; });
    EXPECT_TRUE(ready1) << "an installed port is ready at once";

    std::optional<bool> ready2;
    flows->whenPortReady("pod2", 10s, [&](bool ready, const std::string& why) { ready2 = ready, ++answers, (void)why; });
    EXPECT_FALSE(ready2.has_value());
    ovs.vsctl({"add-port", "br-int", "pod2", "--", "set", "interface", "pod2", "type=internal", "ofport_request=8",
               "external_ids:attached-mac=\"0a:58:0a:f4:01:06\"", "external_ids:ip-address=\"10.244.1.6/24\"",
               "external_ids:kovs-owner=kovs-cni"});
    ASSERT_TRUE(runUntil([&] { return ready2.has_value(); })) << status().dump();
    EXPECT_TRUE(*ready2);
    EXPECT_NE(dump().find("nw_dst=10.244.1.6 "), std::string::npos) << dump();

    std::string why;
    std::optional<bool> ready3;
    flows->whenPortReady("pod3", 200ms, [&](bool ready, const std::string& w) { ready3 = ready, why = w, ++answers; });
    ASSERT_TRUE(runUntil([&] { return ready3.has_value(); }, 5s));
    EXPECT_FALSE(*ready3);
    EXPECT_EQ(why, "flows for pod3 not installed within 200 ms");
    EXPECT_EQ(answers, 3) << "each waiter is answered exactly once";
}

// ovs-ofctl waits for vswitchd; a stopped vswitchd must not stop the agent's
// loop (the probes answer from it): the job's calls run as child processes,
// are given up on at their deadline, and the job recovers once vswitchd does.
TEST_F(FlowReconcilerTest, AStoppedVswitchdDoesNotStallTheLoop) {
    ASSERT_TRUE(installedWithPod());
    flows::FlowReconcilerOptions f;
    f.rundir = ovs.dir();
    f.gatewayAddresses = {kovs::IpPrefix::parse("10.244.1.1/24")};
    f.readBack = 1h;
    f.ofctlTimeout = 500ms;
    RepairLog log;
    flows::FlowReconciler slow(loop, db->replica(), log, f);
    slow.setPeers({peer("172.18.0.9", "10.244.9.0/24")});  // another table than `flows` installed: an install is due
    ::kill(ovs.vswitchdPid(), SIGSTOP);
    slow.start();
    auto largestGap = std::chrono::steady_clock::duration::zero();
    auto last = std::chrono::steady_clock::now();
    std::function<void()> tick = [&] {
        auto now = std::chrono::steady_clock::now();
        largestGap = std::max(largestGap, now - last);
        last = now;
        loop.after(10ms, tick);
    };
    loop.after(10ms, tick);
    nlohmann::json s;
    EXPECT_TRUE(runUntil([&] { s = nlohmann::json(); slow.status(s); return !s["flows"]["error"].get<std::string>().empty(); }, 5s));
    EXPECT_NE(s["flows"]["error"].get<std::string>().find("killed after 500 ms"), std::string::npos) << s.dump();
    EXPECT_LT(largestGap, 200ms) << "the loop stalled";
    ::kill(ovs.vswitchdPid(), SIGCONT);
    EXPECT_TRUE(runUntil([&] { s = nlohmann::json(); slow.status(s); return s["flows"]["error"] == "" && s["flows"]["installs"] == 1; }, 20s))
        << s.dump();
    EXPECT_NE(dump().find("10.244.9.0/24"), std::string::npos) << dump();
}

// ovs-ofctl that cannot be started at all (not on PATH here; EMFILE or EAGAIN
// on a busy node) is a failed pass like any other: retried with backoff, and
// the table converges once ovs-ofctl can run again. Before, the spawn error
// escaped the pass and no retry or read-back ever came.
TEST_F(FlowReconcilerTest, AnOvsOfctlThatCannotStartIsRetriedUntilTheTableConverges) {
    ASSERT_TRUE(installedWithPod());
    auto installs = status()["installs"].get<int>();
    ovs.ofctl({"del-flows", "br-int"});
    std::string path = ::getenv("PATH") ? ::getenv("PATH") : "/usr/sbin:/usr/bin:/sbin:/bin";
    ::setenv("PATH", "/nonexistent", 1);
    flows->verifySoon();
    nlohmann::json s;
    bool failed = runUntil([&] { s = status(); return s["error"].get<std::string>().find("ovs-ofctl") != std::string::npos; }, 5s);
    loop.runUntil([] { return false; }, 500ms);  // a few more failed passes
    ::setenv("PATH", path.c_str(), 1);
    ASSERT_TRUE(failed) << s.dump();
    EXPECT_TRUE(runUntil([&] { s = status(); return s["error"] == "" && dump().find("nw_dst=10.244.2.0/24") != std::string::npos; }, 20s))
        << s.dump() << dump();
    EXPECT_EQ(s["installs"].get<int>(), installs + 1) << s.dump();
}
