#include "bridge/BridgePlanner.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"

using kovs::bridge::BridgeOptions;
using kovs::bridge::BridgePlanner;
using kovs::ovs::OvsdbReplica;
using nlohmann::json;
namespace ovsdb = kovs::ovsdb;

namespace {

const json kOwner = json::parse(R"(["map",[["kovs-owner","kovs-agent"]]])");

// What OVS holds after a successful reconcile with default options.
json convergedDb() {
    json ifaces = json::object(), ports = json::object(), bridges = json::object();
    auto port = [&](const std::string& n, const std::string& type, json options) {
        ifaces["i-" + n] = {{"initial", {{"name", n}, {"type", type}, {"options", options}, {"external_ids", kOwner}}}};
        ports["p-" + n] = {{"initial", {{"name", n}, {"interfaces", ovsdb::uuid("i-" + n)}, {"external_ids", kOwner}}}};
        return ovsdb::uuid("p-" + n);
    };
    json none = ovsdb::map({});
    bridges["b-int"] = {{"initial",
                         {{"name", "br-int"},
                          {"datapath_type", "netdev"},
                          {"external_ids", kOwner},
                          {"ports", ovsdb::set({port("br-int", "internal", none), port("gw0", "internal", none),
                                                port("tun0", "vxlan",
                                                     ovsdb::map({{"remote_ip", "flow"},
                                                                 {"key", "flow"},
                                                                 {"dst_port", "4789"}}))})}}}};
    bridges["b-phy"] = {{"initial",
                         {{"name", "br-phy"},
                          {"datapath_type", "netdev"},
                          {"external_ids", kOwner},
                          {"ports", port("br-phy", "internal", none)}}}};
    json root = {{"r", {{"initial", {{"bridges", ovsdb::set({ovsdb::uuid("b-int"), ovsdb::uuid("b-phy")})}}}}}};
    return {{"Open_vSwitch", root}, {"Bridge", bridges}, {"Port", ports}, {"Interface", ifaces}};
}

OvsdbReplica replicaOf(const json& updates) {
    OvsdbReplica r;
    r.apply(updates);
    return r;
}

std::vector<std::string> opsOf(const kovs::bridge::BridgePlan& p) {
    std::vector<std::string> v;
    for (size_t i = 0; i < p.txn.size(); ++i) v.push_back(p.txn.describe(i));
    return v;
}

}  // namespace

TEST(BridgePlanner, ConvergedDatabaseNeedsNothing) {
    BridgePlanner planner{BridgeOptions{}};
    auto plan = planner.plan(replicaOf(convergedDb()));
    EXPECT_TRUE(plan.txn.empty()) << plan.txn.params().dump();
    EXPECT_TRUE(plan.foreign.empty());
}

TEST(BridgePlanner, EmptyDatabaseGetsEverythingInOneTransaction) {
    BridgePlanner planner{BridgeOptions{}};
    auto plan = planner.plan(replicaOf(json::parse(R"({"Open_vSwitch":{"r":{"initial":{}}}})")));
    EXPECT_EQ(opsOf(plan), (std::vector<std::string>{
                               "insert Interface br-int", "insert Port br-int", "insert Interface gw0",
                               "insert Port gw0", "insert Interface tun0", "insert Port tun0", "wait Bridge br-int",
                               "insert Bridge br-int", "mutate Open_vSwitch (root)", "insert Interface br-phy",
                               "insert Port br-phy", "wait Bridge br-phy", "insert Bridge br-phy",
                               "mutate Open_vSwitch (root)"}));
    auto p = plan.txn.params();
    EXPECT_EQ(p[5]["row"]["options"], ovsdb::map({{"remote_ip", "flow"}, {"key", "flow"}, {"dst_port", "4789"}}));
    EXPECT_EQ(p[8]["row"]["datapath_type"], "netdev");
    EXPECT_EQ(p[8]["row"]["external_ids"], kOwner);
    EXPECT_FALSE(p[8]["row"].contains("fail_mode"));
}

