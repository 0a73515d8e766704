// OvsdbClient and UnixctlClient against a real ovsdb-server / ovs-vswitchd
// (OvsSandbox, private netns).
#include "ovs/OvsdbClient.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/OvsSandbox.hpp"

using kovs::EventLoop;
using kovs::ovs::OvsdbClient;
using kovs::ovs::OvsdbClientOptions;
using kovs::test::OvsSandbox;
namespace ovsdb = kovs::ovsdb;
using ovsdb::Json;

namespace {

OvsdbClientOptions optionsFor(const OvsSandbox& ovs) {
    OvsdbClientOptions o;
    o.remote = ovs.dbRemote();
    return o;
}

// One bridge with its local internal port, the way ovs-vsctl add-br builds it.
ovsdb::Transaction addBridge(const std::string& name, const std::string& rootUuid) {
    ovsdb::Transaction t;
    t.insert("Interface", {{"name", name}, {"type", "internal"}}, "iface")
        .insert("Port", {{"name", name}, {"interfaces", ovsdb::namedUuid("iface")}}, "port")
        .insert("Bridge",
                {{"name", name},
                 {"datapath_type", "netdev"},
                 {"ports", ovsdb::namedUuid("port")},
                 {"external_ids", ovsdb::map({{"kovs-owner", "test"}})}},
                "br")
        .mutate("Open_vSwitch", ovsdb::whereUuid(rootUuid),
                Json::array({Json::array({"bridges", "insert", ovsdb::set({ovsdb::namedUuid("br")})})}));
    return t;
}

std::string rootUuid(const OvsdbClient& c) {
    const auto& t = c.replica().table("Open_vSwitch");
    return t.empty() ? "" : t.begin()->first;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

TEST(OvsdbClient, TransactIsSeenByOvsVsctlAndByTheMonitor) {
    OvsSandbox ovs(false);
    EventLoop loop;
    OvsdbClient c(loop, optionsFor(ovs));
    ASSERT_TRUE(c.waitReady(std::chrono::seconds(5)));
    ASSERT_FALSE(rootUuid(c).empty());

    auto results = c.transactSync(addBridge("br-x", rootUuid(c)));
    ASSERT_EQ(results.size(), 4u);
    EXPECT_EQ(c.transactionsSent(), 1u);
    EXPECT_EQ(trim(ovs.vsctl({"list-br"})), "br-x");
    EXPECT_EQ(trim(ovs.vsctl({"get", "Bridge", "br-x", "external_ids:kovs-owner"})), "test");
    ASSERT_TRUE(loop.runUntil([&] { return c.replica().findByName("Bridge", "br-x").has_value(); },
                              std::chrono::seconds(5)))
        << "monitor never showed br-x";

    // Changes made by someone else arrive as update2 "modify" diffs.
    ovs.vsctl({"--no-wait", "add-port", "br-x", "p1", "--", "set", "Interface", "p1", "type=internal", "--", "set", "Bridge",
               "br-x", "external_ids:extra=1", "fail_mode=secure"});
    auto seen = [&] {
        auto br = c.replica().findByName("Bridge", "br-x");
        return br && ovsdb::uuidSet(br->second["ports"]).size() == 2 &&
               ovsdb::mapValue(br->second["external_ids"]).count("extra") &&
               ovsdb::stringOr(br->second, "fail_mode") == "secure";
    };
    ASSERT_TRUE(loop.runUntil(seen, std::chrono::seconds(5)))
        << c.replica().findByName("Bridge", "br-x")->second.dump();
    ovs.vsctl({"--no-wait", "remove", "Bridge", "br-x", "external_ids", "kovs-owner", "--", "del-port", "br-x", "p1", "--",
               "clear", "Bridge", "br-x", "fail_mode"});
    auto seen2 = [&] {
        auto br = c.replica().findByName("Bridge", "br-x");
        auto ids = ovsdb::mapValue(br->second["external_ids"]);
        return ovsdb::uuidSet(br->second["ports"]).size() == 1 && ids.size() == 1 && ids.count("extra") &&
               ovsdb::stringOr(br->second, "fail_mode").empty() && !c.replica().findByName("Port", "p1") &&
               !c.replica().findByName("Interface", "p1");
    };
    ASSERT_TRUE(loop.runUntil(seen2, std::chrono::seconds(5)))
        << c.replica().findByName("Bridge", "br-x")->second.dump();
    // Interface statistics are not monitored by default.
    auto iface = c.replica().findByName("Interface", "br-x");
    ASSERT_TRUE(iface);
    EXPECT_EQ(iface->second.value("type", ""), "internal");
    EXPECT_FALSE(iface->second.contains("statistics")) << iface->second.dump();
    auto port = c.replica().findByName("Port", "br-x");
    ASSERT_TRUE(port);
    EXPECT_EQ(ovsdb::uuidSet(c.replica().findByName("Bridge", "br-x")->second["ports"]),
              std::vector<std::string>{port->first});
}

TEST(OvsdbClient, ErrorsNameTheTableAndOperation) {
    OvsSandbox ovs(false);
    EventLoop loop;
    OvsdbClient c(loop, optionsFor(ovs));
    ASSERT_TRUE(c.waitReady(std::chrono::seconds(5)));
    c.transactSync(addBridge("br-x", rootUuid(c)));
    try {
        c.transactSync(addBridge("br-x", rootUuid(c)));
        FAIL() << "duplicate bridge accepted";
    } catch (const kovs::Error& e) {
        std::string m = e.what();
        EXPECT_EQ(m.rfind("insert ", 0), 0u) << m;
        EXPECT_NE(m.find("br-x: constraint violation: "), std::string::npos) << m;
    }
    ovsdb::Transaction bad;
    bad.insert("Port", {{"name", "p"}, {"no_such_column", 1}});
    try {
        c.transactSync(bad);
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("insert Port p: ", 0), 0u) << e.what();
    }
    // A top-level JSON-RPC error names the database and the operations.
    ovsdb::Transaction wrongDb("No_Such_Db");
    wrongDb.insert("Port", {{"name", "p"}});
    try {
        c.transactSync(wrongDb);
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("transact No_Such_Db (insert Port p): unknown database", 0), 0u)
            << e.what();
    }
    // The bridge is gone → the wait fails the whole transaction, nothing inserted.
    auto br = c.replica().findByName("Bridge", "br-x");
    ASSERT_TRUE(br);
    ovs.vsctl({"--no-wait", "del-br", "br-x"});
    ovsdb::Transaction guarded;
    guarded.wait("Bridge", ovsdb::whereUuid(br->first), {"name"}, Json::array({{{"name", "br-x"}}}), "==", "br-x")
        .insert("Interface", {{"name", "q"}}, "i")
        .insert("Port", {{"name", "q"}, {"interfaces", ovsdb::namedUuid("i")}}, "p")
        .mutate("Bridge", ovsdb::whereUuid(br->first),
                Json::array({Json::array({"ports", "insert", ovsdb::set({ovsdb::namedUuid("p")})})}), "br-x");
    try {
        c.transactSync(guarded);
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("wait Bridge br-x: timed out", 0), 0u) << e.what();
    }
    EXPECT_EQ(trim(ovs.vsctl({"--columns=name", "--bare", "list", "Port"})), "");
}

