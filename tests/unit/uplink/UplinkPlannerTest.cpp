// UplinkPlanner on snapshots of a node: no kernel, no OVS. Each case is a
// state a real node can be in (fresh, waiting for OVS, migrated, rebooted,
// killed midway, migrated by kovs 0.1) and the plan it must get.
#include "uplink/UplinkPlanner.hpp"

#include <gtest/gtest.h>
#include <linux/if_addr.h>

#include "base/Error.hpp"

using namespace kovs;
using namespace kovs::uplink;

namespace {

const std::string kMac = "02:42:ac:1f:00:02";

AddressInfo addr(const std::string& text, uint32_t flags = IFA_F_PERMANENT) {
    AddressInfo a;
    a.local = IpPrefix::parse(text);
    a.flags = flags;
    if (a.family() == AF_INET) a.label = "eth0";
    return a;
}
AddressInfo linkLocal() {
    auto a = addr("fe80::42:acff:fe1f:2/64");
    a.scope = RT_SCOPE_LINK;
    return a;
}
RouteInfo route(const std::string& dst, const std::string& via, uint32_t metric = 0) {
    RouteInfo r;
    r.dst = IpPrefix::parse(dst);
    if (!via.empty()) r.gateway = IpPrefix::parse(via);
    r.priority = metric;
    return r;
}
RouteInfo kernelRoute(const std::string& dst) {
    auto r = route(dst, "");
    r.protocol = RTPROT_KERNEL;
    r.scope = RT_SCOPE_LINK;
    return r;
}
LinkInfo link(const std::string& name, int index, const std::string& mac = "", unsigned flags = IFF_UP) {
    LinkInfo l;
    l.name = name;
    l.index = index;
    l.mac = mac;
    l.mtu = 1500;
    l.flags = flags;
    return l;
}

// A node as Docker makes it: eth0 with IPv4 + IPv6 and three routes; the
// bridge job has made br-phy (a random MAC yet); nothing else.
UplinkObserved freshNode() {
    UplinkObserved o;
    o.device = link("eth0", 2, kMac);
    o.deviceAddresses = {addr("172.31.0.2/24"), addr("fd31::2/64", IFA_F_PERMANENT | IFA_F_NODAD), linkLocal()};
    o.deviceRoutes = {route("0.0.0.0/0", "172.31.0.1"), route("10.99.0.0/16", "172.31.0.1", 50),
                      kernelRoute("172.31.0.0/24"), route("::/0", "fd31::1", 1024), kernelRoute("fd31::/64")};
    o.bridge = link("br-phy", 5, "aa:aa:aa:aa:aa:aa", 0);
    o.bridgeTxChecksum = true;
    o.ovs.known = true;
    o.ovs.ifaceTypes = {"system", "internal", "afxdp", "afxdp-nonpmd"};
    return o;
}

// The shim's devices in place, and OVS ready: the port attached, br-phy in eth0's MAC.
UplinkObserved shimReady(UplinkObserved o, const UplinkDesired& want) {
    o.shimBridgeEnd = link("kovs-up0", 7, "", IFF_UP | IFF_NOARP);
    o.shimBridgeEnd->kind = "veth";
    o.shimBridgeEnd->peer = 8;
    o.shimOvsEnd = link("kovs-up1", 8, "", IFF_UP | IFF_NOARP);
    o.shimOvsEnd->kind = "veth";
    o.shimOvsEnd->peer = 7;
    o.shimRedirect = 2;
    o.record = want.record;
    o.ovs.portBridge = "br-phy";
    o.ovs.ofport = 2;
    o.ovs.bridgeHwaddr = kMac;
    o.bridge->mac = kMac;
    return o;
}

// Fully migrated, as the steps above leave it.
UplinkObserved migrated(const UplinkDesired& want) {
    auto o = shimReady(freshNode(), want);
    o.bridge->flags = IFF_UP;
    o.bridgeTxChecksum = false;
    o.bridgeAddresses = {addr("172.31.0.2/24"), addr("fd31::2/64", IFA_F_PERMANENT | IFA_F_NODAD), linkLocal()};
    o.bridgeRoutes = {route("0.0.0.0/0", "172.31.0.1"), route("10.99.0.0/16", "172.31.0.1", 50),
                      kernelRoute("172.31.0.0/24"), route("::/0", "fd31::1", 1024)};
    o.deviceAddresses = {linkLocal()};
    o.deviceRoutes = {};
    o.deviceRedirect = 7;
    return o;
}

std::vector<std::string> names(const UplinkPlan& p) { return p.describeSteps(); }
std::vector<std::string> undos(const UplinkPlan& p) {
    std::vector<std::string> v;
    for (const auto& s : p.steps) v.push_back(s.undo ? describe(*s.undo) : "-");
    return v;
}

}  // namespace

