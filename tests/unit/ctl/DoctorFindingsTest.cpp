// kovsctl doctor's findings from the jobs' plans: a non-empty plan fails the
// check and says what the job would do; an empty one passes. The plans are
// the jobs' own planners run on made-up observations.
#include "ctl/DoctorFindings.hpp"

#include <gtest/gtest.h>

#include <linux/rtnetlink.h>

using namespace kovs;
using namespace kovs::ctl;
using Status = DoctorCheck::Status;
using Aspect = offload::OffloadObservation::Aspect;

namespace {

std::vector<IpPrefix> prefixes(std::initializer_list<const char*> list) {
    std::vector<IpPrefix> out;
    for (const auto* p : list) out.push_back(IpPrefix::parse(p));
    return out;
}

}  // namespace

TEST(DoctorFindings, OffloadNamesEveryDeviceTheGuardWouldRepairAndHowToDoItByHand) {
    auto plan = offload::planOffload({
        {Aspect::TxChecksum, "gw0", "", "gw0", false, ""},
        {Aspect::TxChecksum, "pod default/web (/run/netns/cni-1:eth0)", "/run/netns/cni-1", "eth0", true, ""},
        {Aspect::HostVeth, "veth0a1b", "", "veth0a1b", true, ""},
        {Aspect::TxChecksum, "br-phy", "", "br-phy", std::nullopt, "br-phy: No such device"},
    });
    auto found = offloadFindings(plan);
    ASSERT_EQ(found.size(), 3u);
    EXPECT_EQ(found[0].id, "tx-checksum");
    EXPECT_EQ(found[0].status, Status::Fail);
    EXPECT_EQ(found[0].detail, "pod default/web (/run/netns/cni-1:eth0): TX checksum offload is on (the offload guard would "
                               "turn TX checksum off on pod default/web (/run/netns/cni-1:eth0))");
    EXPECT_NE(found[0].hint.find("ethtool -K (inside the pod: nsenter --net=/run/netns/cni-1) eth0 tx off"), std::string::npos)
        << found[0].hint;
    EXPECT_EQ(found[1].id, "pod-veth");
    EXPECT_NE(found[1].detail.find("would take veth0a1b (a pod veth's host end) off the node's IP stack"), std::string::npos)
        << found[1].detail;
    EXPECT_EQ(found[2].id, "tx-checksum");
    EXPECT_EQ(found[2].detail, "br-phy: br-phy: No such device");
    EXPECT_NE(found[2].hint.find("the device is missing"), std::string::npos);
}

TEST(DoctorFindings, OffloadWithNothingToRepairIsOneOkCountingTheDevices) {
    auto found = offloadFindings(offload::planOffload({{Aspect::TxChecksum, "gw0", "", "gw0", false, ""},
                                                       {Aspect::HostVeth, "veth1", "", "veth1", false, ""}}));
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].status, Status::Ok);
    EXPECT_EQ(found[0].detail, "TX checksum offload is off on all 2 devices checked");
}

TEST(DoctorFindings, SocketBuffersNameTheSmallSocketsByInterface) {
    std::vector<daemons::PacketSocketInfo> sockets{{"br-phy", 8 << 20, 8 << 20, 12, 1},
                                                   {"kvtest0", 212992, 212992, 13, 2},
                                                   {"", 8 << 20, 212992, 14, 3}};
    auto c = socketBufferFinding(sockets, 8192);
    EXPECT_EQ(c.status, Status::Fail);
    EXPECT_EQ(c.detail, "vswitchd packet sockets below 8192 KiB, which TCP bursts overflow: kvtest0 (208 KiB), send socket "
                        "(208 KiB) (the socket buffer job would enlarge 2 of 3)");
    sockets.resize(1);
    c = socketBufferFinding(sockets, 8192);
    EXPECT_EQ(c.status, Status::Ok);
    EXPECT_EQ(c.detail, "all 1 of vswitchd's packet sockets have 8192 KiB buffers");
}