TEST(OvsdbClient, ReconnectsAndRemonitorsAfterOvsdbRestart) {
    OvsSandbox ovs(false);
    EventLoop loop;
    OvsdbClient c(loop, optionsFor(ovs));
    std::vector<OvsdbClient::State> states;
    c.addStateHandler([&](OvsdbClient::State s) { states.push_back(s); });
    ASSERT_TRUE(c.waitReady(std::chrono::seconds(5)));
    c.transactSync(addBridge("br-a", rootUuid(c)));

    ovs.stopOvsdb();
    ASSERT_TRUE(loop.runUntil([&] { return c.state() != OvsdbClient::State::Ready; }, std::chrono::seconds(5)));
    // While it is down, a transaction fails with a clear error instead of hanging.
    EXPECT_THROW(c.transactSync(addBridge("br-b", "00000000-0000-0000-0000-000000000000")), kovs::Error);
    // Someone changes the database while we are away.
    ovs.startOvsdb();
    ovs.vsctl({"--no-wait", "add-br", "br-b"});
    ASSERT_TRUE(loop.runUntil(
        [&] { return c.state() == OvsdbClient::State::Ready && c.replica().findByName("Bridge", "br-b"); },
        std::chrono::seconds(10)))
        << "state " << kovs::ovs::toString(c.state());
    EXPECT_TRUE(c.replica().findByName("Bridge", "br-a"));
    EXPECT_EQ(c.reconnects(), 1u);
    EXPECT_EQ(states.back(), OvsdbClient::State::Ready);
    // And the new session transacts.
    ovsdb::Transaction t;
    t.update("Bridge", ovsdb::whereName("br-b"), {{"external_ids", ovsdb::map({{"k", "v"}})}}, "br-b");
    c.transactSync(t);
    EXPECT_EQ(trim(ovs.vsctl({"get", "Bridge", "br-b", "external_ids:k"})), "v");
}