TEST(UplinkPlanner, AFreshNodeGetsTheShimThenWaitsForOvs) {
    UplinkOptions opts;
    auto o = freshNode();
    auto want = desire(opts, o);
    EXPECT_EQ(want.source, "eth0");
    EXPECT_EQ(want.mac, kMac);
    EXPECT_EQ(want.addresses.size(), 2u) << "the link-local address stays with eth0";
    EXPECT_EQ(want.routes.size(), 3u) << "routes of protocol kernel come back with the addresses by themselves";

    auto plan = planMigration(opts, want, o);
    EXPECT_EQ(names(plan), (std::vector<std::string>{
                               "record eth0's addressing", "create veth kovs-up0/kovs-up1 (MTU 1500)",
                               "no ARP, no IPv6 link-local on kovs-up0", "no ARP, no IPv6 link-local on kovs-up1",
                               "TX checksum off on kovs-up0", "bring kovs-up0 up", "bring kovs-up1 up",
                               "redirect kovs-up0 ingress to eth0"}));
    EXPECT_EQ(undos(plan), (std::vector<std::string>{"forget the record of the addressing", "delete kovs-up0", "-", "-",
                                                      "-", "-", "-", "remove the redirect of kovs-up0"}));
    EXPECT_NE(plan.waitingFor, "") << "nothing past OVS's readiness is planned from a look taken before the shim existed";
    EXPECT_EQ(plan.blocked, "");
}

TEST(UplinkPlanner, OnceOvsIsReadyTheAddressesMoveBeforeTheyLeaveEth0) {
    UplinkOptions opts;
    auto want = desire(opts, freshNode());
    auto o = shimReady(freshNode(), want);
    auto plan = planMigration(opts, want, o);
    EXPECT_TRUE(plan.waitingFor.empty() && plan.blocked.empty()) << plan.waitingFor << plan.blocked;
    EXPECT_EQ(names(plan), (std::vector<std::string>{
                               "TX checksum off on br-phy", "bring br-phy up", "add address 172.31.0.2/24 to br-phy",
                               "add address fd31::2/64 to br-phy",
                               "remove route default via 172.31.0.1 proto boot dev eth0",
                               "add route default via 172.31.0.1 proto boot dev br-phy",
                               "remove route 10.99.0.0/16 via 172.31.0.1 metric 50 proto boot dev eth0",
                               "add route 10.99.0.0/16 via 172.31.0.1 metric 50 proto boot dev br-phy",
                               "remove route default via fd31::1 metric 1024 proto boot dev eth0",
                               "add route default via fd31::1 metric 1024 proto boot dev br-phy",
                               "redirect eth0 ingress to kovs-up0", "remove address fd31::2/64 from eth0",
                               "remove address 172.31.0.2/24 from eth0"}));
    // Undone in reverse, these put eth0 back as it was.
    EXPECT_EQ(undos(plan)[1], "bring br-phy down");
    EXPECT_EQ(undos(plan)[4], "add route default via 172.31.0.1 proto boot dev eth0");
    EXPECT_EQ(undos(plan)[5], "remove route default via 172.31.0.1 proto boot dev br-phy");
    EXPECT_EQ(undos(plan).back(), "add address 172.31.0.2/24 to eth0");
    // No DAD on br-phy while eth0 still holds the address.
    const auto& v6 = std::get<step::AddAddress>(plan.steps[3].action);
    EXPECT_TRUE(v6.address.flags & IFA_F_NODAD);
    EXPECT_EQ(v6.address.label, "");
}

