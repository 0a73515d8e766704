// The agent's offload guard on real devices: host devices repaired on a sweep
// and on link events (a re-created tap comes back with offload on), pod
// interfaces repaired inside their netns, found through OVSDB, broken pods
// counted without stopping the others. `ethtool -k` is the witness.
#include <gtest/gtest.h>

#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "ovs/OvsdbClient.hpp"
#include "base/Ethtool.hpp"
#include "base/Netns.hpp"
#include "offload/OffloadGuard.hpp"
#include "cni/VethPair.hpp"
#include "tests/integration/cni/CniTestSupport.hpp"
#include "tests/support/TestNetns.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"

using namespace kovs;
using namespace kovs::test;
using offload::OffloadGuard;
using offload::PodInterface;
using namespace std::chrono_literals;

namespace {

// A veth pair in the test netns standing in for a host device such as gw0.
struct HostVeth {
    std::string name;
    explicit HostVeth(std::string n) : name(std::move(n)) { create(); }
    ~HostVeth() { runProcess({"ip", "link", "del", name}); }
    void create() const {
        runProcess({"ip", "link", "del", name});
        runChecked({"ip", "link", "add", name, "type", "veth", "peer", "name", name + "p"});
    }
};

// A pod netns holding eth0 (the peer lives in the test netns).
struct Pod {
    TestNetns ns;
    std::string host;
    Pod(const std::string& name, const std::string& hostEnd) : ns(name), host(hostEnd) {
        runProcess({"ip", "link", "del", host});
        runChecked({"ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns.name()});
    }
    ~Pod() { runProcess({"ip", "link", "del", host}); }
};

}  // namespace

TEST(OffloadGuard, SweepRepairsHostDevicesOnceAndCountsIt) {
    HostVeth gw("og-gw0"), phy("og-phy");
    ASSERT_EQ(ethtoolFeature("", gw.name, "tx-checksumming"), "on");
    OffloadGuard guard({gw.name, phy.name, "og-missing"});
    EXPECT_EQ(guard.sweep(), 2u);
    EXPECT_EQ(ethtoolFeature("", gw.name, "tx-checksumming"), "off");
    EXPECT_EQ(ethtoolFeature("", phy.name, "tx-checksumming"), "off");
    EXPECT_EQ(guard.sweep(), 0u) << "nothing drifted: nothing to repair";
    EXPECT_EQ(guard.stats().repairs, 2u);
    EXPECT_EQ(guard.stats().sweeps, 2u);
    EXPECT_EQ(guard.stats().errors, 2u) << "og-missing does not exist, once per sweep";
    EXPECT_NE(guard.stats().lastError.str().find("og-missing"), std::string::npos) << guard.stats().lastError.str();
}

TEST(OffloadGuard, RecreatedDeviceIsRepairedFromTheLinkEvent) {
    HostVeth gw("og-gw1");
    EventLoop loop;
    OffloadGuard guard({gw.name});
    guard.attach(loop, std::chrono::hours(1));  // the start-up sweep; no resync in this test: events only
    ASSERT_EQ(ethtoolFeature("", gw.name, "tx-checksumming"), "off");

    // What an ovs-vswitchd restart does to its taps: the device is gone and
    // comes back with the kernel's defaults.
    gw.create();
    ASSERT_EQ(ethtoolFeature("", gw.name, "tx-checksumming"), "on");
    bool off = loop.runUntil([&] { return !Ethtool().txChecksum(gw.name); }, 5s);
    EXPECT_TRUE(off) << "still on after 5 s; repairs " << guard.stats().repairs;
    EXPECT_EQ(ethtoolFeature("", gw.name, "tx-checksumming"), "off");
    EXPECT_EQ(guard.stats().repairs, 2u);

    // A feature change is a RTM_NEWLINK too: someone turning it back on is undone at once.
    runChecked({"ethtool", "-K", gw.name, "tx", "on"});
    off = loop.runUntil([&] { return guard.stats().repairs == 3 && !Ethtool().txChecksum(gw.name); }, 5s);
    EXPECT_TRUE(off) << "repairs " << guard.stats().repairs;
    EXPECT_EQ(ethtoolFeature("", gw.name, "tx-checksumming"), "off");
}

TEST(OffloadGuard, PeriodicResyncRepairsPodsAndSurvivesAGoneNetns) {
    Pod a("og-pod-a", "og-a0"), b("og-pod-b", "og-b0");
    std::vector<PodInterface> pods = {{a.ns.path(), "eth0"}, {"/run/netns/og-gone", "eth0"}, {b.ns.path(), "eth0"}};
    EventLoop loop;
    OffloadGuard guard({}, [&] { return pods; });
    guard.attach(loop, 50ms);
    bool fixed = loop.runUntil([&] { return guard.stats().repairs >= 2; }, 5s);
    ASSERT_TRUE(fixed) << "repairs " << guard.stats().repairs << ", last error " << guard.stats().lastError.str();
    EXPECT_EQ(ethtoolFeature(a.ns.name(), "eth0", "tx-checksumming"), "off");
    EXPECT_EQ(ethtoolFeature(b.ns.name(), "eth0", "tx-checksumming"), "off");
    EXPECT_GE(guard.stats().errors, 1u);
    EXPECT_NE(guard.stats().lastError.str().find("/run/netns/og-gone"), std::string::npos) << guard.stats().lastError.str();
    EXPECT_EQ(ethtoolFeature("", a.host, "tx-checksumming"), "on") << "host ends of pods are not the guard's";

    // Drift inside a pod (no event reaches our netns): the resync finds it.
    runChecked({"ip", "netns", "exec", b.ns.name(), "ethtool", "-K", "eth0", "tx", "on"});
    fixed = loop.runUntil([&] { return guard.stats().repairs >= 3; }, 5s);
    EXPECT_TRUE(fixed) << "repairs " << guard.stats().repairs;
    EXPECT_EQ(ethtoolFeature(b.ns.name(), "eth0", "tx-checksumming"), "off");
}

// A pod attached by a kovs-cni from before the host end was isolated: its
// host veth answers ARP and has IPv6. The sweep takes both away, once.
TEST(OffloadGuard, IsolatesHostEndsOfPodsAnOlderCniAttached) {
    Pod a("og-pod-old", "og-old0");
    runChecked({"ip", "link", "set", a.host, "up"});
    auto sysctl = [&] { return runChecked({"cat", "/proc/sys/net/ipv6/conf/" + a.host + "/disable_ipv6"}); };
    auto flags = [&] { return nlohmann::json::parse(runChecked({"ip", "-j", "link", "show", a.host})).at(0).at("flags").dump(); };
    ASSERT_EQ(flags().find("NOARP"), std::string::npos);
    ASSERT_EQ(sysctl(), "0\n");
    OffloadGuard guard({}, [&] { return std::vector<PodInterface>{{a.ns.path(), "eth0", a.host}}; });
    EXPECT_EQ(guard.sweep(), 2u) << "TX checksum in the pod and the host end: " << guard.stats().lastError.str();
    EXPECT_EQ(guard.stats().hostVethRepairs, 1u);
    EXPECT_NE(flags().find("NOARP"), std::string::npos) << flags();
    EXPECT_EQ(sysctl(), "1\n");
    EXPECT_EQ(guard.sweep(), 0u);
    EXPECT_EQ(guard.stats().errors, 0u) << guard.stats().lastError.str();
}

// Start-up sweep over pods kovs-cni attached while "the agent was down".
TEST(OffloadGuard, FindsPodsThroughOvsdbAndRepairsThem) {
    OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev"});
    ASSERT_TRUE(pollUntil([&] { return ovs.vsctl({"get", "Interface", "br-int", "ofport"}) == "65534\n"; }, 10s));
    TempDir data;
    TestNetns pod("og-ovs-pod");
    nlohmann::json conf = {{"cniVersion", "1.0.0"}, {"name", "og"}, {"type", "kovs"}, {"ovsdb", ovs.dbRemote()},
                           {"ipam", {{"type", "host-local"}, {"dataDir", data.path()}, {"subnet", "10.245.0.0/24"}}}};
    auto add = runCni(kovsCniBinary(), {{"CNI_COMMAND", "ADD"}, {"CNI_CONTAINERID", "og1"}, {"CNI_NETNS", pod.path()},
                                        {"CNI_IFNAME", "eth0"}, {"CNI_PATH", "/usr/lib/cni"}}, conf.dump());
    ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
    runChecked({"ip", "netns", "exec", pod.name(), "ethtool", "-K", "eth0", "tx", "on"});
    // A port kovs-cni does not own, on the same bridge, is never looked at.
    ovs.vsctl({"add-port", "br-int", "other0", "--", "set", "Interface", "other0", "type=internal", "--", "set", "Port",
               "other0", "external_ids:cni-netns=/run/netns/nope", "external_ids:cni-ifname=eth0"});

    EventLoop loop;
    ovs::OvsdbClientOptions opts;
    opts.remote = ovs.dbRemote();
    ovs::OvsdbClient db(loop, opts);
    ASSERT_TRUE(db.waitReady(5s));
    auto pods = offload::podInterfacesFromReplica(db.replica(), "br-int");
    ASSERT_EQ(pods, (std::vector<PodInterface>{{pod.path(), "eth0", cni::VethPair::hostNameFor("og1", "eth0"), "container og1", false}}));
    OffloadGuard guard({}, [&] { return offload::podInterfacesFromReplica(db.replica(), "br-int"); });
    EXPECT_EQ(guard.sweep(), 1u);
    EXPECT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "off");
    EXPECT_EQ(guard.stats().errors, 0u) << guard.stats().lastError.str();
}