TEST(OvsdbClient, TransactOnlyClientForShortLivedCallers) {
    OvsSandbox ovs(false);
    ovs.vsctl({"--no-wait", "add-br", "br-int", "--", "add-port", "br-int", "veth1", "--", "set", "Port", "veth1",
               "external_ids:pod=ns/a"});
    EventLoop loop;
    auto o = optionsFor(ovs);
    o.monitorTables.clear();
    OvsdbClient c(loop, o);
    ovsdb::Transaction t;
    t.select("Port", Json::array({ovsdb::cond("name", "==", "veth1")}), {"name", "external_ids"});
    auto r = c.transactSync(t);
    ASSERT_EQ(r.at(0)["rows"].size(), 1u);
    EXPECT_EQ(ovsdb::mapValue(r[0]["rows"][0]["external_ids"]).at("pod"), "ns/a");
    EXPECT_EQ(c.replica().size(), 0u);
}

// ovs.db: tcp:... naming a host that never answers (the SYNs leave a veth in
// this test's netns for a MAC nobody has, and vanish): the loop keeps running, the
// connect gives up after connectTimeout with that reason, and the client
// goes on reconnecting with backoff instead of freezing its caller.
TEST(OvsdbClient, AnUnreachableTcpRemoteDoesNotStallTheLoop) {
    kovs::runChecked({"ip", "link", "add", "kvblack0", "type", "veth", "peer", "name", "kvblack1"});
    kovs::runChecked({"ip", "addr", "add", "10.254.0.1/24", "dev", "kvblack0"});
    kovs::runChecked({"ip", "link", "set", "kvblack0", "up"});
    kovs::runChecked({"ip", "link", "set", "kvblack1", "up"});
    kovs::runChecked({"ip", "neigh", "add", "10.254.0.2", "lladdr", "02:00:00:00:00:02", "dev", "kvblack0", "nud", "permanent"});
    EventLoop loop;
    OvsdbClientOptions o;
    o.remote = "tcp:10.254.0.2:6640";
    o.connectTimeout = std::chrono::milliseconds(300);
    o.backoffMin = std::chrono::milliseconds(50);
    OvsdbClient c(loop, o);
    std::vector<OvsdbClient::State> states;
    c.addStateHandler([&](OvsdbClient::State s) { states.push_back(s); });
    c.start();  // returns at once
    EXPECT_EQ(c.state(), OvsdbClient::State::Connecting);
    std::string txError;
    c.transact(ovsdb::Transaction(), [&](const std::vector<Json>*, const std::string& e) { txError = e; });
    int ticks = 0;
    std::function<void()> tick = [&] {
        ++ticks;
        loop.after(std::chrono::milliseconds(10), tick);
    };
    loop.after(std::chrono::milliseconds(10), tick);
    EXPECT_FALSE(c.waitReady(std::chrono::milliseconds(1500)));
    // Several connect attempts ran their course while the ticker kept going.
    EXPECT_GE(std::count(states.begin(), states.end(), OvsdbClient::State::Disconnected), 2) << ticks;
    EXPECT_GT(ticks, 0);
    EXPECT_NE(txError.find("connect tcp:10.254.0.2:6640: timed out after 300 ms"), std::string::npos) << txError;
    kovs::runProcess({"ip", "link", "del", "kvblack0"});
}