TEST(UplinkPlanner, AMigratedNodeNeedsNothing) {
    UplinkOptions opts;
    auto want = desire(opts, freshNode());
    auto o = migrated(want);
    auto again = desire(opts, o);
    EXPECT_EQ(again.source, "the record");
    auto plan = planMigration(opts, again, o);
    EXPECT_TRUE(plan.converged()) << ::testing::PrintToString(names(plan)) << plan.waitingFor;
}

TEST(UplinkPlanner, TheGateWaitsForVswitchdAndBlocksOnAForeignPort) {
    UplinkOptions opts;
    auto want = desire(opts, freshNode());
    auto o = shimReady(freshNode(), want);
    o.ovs.ofport = -1;
    o.ovs.interfaceError = "could not open network device kovs-up1 (No such device)";
    auto plan = planMigration(opts, want, o);
    EXPECT_TRUE(plan.steps.empty());
    EXPECT_EQ(plan.waitingFor, "ovs-vswitchd to attach kovs-up1 (could not open network device kovs-up1 (No such device))");

    o.ovs.ofport = 3;
    o.bridge->mac = "aa:aa:aa:aa:aa:aa";
    EXPECT_EQ(planMigration(opts, want, o).waitingFor, "br-phy to take the MAC " + kMac + " (it has aa:aa:aa:aa:aa:aa)");

    o.ovs.portBridge = "br-other";
    plan = planMigration(opts, want, o);
    EXPECT_NE(plan.blocked.find("OVS port kovs-up1 is in bridge br-other"), std::string::npos) << plan.blocked;
}

TEST(UplinkPlanner, TheMacToPinSurvivesTheRecordAndAnOlderKovs) {
    auto o = freshNode();
    EXPECT_EQ(pinnedMac(o), kMac) << "a fresh or rebooted node: eth0's own";
    o.ovs.bridgeHwaddr = "02:42:ac:1f:00:09";
    EXPECT_EQ(pinnedMac(o), kMac) << "Docker gave eth0 another MAC: eth0's wins over the database";

    // kovs 0.1 gave eth0 legacyShimMac(original); br-phy kept the original.
    EXPECT_EQ(legacyShimMac("02:42:ac:1f:00:02"), "0a:42:ac:1f:00:02");
    EXPECT_EQ(legacyShimMac("0a:42:ac:1f:00:02"), "02:42:ac:1f:00:02");
    EXPECT_EQ(legacyShimMac("00:16:3e:00:00:01"), "0a:16:3e:00:00:01");
    o.device->mac = legacyShimMac(kMac);
    o.ovs.bridgeHwaddr = kMac;
    EXPECT_EQ(pinnedMac(o), kMac) << "eth0 wears the made-up MAC: OVSDB has the original";
    o.ovs.bridgeHwaddr = "";
    o.bridge->mac = "02:42:AC:1F:00:02";
    EXPECT_EQ(pinnedMac(o), kMac) << "no OVSDB value (a new database): br-phy's device still wears it";
    EXPECT_THROW(legacyShimMac("02:42:ac:1f:00"), Error);
}

