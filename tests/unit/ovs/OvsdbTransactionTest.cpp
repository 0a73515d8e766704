#include "ovs/OvsdbTransaction.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"

using namespace kovs::ovsdb;

TEST(OvsdbTransaction, BuildsRfc7047Operations) {
    Transaction t;
    t.insert("Interface", {{"name", "gw0"}, {"type", "internal"}}, "iface")
        .insert("Port", {{"name", "gw0"}, {"interfaces", namedUuid("iface")}}, "port")
        .mutate("Bridge", whereUuid("1111"), Json::array({Json::array({"ports", "insert", set({namedUuid("port")})})}),
                "br-int")
        .update("Bridge", whereName("br-int"), {{"external_ids", map({{"kovs-owner", "kovs-agent"}})}}, "br-int")
        .remove("Port", whereName("old"), "old")
        .wait("Bridge", whereUuid("1111"), {"name"}, Json::array({{{"name", "br-int"}}}), "==", "br-int")
        .select("Port", Json::array(), {"name"});
    auto p = t.params();
    EXPECT_EQ(p, Json::parse(R"([
      "Open_vSwitch",
      {"op":"insert","table":"Interface","row":{"name":"gw0","type":"internal"},"uuid-name":"iface"},
      {"op":"insert","table":"Port","row":{"name":"gw0","interfaces":["named-uuid","iface"]},"uuid-name":"port"},
      {"op":"mutate","table":"Bridge","where":[["_uuid","==",["uuid","1111"]]],
       "mutations":[["ports","insert",["set",[["named-uuid","port"]]]]]},
      {"op":"update","table":"Bridge","where":[["name","==","br-int"]],
       "row":{"external_ids":["map",[["kovs-owner","kovs-agent"]]]}},
      {"op":"delete","table":"Port","where":[["name","==","old"]]},
      {"op":"wait","timeout":0,"table":"Bridge","where":[["_uuid","==",["uuid","1111"]]],
       "columns":["name"],"until":"==","rows":[{"name":"br-int"}]},
      {"op":"select","table":"Port","where":[],"columns":["name"]}
    ])"));
    EXPECT_EQ(t.size(), 7u);
    EXPECT_EQ(t.describe(0), "insert Interface gw0");
    EXPECT_EQ(t.describe(2), "mutate Bridge br-int");
    EXPECT_EQ(t.describe(6), "select Port");
}

TEST(OvsdbTransaction, PerOperationErrorNamesTableAndOperation) {
    Transaction t;
    t.insert("Interface", {{"name", "gw0"}}, "i").insert("Port", {{"name", "gw0"}}, "p");
    auto reply = Json::parse(R"([{"uuid":["uuid","a"]},
        {"error":"constraint violation","details":"name gw0 already in use"}])");
    try {
        t.checkResult(reply);
        FAIL() << "no error";
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "insert Port gw0: constraint violation: name gw0 already in use");
    }
}

TEST(OvsdbTransaction, CommitErrorNamesAllOperations) {
    Transaction t;
    t.insert("Port", {{"name", "p1"}}).comment("kovs");
    auto reply = Json::parse(R"([{"uuid":["uuid","a"]},{},
        {"error":"referential integrity violation","details":"Port p1 has no interfaces"}])");
    try {
        t.checkResult(reply);
        FAIL() << "no error";
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(),
                     "commit (insert Port p1): referential integrity violation: Port p1 has no interfaces");
    }
}

TEST(OvsdbTransaction, WaitTimeoutIsNamed) {
    Transaction t;
    t.wait("Bridge", whereUuid("u"), {"name"}, Json::array({{{"name", "br-int"}}}), "==", "br-int")
        .insert("Port", {{"name", "x"}});
    try {
        t.checkResult(Json::parse(R"([{"error":"timed out","details":"\"wait\" timed out"},null])"));
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "wait Bridge br-int: timed out: \"wait\" timed out");
    }
}

TEST(OvsdbTransaction, MalformedReplies) {
    Transaction t;
    t.insert("Port", {{"name", "p"}});
    EXPECT_THROW(t.checkResult(Json::object()), kovs::Error);
    EXPECT_THROW(t.checkResult(Json::array()), kovs::Error);
    EXPECT_EQ(t.checkResult(Json::parse(R"([{"uuid":["uuid","a"]}])")).size(), 1u);
}

TEST(OvsdbValues, ReadBack) {
    EXPECT_EQ(uuidSet(Json::parse(R"(["uuid","a"])")), std::vector<std::string>{"a"});
    EXPECT_EQ(uuidSet(Json::parse(R"(["set",[["uuid","a"],["uuid","b"]]])")), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(uuidSet(Json::parse(R"(["set",[]])")).empty());
    auto m = mapValue(map({{"a", "1"}, {"b", "2"}}));
    EXPECT_EQ(m.at("b"), "2");
    Json row = {{"name", "x"}, {"fail_mode", set({})}, {"fm2", set({"secure"})}};
    EXPECT_EQ(stringOr(row, "name"), "x");
    EXPECT_EQ(stringOr(row, "fail_mode", "none"), "none");
    EXPECT_EQ(stringOr(row, "fm2"), "secure");
    EXPECT_EQ(stringOr(row, "missing", "d"), "d");
}