TEST(BridgePlanner, NoRootRowCreatesOneGuardedByAWait) {
    BridgePlanner planner{BridgeOptions{}};
    auto ops = opsOf(planner.plan(OvsdbReplica{}));
    ASSERT_GE(ops.size(), 2u);
    EXPECT_EQ(ops[0], "wait Open_vSwitch (root)");
    EXPECT_EQ(ops[1], "insert Open_vSwitch (root)");
}

TEST(BridgePlanner, MissingPortIsAddedWithAWaitOnItsBridge) {
    auto db = convergedDb();
    db["Bridge"]["b-int"]["initial"]["ports"] = ovsdb::set({ovsdb::uuid("p-br-int"), ovsdb::uuid("p-tun0")});
    db["Port"].erase("p-gw0");
    db["Interface"].erase("i-gw0");
    BridgePlanner planner{BridgeOptions{}};
    auto plan = planner.plan(replicaOf(db));
    EXPECT_EQ(opsOf(plan), (std::vector<std::string>{"insert Interface gw0", "insert Port gw0", "wait Bridge br-int",
                                                     "mutate Bridge br-int"}));
    EXPECT_EQ(plan.txn.params()[3]["where"], ovsdb::whereUuid("b-int"));
}

TEST(BridgePlanner, DriftedOwnedColumnsAreUpdated) {
    auto db = convergedDb();
    db["Bridge"]["b-int"]["initial"]["datapath_type"] = "system";
    db["Interface"]["i-tun0"]["initial"]["options"] = ovsdb::map({{"remote_ip", "10.0.0.1"}});
    BridgeOptions o;
    o.failMode = "secure";
    auto plan = BridgePlanner(o).plan(replicaOf(db));
    EXPECT_EQ(opsOf(plan), (std::vector<std::string>{"update Bridge br-int", "update Interface tun0"}));
    EXPECT_EQ(plan.txn.params()[1]["row"], json({{"datapath_type", "netdev"}, {"fail_mode", "secure"}}));
}

TEST(BridgePlanner, ForeignRowsAreNeverUpdated) {
    auto db = convergedDb();
    auto foreign = ovsdb::map({{"owner", "antrea"}});
    db["Bridge"]["b-int"]["initial"]["external_ids"] = foreign;
    db["Bridge"]["b-int"]["initial"]["datapath_type"] = "system";
    db["Port"]["p-gw0"]["initial"]["external_ids"] = foreign;
    db["Interface"]["i-gw0"]["initial"]["type"] = "";
    auto plan = BridgePlanner(BridgeOptions{}).plan(replicaOf(db));
    EXPECT_TRUE(plan.txn.empty()) << plan.txn.params().dump();
    EXPECT_EQ(plan.foreign.size(), 2u);
}

TEST(BridgePlanner, CleanupTouchesOnlyOwnedRows) {
    auto db = convergedDb();
    db["Bridge"]["b-int"]["initial"]["external_ids"] = ovsdb::map({{"owner", "antrea"}});
    db["Port"]["p-br-int"]["initial"]["external_ids"] = ovsdb::map({});
    auto plan = BridgePlanner(BridgeOptions{}).planCleanup(replicaOf(db));
    EXPECT_EQ(opsOf(plan), (std::vector<std::string>{"mutate Bridge br-int", "mutate Open_vSwitch (root)"}));
    auto p = plan.txn.params();
    EXPECT_EQ(p[1]["mutations"][0][2], ovsdb::set({ovsdb::uuid("p-gw0"), ovsdb::uuid("p-tun0")}));
    EXPECT_EQ(p[2]["mutations"][0][2], ovsdb::set({ovsdb::uuid("b-phy")}));
}