TEST(UplinkPlanner, ANodeMigratedByKovs01IsConvertedAtTheEnd) {
    UplinkOptions opts;
    auto want = desire(opts, freshNode());
    auto o = migrated(want);
    o.record.reset();  // 0.1 wrote another format
    o.device->mac = legacyShimMac(kMac);
    o.legacyBridge = link("kovs-shim", 6);
    o.device->master = 6;
    o.shimBridgeEnd->master = 6;
    o.deviceRedirect.reset();
    o.shimRedirect.reset();
    auto again = desire(opts, o);
    EXPECT_EQ(again.source, "br-phy");
    EXPECT_EQ(again.mac, kMac);
    auto plan = planMigration(opts, again, o);
    EXPECT_EQ(names(plan), (std::vector<std::string>{"record eth0's addressing", "redirect kovs-up0 ingress to eth0"}));
    o.shimRedirect = 2;
    o.record = again.record;
    plan = planMigration(opts, again, o);
    EXPECT_EQ(names(plan), (std::vector<std::string>{"redirect eth0 ingress to kovs-up0", "take eth0 out of its bridge",
                                                      "delete kovs-shim", "MAC " + kMac + " on eth0"}));
}

TEST(UplinkPlanner, WhoseAddressingIsTheNodes) {
    UplinkOptions opts;
    auto want = desire(opts, freshNode());
    // Killed midway: addresses on both, the routes on neither; the record knows them.
    auto o = migrated(want);
    o.deviceAddresses = freshNode().deviceAddresses;
    o.bridgeRoutes = {kernelRoute("172.31.0.0/24")};
    auto mid = desire(opts, o);
    EXPECT_EQ(mid.source, "the record");
    EXPECT_EQ(mid.routes.size(), 3u);
    auto plan = planMigration(opts, mid, o);
    EXPECT_EQ(names(plan), (std::vector<std::string>{
                               "add route default via 172.31.0.1 proto boot dev br-phy",
                               "add route 10.99.0.0/16 via 172.31.0.1 metric 50 proto boot dev br-phy",
                               "add route default via fd31::1 metric 1024 proto boot dev br-phy",
                               "remove address fd31::2/64 from eth0", "remove address 172.31.0.2/24 from eth0"}));

    // A stale record (a persistent run directory after a reboot into another address): eth0's wins.
    auto stale = freshNode();
    stale.record = want.record;
    stale.record->addresses = {addr("192.0.2.9/24")};
    EXPECT_EQ(desire(opts, stale).source, "eth0");

    // Migrated, record gone: br-phy's, without the NODAD kovs added there.
    auto lost = migrated(want);
    lost.record.reset();
    auto fromBridge = desire(opts, lost);
    EXPECT_EQ(fromBridge.source, "br-phy");
    EXPECT_FALSE(fromBridge.addresses[1].flags & IFA_F_NODAD);
    EXPECT_TRUE(planMigration(opts, fromBridge, lost).steps.size() == 1) << "only the record is written again";

    auto none = freshNode();
    none.deviceAddresses = {linkLocal()};
    EXPECT_THROW(desire(opts, none), Error);
    none.device.reset();
    EXPECT_THROW(desire(opts, none), Error);
}

TEST(UplinkPlanner, AddressesKeepEth0sOrder) {
    UplinkOptions opts;
    auto o = freshNode();
    // eth0 lists IPv4 in order (primary first) and IPv6 newest first.
    o.deviceAddresses = {addr("172.31.0.2/24"), addr("172.31.0.3/24"), addr("fd31::3/64"), addr("fd31::2/64")};
    auto want = desire(opts, o);
    auto ready = shimReady(o, want);
    auto plan = planMigration(opts, want, ready);
    std::vector<std::string> adds, dels;
    for (const auto& s : plan.steps) {
        if (auto* a = std::get_if<step::AddAddress>(&s.action)) adds.push_back(a->address.str());
        if (auto* d = std::get_if<step::DeleteAddress>(&s.action)) dels.push_back(d->address.str());
    }
    EXPECT_EQ(adds, (std::vector<std::string>{"172.31.0.2/24", "172.31.0.3/24", "fd31::2/64", "fd31::3/64"}));
    EXPECT_EQ(dels, (std::vector<std::string>{"fd31::3/64", "fd31::2/64", "172.31.0.3/24", "172.31.0.2/24"}))
        << "a secondary before its primary; undone in reverse, eth0 lists them as before";
}

