#include "bridge/BridgePlanner.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"

using kovs::BridgeOptions;
using kovs::BridgePlanner;
using kovs::OvsdbReplica;
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

std::vector<std::string> opsOf(const kovs::BridgePlan& p) {
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
    EXPECT_EQ(err([](BridgeOptions& o) { o.gatewayPort = ""; }), "bridge options: gateway port is empty");
    EXPECT_EQ(err([](BridgeOptions& o) { o.gatewayPort = "a-very-long-gateway0"; }),
              "bridge options: gateway port 'a-very-long-gateway0' is longer than 15 characters");
    EXPECT_EQ(err([](BridgeOptions& o) { o.tunnelPort = "gw0"; }),
              "bridge options: name 'gw0' used for two bridges/ports");
    EXPECT_EQ(err([](BridgeOptions& o) { o.tunnelDstPort = 70000; }),
              "bridge options: tunnel dst_port 70000 is not in 1..65535");
    EXPECT_EQ(err([](BridgeOptions& o) { o.failMode = "open"; }),
              "bridge options: fail_mode 'open' is not secure or standalone");
    EXPECT_EQ(err([](BridgeOptions& o) { o.physBridge = "br phy"; }),
              "bridge options: physical bridge 'br phy' contains ' '");
    EXPECT_EQ(err([](BridgeOptions& o) { o.physBridge = ""; }), "no error");
}