TEST(BridgePlanner, BadOptionsAreClearErrors) {
    auto err = [](auto mutate) {
        BridgeOptions o;
        mutate(o);
        try {
            BridgePlanner p(o);
        } catch (const kovs::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(err([](BridgeOptions& o) { o.integrationBridge = ""; }), "bridge options: integration bridge '': not a valid interface name (empty)");
    EXPECT_EQ(err([](BridgeOptions& o) { o.gatewayPort = ""; }), "no error") << "companion mode: no gateway of kovs's";
    EXPECT_EQ(err([](BridgeOptions& o) { o.tunnelPort = ""; }), "no error") << "companion mode: no tunnel of kovs's";
    EXPECT_EQ(err([](BridgeOptions& o) { o.gatewayMtu = 40; }), "bridge options: gateway MTU 40 is not in 68..65535");
    EXPECT_EQ(err([](BridgeOptions& o) { o.gatewayPort = "a-very-long-gateway0"; }),
              "bridge options: gateway port 'a-very-long-gateway0': not a valid interface name (longer than 15 characters)");
    EXPECT_EQ(err([](BridgeOptions& o) { o.tunnelPort = "gw0"; }),
              "bridge options: name 'gw0' used for two bridges/ports");
    EXPECT_EQ(err([](BridgeOptions& o) { o.tunnelDstPort = 70000; }),
              "bridge options: tunnel dst_port 70000 is not in 1..65535");
    EXPECT_EQ(err([](BridgeOptions& o) { o.failMode = "open"; }),
              "bridge options: fail_mode 'open' is not secure or standalone");
    EXPECT_EQ(err([](BridgeOptions& o) { o.physBridge = "br phy"; }),
              "bridge options: physical bridge 'br phy': not a valid interface name (contains a space or control character)");
    EXPECT_EQ(err([](BridgeOptions& o) { o.physBridge = ""; }), "no error");
}

// The uplink's OVS side is part of br-phy's desired state (issue 15, item 2).
namespace {

BridgeOptions withUplink(const std::string& port = "kovs-up1", const std::string& type = "") {
    BridgeOptions o;
    o.uplink = kovs::bridge::BridgeUplinkPort{port, type, "02:42:AC:1F:00:02"};
    return o;
}

// convergedDb() with the uplink port in br-phy and br-phy's hwaddr pinned.
json convergedWithUplink(const json& portIds = kOwner) {
    auto db = convergedDb();
    db["Interface"]["i-up"] = {{"initial", {{"name", "kovs-up1"}, {"type", ""}, {"options", ovsdb::map({})}, {"external_ids", portIds}}}};
    db["Port"]["p-up"] = {{"initial", {{"name", "kovs-up1"}, {"interfaces", ovsdb::uuid("i-up")}, {"external_ids", portIds}}}};
    db["Bridge"]["b-phy"]["initial"]["ports"] = ovsdb::set({ovsdb::uuid("p-br-phy"), ovsdb::uuid("p-up")});
    db["Bridge"]["b-phy"]["initial"]["other_config"] = ovsdb::map({{"hwaddr", "02:42:ac:1f:00:02"}, {"foo", "bar"}});
    return db;
}

}  // namespace

TEST(BridgePlanner, TheUplinkPortAndHwaddrAreCreatedWithBrPhy) {
    auto plan = BridgePlanner(withUplink()).plan(replicaOf(json::parse(R"({"Open_vSwitch":{"r":{"initial":{}}}})")));
    auto ops = opsOf(plan);
    EXPECT_NE(std::find(ops.begin(), ops.end(), "insert Port kovs-up1"), ops.end()) << ::testing::PrintToString(ops);
    for (const auto& op : plan.txn.params()) {
        if (!op.is_object()) continue;  // the database name
        if (op.value("op", "") == "insert" && op.value("table", "") == "Bridge" && op["row"]["name"] == "br-phy") {
            EXPECT_EQ(op["row"]["other_config"], ovsdb::map({{"hwaddr", "02:42:ac:1f:00:02"}}));
            EXPECT_EQ(op["row"]["ports"][1].size(), 2u) << "its own port and the uplink";
        }
        if (op.value("op", "") == "insert" && op.value("table", "") == "Interface" && op["row"]["name"] == "kovs-up1") {
            EXPECT_EQ(op["row"]["external_ids"], kOwner);
        }
    }
}

TEST(BridgePlanner, AConvergedUplinkNeedsNothingAndForeignOtherConfigKeysStay) {
    auto plan = BridgePlanner(withUplink()).plan(replicaOf(convergedWithUplink()));
    EXPECT_TRUE(plan.txn.empty()) << plan.txn.params().dump();
}

TEST(BridgePlanner, ADriftedHwaddrIsSetBackWithoutTouchingOtherKeys) {
    auto db = convergedWithUplink();
    db["Bridge"]["b-phy"]["initial"]["other_config"] = ovsdb::map({{"hwaddr", "aa:aa:aa:aa:aa:aa"}, {"foo", "bar"}});
    auto plan = BridgePlanner(withUplink()).plan(replicaOf(db));
    EXPECT_EQ(opsOf(plan), std::vector<std::string>{"mutate Bridge br-phy"});
    EXPECT_EQ(plan.txn.params()[1]["mutations"],
              json::parse(R"([["other_config","delete",["set",["hwaddr"]]],["other_config","insert",["map",[["hwaddr","02:42:ac:1f:00:02"]]]]])"));
}

// What a reboot leaves: the database of an older kovs, whose uplink port in
// br-phy has no kovs-owner. It is adopted, never inserted a second time.
TEST(BridgePlanner, AnUnmarkedUplinkPortInBrPhyIsAdoptedNotDuplicated) {
    auto db = convergedWithUplink(ovsdb::map({}));
    auto plan = BridgePlanner(withUplink()).plan(replicaOf(db));
    EXPECT_EQ(opsOf(plan), (std::vector<std::string>{"mutate Port kovs-up1", "mutate Interface kovs-up1"}));
    EXPECT_EQ(plan.txn.params()[1]["mutations"][0], json::parse(R"(["external_ids","insert",["map",[["kovs-owner","kovs-agent"]]]])"));
    EXPECT_EQ(plan.changes, std::vector<std::string>{"adopt port kovs-up1 of br-phy (made without kovs-owner)"});
}

TEST(BridgePlanner, AnUplinkPortInAForeignBridgeIsLeftAlone) {
    auto db = convergedWithUplink(ovsdb::map({}));
    db["Bridge"]["b-phy"]["initial"]["ports"] = ovsdb::set({ovsdb::uuid("p-br-phy")});
    db["Bridge"]["b-other"] = {{"initial", {{"name", "br-other"}, {"ports", ovsdb::uuid("p-up")}}}};
    auto plan = BridgePlanner(withUplink()).plan(replicaOf(db));
    EXPECT_TRUE(plan.txn.empty()) << plan.txn.params().dump();
    EXPECT_EQ(plan.foreign, std::vector<std::string>{"port kovs-up1 is not kovs's: leaving it alone"});
}

TEST(BridgePlanner, AnUplinkThatChangedReplacesTheOldPort) {
    // shim -> direct: eth0 as the port (type afxdp), kovs-up1 no longer wanted.
    auto plan = BridgePlanner(withUplink("eth0", "afxdp")).plan(replicaOf(convergedWithUplink()));
    EXPECT_EQ(opsOf(plan), (std::vector<std::string>{"insert Interface eth0", "insert Port eth0", "mutate Bridge br-phy",
                                                     "wait Bridge br-phy", "mutate Bridge br-phy"}));
    auto p = plan.txn.params();
    EXPECT_EQ(p[3]["mutations"][0], json::parse(R"(["ports","delete",["set",[["uuid","p-up"]]]])"));
    EXPECT_EQ(p[1]["row"]["type"], "afxdp");
    // The type of an existing uplink port follows uplink.portType.
    auto retype = BridgePlanner(withUplink("kovs-up1", "afxdp-nonpmd")).plan(replicaOf(convergedWithUplink()));
    EXPECT_EQ(opsOf(retype), std::vector<std::string>{"update Interface kovs-up1"});
}

TEST(BridgePlanner, BadUplinkOptionsAreClearErrors) {
    auto o = withUplink();
    o.uplink->hwaddr = "02:42:ac:1f:00";
    EXPECT_THROW(BridgePlanner{o}, kovs::Error);
    o = withUplink("gw0");
    EXPECT_THROW(BridgePlanner{o}, kovs::Error);
    o = withUplink();
    o.physBridge = "";
    EXPECT_THROW(BridgePlanner{o}, kovs::Error);
}

// Defect 1 of issue 16: the gateway's MTU is OVS's to set (mtu_request), or
// vswitchd keeps an internal port at the bridge's smallest MTU and fights
// whoever sets it over netlink.
namespace {
BridgeOptions withGatewayMtu(int mtu) {
    BridgeOptions o;
    o.gatewayMtu = mtu;
    return o;
}
json interfaceInsert(const kovs::bridge::BridgePlan& plan, const std::string& name) {
    for (const auto& op : plan.txn.params()) {
        if (op.is_object() && op.value("op", "") == "insert" && op.value("table", "") == "Interface" && op["row"]["name"] == name)
            return op["row"];
    }
    return nullptr;
}
}  // namespace

TEST(BridgePlanner, TheGatewayIsCreatedWithItsMtuRequest) {
    auto plan = BridgePlanner(withGatewayMtu(1450)).plan(replicaOf(json::parse(R"({"Open_vSwitch":{"r":{"initial":{}}}})")));
    EXPECT_EQ(interfaceInsert(plan, "gw0")["mtu_request"], 1450);
    EXPECT_FALSE(interfaceInsert(plan, "tun0").contains("mtu_request")) << "only the gateway's MTU is kovs's to set";
    EXPECT_FALSE(interfaceInsert(plan, "br-int").contains("mtu_request"));
}

TEST(BridgePlanner, AGatewayWithoutOrWithAnotherMtuRequestIsUpdated) {
    auto db = convergedDb();
    auto plan = BridgePlanner(withGatewayMtu(1450)).plan(replicaOf(db));
    EXPECT_EQ(opsOf(plan), std::vector<std::string>{"update Interface gw0"});
    EXPECT_EQ(plan.txn.params()[1]["row"], json({{"mtu_request", 1450}}));
    db["Interface"]["i-gw0"]["initial"]["mtu_request"] = 1400;
    EXPECT_EQ(BridgePlanner(withGatewayMtu(1450)).plan(replicaOf(db)).txn.params()[1]["row"], json({{"mtu_request", 1450}}));
    db["Interface"]["i-gw0"]["initial"]["mtu_request"] = 1450;
    EXPECT_TRUE(BridgePlanner(withGatewayMtu(1450)).plan(replicaOf(db)).txn.empty());
    // No MTU wanted: the column is left as it is, whatever it holds.
    EXPECT_TRUE(BridgePlanner(BridgeOptions{}).plan(replicaOf(db)).txn.empty());
    // A foreign gateway's MTU is never set (the guard leaves it alone unless configured).
    db["Bridge"]["b-int"]["initial"]["external_ids"] = ovsdb::map({{"owner", "ovn"}});
    db["Port"]["p-gw0"]["initial"]["external_ids"] = ovsdb::map({{"owner", "ovn"}});
    db["Interface"]["i-gw0"]["initial"]["external_ids"] = ovsdb::map({{"iface-id", "k8s-node1"}});
    db["Interface"]["i-gw0"]["initial"]["mtu_request"] = ovsdb::set({});
    EXPECT_TRUE(BridgePlanner(withGatewayMtu(1450)).plan(replicaOf(db)).txn.empty());
}

// Defects 3 and 4: in companion mode kovs wants no tunnel, no gateway and no
// integration bridge of its own.
namespace {
BridgeOptions companion() {
    BridgeOptions o;
    o.gatewayPort = "";
    o.tunnelPort = "";
    o.createIntegrationBridge = false;
    return o;
}
// OVN's br-int as ovn-controller makes it, with OVN-Kubernetes' management
// port and a Geneve tunnel, none of it marked kovs-owner.
json ovnDb() {
    json db = json::parse(R"({"Open_vSwitch":{"r":{"initial":{"bridges":["set",[["uuid","b-int"]]]}}}})");
    db["Bridge"]["b-int"] = {{"initial", {{"name", "br-int"}, {"datapath_type", "netdev"}, {"fail_mode", "secure"},
                                          {"external_ids", ovsdb::map({})},
                                          {"ports", ovsdb::set({ovsdb::uuid("p-br-int"), ovsdb::uuid("p-mp0"), ovsdb::uuid("p-gnv")})}}}};
    auto port = [&](const std::string& key, const std::string& name, const std::string& type, json iids) {
        db["Interface"]["i-" + key] = {{"initial", {{"name", name}, {"type", type}, {"external_ids", iids}}}};
        db["Port"]["p-" + key] = {{"initial", {{"name", name}, {"interfaces", ovsdb::uuid("i-" + key)}, {"external_ids", ovsdb::map({})}}}};
    };
    port("br-int", "br-int", "internal", ovsdb::map({}));
    port("mp0", "ovn-k8s-mp0", "internal", ovsdb::map({{"iface-id", "k8s-node1"}}));
    port("gnv", "ovn-node2-0", "geneve", ovsdb::map({}));
    return db;
}
}  // namespace

TEST(BridgePlanner, CompanionModeStartingBeforeTheCniCreatesNoBridgeGatewayOrTunnel) {
    auto plan = BridgePlanner(companion()).plan(replicaOf(json::parse(R"({"Open_vSwitch":{"r":{"initial":{}}}})")));
    for (const auto& op : opsOf(plan)) {
        EXPECT_EQ(op.find("br-int"), std::string::npos) << op;
        EXPECT_EQ(op.find("gw0"), std::string::npos) << op;
        EXPECT_EQ(op.find("tun0"), std::string::npos) << op;
    }
    auto ops = opsOf(plan);
    EXPECT_NE(std::find(ops.begin(), ops.end(), "insert Bridge br-phy"), ops.end()) << "br-phy (the uplink's) is still kovs's";
}

TEST(BridgePlanner, CompanionModeLeavesOvnsBridgeAsItIs) {
    auto o = companion();
    o.physBridge = "";  // uplink.mode none: nothing of kovs's at all
    auto plan = BridgePlanner(o).plan(replicaOf(ovnDb()));
    EXPECT_TRUE(plan.txn.empty()) << plan.txn.params().dump();
    EXPECT_EQ(plan.foreign, std::vector<std::string>{"bridge br-int is not kovs's: using it as is (companion mode)"});
    EXPECT_TRUE(BridgePlanner(o).planCleanup(replicaOf(ovnDb())).txn.empty());
}

TEST(BridgePlanner, CompanionModeRemovesTheTunnelAnOlderKovsAddedToTheirBridge) {
    auto db = ovnDb();
    db["Interface"]["i-tun0"] = {{"initial", {{"name", "tun0"}, {"type", "vxlan"}, {"external_ids", kOwner}}}};
    db["Port"]["p-tun0"] = {{"initial", {{"name", "tun0"}, {"interfaces", ovsdb::uuid("i-tun0")}, {"external_ids", kOwner}}}};
    db["Bridge"]["b-int"]["initial"]["ports"][1].push_back(ovsdb::uuid("p-tun0"));
    auto o = companion();
    o.physBridge = "";
    auto plan = BridgePlanner(o).plan(replicaOf(db));
    EXPECT_EQ(opsOf(plan), std::vector<std::string>{"mutate Bridge br-int"});
    EXPECT_EQ(plan.txn.params()[1]["mutations"][0], json::parse(R"(["ports","delete",["set",[["uuid","p-tun0"]]]])"));
    EXPECT_EQ(plan.changes, std::vector<std::string>{"remove port tun0 from br-int (no longer wanted)"});
    // --cleanup finds it too.
    EXPECT_EQ(opsOf(BridgePlanner(o).planCleanup(replicaOf(db))), std::vector<std::string>{"mutate Bridge br-int"});
}

TEST(BridgePlanner, ATunnelAskedForInCompanionModeWaitsForTheirBridge) {
    auto o = companion();
    o.physBridge = "";
    o.tunnelPort = "tun0";
    auto plan = BridgePlanner(o).plan(replicaOf(json::parse(R"({"Open_vSwitch":{"r":{"initial":{}}}})")));
    EXPECT_TRUE(plan.txn.empty()) << plan.txn.params().dump();
    EXPECT_EQ(plan.foreign,
              std::vector<std::string>{"bridge br-int does not exist: waiting for the CNI that owns it to create it"});
    // Once it exists, the tunnel port is added to it (and the bridge itself is left alone).
    auto added = BridgePlanner(o).plan(replicaOf(ovnDb()));
    EXPECT_EQ(opsOf(added), (std::vector<std::string>{"insert Interface tun0", "insert Port tun0", "wait Bridge br-int",
                                                      "mutate Bridge br-int"}));
}