TEST(UplinkPlanner, DirectModeRemovesTheShimOnceOvsHasEth0) {
    UplinkOptions opts;
    auto want = desire(opts, freshNode());
    auto o = migrated(want);
    opts.mode = UplinkMode::Direct;
    o.ovs.portBridge = "";  // the bridge job has not swapped the port yet
    auto plan = planMigration(opts, desire(opts, o), o);
    EXPECT_EQ(names(plan), std::vector<std::string>{"record eth0's addressing"});
    EXPECT_EQ(plan.waitingFor, "OVS to add port eth0 to br-phy");
    o.record = desire(opts, o).record;
    o.ovs.portBridge = "br-phy";
    plan = planMigration(opts, desire(opts, o), o);
    EXPECT_EQ(names(plan), (std::vector<std::string>{"remove the redirect of eth0", "delete kovs-up0", "delete kovs-up1"}));
}

TEST(UplinkPlanner, CleanupPutsEth0BackFromTheRecordOrFromBrPhy) {
    UplinkOptions opts;
    auto want = desire(opts, freshNode());
    auto o = migrated(want);
    auto plan = planCleanup(opts, o);
    EXPECT_EQ(names(plan), (std::vector<std::string>{
                               "remove the redirect of eth0", "add address 172.31.0.2/24 to eth0",
                               "add address fd31::2/64 to eth0", "remove route default via 172.31.0.1 proto boot dev br-phy",
                               "remove route 10.99.0.0/16 via 172.31.0.1 metric 50 proto boot dev br-phy",
                               "remove route default via fd31::1 metric 1024 proto boot dev br-phy",
                               "remove address 172.31.0.2/24 from br-phy", "remove address fd31::2/64 from br-phy",
                               "add route default via 172.31.0.1 proto boot dev eth0",
                               "add route 10.99.0.0/16 via 172.31.0.1 metric 50 proto boot dev eth0",
                               "add route default via fd31::1 metric 1024 proto boot dev eth0",
                               "remove the redirect of kovs-up0", "delete kovs-up0", "delete kovs-up1"}));
    // From the record: eth0's own flags (NODAD was eth0's here too).
    EXPECT_TRUE(std::get<step::AddAddress>(plan.steps[2].action).address.flags & IFA_F_NODAD);

    o.record.reset();
    plan = planCleanup(opts, o);
    EXPECT_FALSE(std::get<step::AddAddress>(plan.steps[2].action).address.flags & IFA_F_NODAD)
        << "without the record, eth0 gets the kernel's default (DAD), not br-phy's NODAD";
    EXPECT_EQ(addressesToRestore(opts, o).size(), 2u);

    // Not migrated at all: nothing to do.
    EXPECT_TRUE(planCleanup(opts, freshNode()).steps.empty());
}

TEST(UplinkPlanner, PortTypesAreCheckedAgainstThisVswitchd) {
    UplinkOptions opts;
    auto o = freshNode();
    EXPECT_EQ(ovsSide(opts, o).port, "kovs-up1");
    EXPECT_EQ(ovsSide(opts, o).type, "") << "system is OVS's empty type";
    opts.portType = "afxdp-nonpmd";
    EXPECT_EQ(ovsSide(opts, o).type, "afxdp-nonpmd");
    opts.portType = "dpdk";
    try {
        ovsSide(opts, o);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "uplink port type dpdk: ovs-vswitchd reports dpdk_initialized=false");
    }
    opts.portType = "afxdp";
    o.ovs.ifaceTypes = {"system", "internal"};
    EXPECT_THROW(ovsSide(opts, o), Error);
    opts.portType = "tap";
    try {
        ovsSide(opts, o);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "uplink port type 'tap': unknown (system, afxdp, afxdp-nonpmd, dpdk)");
    }
    opts = UplinkOptions{};
    opts.mode = UplinkMode::Direct;
    EXPECT_EQ(ovsSide(opts, o).port, "eth0");
    EXPECT_EQ(ovsSide(opts, o).hwaddr, kMac);
}
