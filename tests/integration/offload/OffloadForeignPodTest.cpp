// Pods another CNI attached (issue 16, defect 6): OVN-Kubernetes' pod ports
// are plain veths on br-int with external_ids:iface-id and nothing of
// kovs-cni's. The offload guard finds them through the kernel (the veth's peer
// lives in another netns) and turns TX checksum off inside the pod; the host
// end stays as that CNI made it. Before, such a pod kept TX checksum on, TCP
// to it failed, and doctor said "all checks passed".
#include <gtest/gtest.h>

#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "offload/OffloadGuard.hpp"
#include "ovs/OvsdbClient.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"
#include "tests/support/TestNetns.hpp"

using namespace kovs;
using namespace kovs::test;
using offload::OffloadGuard;
using offload::PodInterface;
using namespace std::chrono_literals;

namespace {

// A pod as ovnkube-node attaches it: veth, host end on br-int with the
// logical switch port's name as iface-id.
struct OvnPod {
    TestNetns ns;
    std::string host;
    OvnPod(const OvsSandbox& ovs, const std::string& name, const std::string& hostEnd, const std::string& ifaceId)
        : ns(name), host(hostEnd) {
        runProcess({"ip", "link", "del", host});
        runChecked({"ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns.name()});
        runChecked({"ip", "link", "set", host, "up"});
        ovs.vsctl({"add-port", "br-int", host, "--", "set", "Interface", host, "external_ids:iface-id=" + ifaceId,
                   "external_ids:attached_mac=0a:58:0a:f4:01:0b"});
    }
    ~OvnPod() { runProcess({"ip", "link", "del", host}); }
    std::string tx() const { return ethtoolFeature(ns.name(), "eth0", "tx-checksumming"); }
};

struct Replica {
    EventLoop loop;
    ovs::OvsdbClient client;
    explicit Replica(const OvsSandbox& ovs) : client(loop, options(ovs)) { EXPECT_TRUE(client.waitReady(5s)); }
    static ovs::OvsdbClientOptions options(const OvsSandbox& ovs) {
        ovs::OvsdbClientOptions o;
        o.remote = ovs.dbRemote();
        return o;
    }
};

offload::PodInterfacesOptions runNetns() {
    offload::PodInterfacesOptions o;
    o.netnsDirs = {"/run/netns"};  // where `ip netns` (TestNetns) pins them
    return o;
}

}  // namespace

TEST(OffloadForeignPods, AnotherCnisPodIsFoundAndRepairedInsideItsNetnsOnly) {
    OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev"});
    OvnPod pod(ovs, "ofp-pod1", "ofp-veth1", "default_pod1");
    // Not pods: OVN-K's management port (internal, with an iface-id) and a
    // veth whose peer is in this netns.
    ovs.vsctl({"add-port", "br-int", "ofp-mp0", "--", "set", "Interface", "ofp-mp0", "type=internal",
               "external_ids:iface-id=k8s-node1"});
    runProcess({"ip", "link", "del", "ofp-local"});
    runChecked({"ip", "link", "add", "ofp-local", "type", "veth", "peer", "name", "ofp-localp"});
    ovs.vsctl({"add-port", "br-int", "ofp-local"});
    ASSERT_EQ(pod.tx(), "on");
    auto hostBefore = runChecked({"ip", "-d", "link", "show", "ofp-veth1"});
    auto sysctlBefore = runChecked({"sysctl", "-n", "net.ipv6.conf.ofp-veth1.disable_ipv6"});

    Replica db(ovs);
    auto pods = offload::podInterfacesFromReplica(db.client.replica(), "br-int", runNetns());
    ASSERT_EQ(pods, (std::vector<PodInterface>{{pod.ns.path(), "eth0", "", "iface-id default_pod1", true}}));
    OffloadGuard guard({}, [&] { return offload::podInterfacesFromReplica(db.client.replica(), "br-int", runNetns()); });
    EXPECT_EQ(guard.sweep(), 1u);
    EXPECT_EQ(pod.tx(), "off");
    EXPECT_EQ(guard.stats().errors, 0u) << guard.stats().lastError.str();
    EXPECT_EQ(guard.stats().hostVethRepairs, 0u) << "the host end is the other CNI's";
    // ip -d shows flags, MTU, addresses' absence and the veth peer: unchanged.
    auto hostAfter = runChecked({"ip", "-d", "link", "show", "ofp-veth1"});
    EXPECT_EQ(hostAfter.substr(hostAfter.find(':', 3)), hostBefore.substr(hostBefore.find(':', 3)));
    EXPECT_EQ(runChecked({"sysctl", "-n", "net.ipv6.conf.ofp-veth1.disable_ipv6"}), sysctlBefore);
    nlohmann::json s;
    guard.status(s);
    EXPECT_EQ(s["offload"]["foreignPods"], 1) << s.dump();
    runProcess({"ip", "link", "del", "ofp-local"});
}

// A pod the other CNI attaches while the agent runs gets no kovs-cni ADD
// (unless kovs is chained there): the port change is enough, no resync needed.
TEST(OffloadForeignPods, APodAttachedLaterIsRepairedOnThePortChange) {
    OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev"});
    Replica db(ovs);
    OffloadGuard guard({}, [&] { return offload::podInterfacesFromReplica(db.client.replica(), "br-int", runNetns()); });
    guard.attach(db.loop, std::chrono::hours(1));  // the start-up sweep; no periodic one in this test
    db.client.addChangeHandler([&] { guard.portsChanged(); });  // as the agent wires it
    OvnPod pod(ovs, "ofp-pod2", "ofp-veth2", "default_pod2");
    ASSERT_EQ(pod.tx(), "on");
    EXPECT_TRUE(db.loop.runUntil([&] { return guard.stats().repairs == 1; }, 10s)) << "repairs " << guard.stats().repairs;
    EXPECT_EQ(pod.tx(), "off");
    EXPECT_EQ(guard.stats().sweeps, 1u) << "found by the port change, not by a sweep";
}