TEST(DoctorFindings, GatewaySaysWhatTheGuardWouldReAddAndRemove) {
    GatewayDryRun run{"gw0", false,
                      gateway::planGatewayAddresses({prefixes({"10.244.1.1/24"}), false}, {}, prefixes({"192.0.2.9/32"}))};
    std::vector<RouteInfo> observed{{.dst = IpPrefix::parse("10.244.9.0/24"), .protocol = gateway::kKovsRouteProtocol}};  // no longer wanted
    std::vector<RouteInfo> peers{{.dst = IpPrefix::parse("10.244.2.0/24")}};
    run.routes = gateway::planGatewayRoutes(gateway::desiredGatewayRoutes(run.addresses.guarded, peers), observed, true);
    auto c = gatewayFinding(run);
    EXPECT_EQ(c.status, Status::Fail);
    EXPECT_NE(c.detail.find("address 10.244.1.1/24 missing (the guard would re-add it)"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("foreign address 192.0.2.9/32 (the guard would remove it)"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("route 10.244.2.0/24 missing (the guard would add it)"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("stale kovs route 10.244.9.0/24 (the guard would remove it)"), std::string::npos) << c.detail;
    EXPECT_EQ(c.detail.rfind("gw0: ", 0), 0u) << c.detail;
}

TEST(DoctorFindings, GatewayAsTheGuardKeepsItPasses) {
    auto held = prefixes({"10.244.1.1/24"});
    GatewayDryRun run{"gw0", false, gateway::planGatewayAddresses({held, false}, {}, held)};
    run.routes = gateway::planGatewayRoutes(gateway::desiredGatewayRoutes(run.addresses.guarded, {}), {}, true);
    std::vector<RouteInfo> observed;
    for (const auto& d : run.routes.add) observed.push_back({.dst = d.dst, .protocol = RTPROT_KERNEL});
    run.routes = gateway::planGatewayRoutes(gateway::desiredGatewayRoutes(run.addresses.guarded, {}), observed, true);
    auto c = gatewayFinding(run);
    EXPECT_EQ(c.status, Status::Ok) << c.detail;
    EXPECT_EQ(c.detail, "gw0 has its addresses and their routes");
}

TEST(DoctorFindings, AnAdoptedGatewayWithoutIpv4IsAFinding) {
    GatewayDryRun run{"ovn-k8s-mp0", true, gateway::planGatewayAddresses({{}, true}, {}, {})};
    auto c = gatewayFinding(run);
    EXPECT_EQ(c.status, Status::Fail);
    EXPECT_NE(c.detail.find("no IPv4 address"), std::string::npos) << c.detail;
}

TEST(DoctorFindings, FlowsCountTheBridgeAgainstTheJobsTable) {
    auto c = flowsFinding("br-int", 0, 41, "the peer file /etc/kovs/peers.yaml");
    EXPECT_EQ(c.status, Status::Fail);
    EXPECT_EQ(c.detail, "br-int has 0 flows where the flow job would install 41 (peers from the peer file /etc/kovs/peers.yaml)");
    c = flowsFinding("br-int", 41, 41, "the agent");
    EXPECT_EQ(c.status, Status::Ok);
    EXPECT_EQ(c.detail, "br-int holds the 41 flows the flow job would install (peers from the agent)");
}

TEST(DoctorFindings, EgressJudgesRuleCountsOnlyWhenThePeersAreKnown) {
    std::vector<EgressTableSeen> tables{{"table ip kovs", 3, 4}, {"table ip6 kovs", 0, 4}};
    auto c = egressFinding(tables, std::string("the agent"), false);
    EXPECT_EQ(c.status, Status::Fail);
    EXPECT_EQ(c.detail, "table ip kovs has 3 rules where the egress job would install 4 (peers from the agent); "
                        "table ip6 kovs (the egress masquerade) is missing: pods cannot reach beyond the cluster");
    tables.resize(1);
    c = egressFinding(tables, std::nullopt, false);
    EXPECT_EQ(c.status, Status::Ok) << "without peers a present table cannot be judged by its count";
    EXPECT_EQ(c.detail, "table ip kovs masquerades pod traffic leaving the cluster");
    tables[0].held = 4;
    c = egressFinding(tables, std::string("the agent"), true);
    EXPECT_EQ(c.status, Status::Fail);
    EXPECT_NE(c.detail.find("keep being changed under the agent"), std::string::npos) << c.detail;
}

TEST(DoctorFindings, UplinkSaysWhatTheUplinkJobWouldDoOrWhatItWaitsFor) {
    uplink::UplinkOptions opts;
    uplink::UplinkPlan plan;
    EXPECT_EQ(uplinkFinding(opts, plan).status, Status::Ok);
    EXPECT_EQ(uplinkFinding(opts, plan).detail, "the node's addresses are on br-phy (shim mode), eth0 holds none");
    plan.steps.push_back({uplink::step::SetUp{"kovs-up0"}, std::nullopt});
    auto c = uplinkFinding(opts, plan);
    EXPECT_EQ(c.status, Status::Fail);
    EXPECT_EQ(c.detail.rfind("eth0 / br-phy: the uplink job would ", 0), 0u) << c.detail;
    EXPECT_NE(c.detail.find("kovs-up0"), std::string::npos) << c.detail;
    plan.steps.clear();
    plan.waitingFor = "ovs-vswitchd to attach kovs-up1";
    EXPECT_EQ(uplinkFinding(opts, plan).detail, "eth0 / br-phy: waiting for ovs-vswitchd to attach kovs-up1");
    plan.blocked = "OVS port kovs-up1 is in bridge br-x";
    EXPECT_EQ(uplinkFinding(opts, plan).detail, "OVS port kovs-up1 is in bridge br-x");
}
