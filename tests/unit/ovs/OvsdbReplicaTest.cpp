#include "ovs/OvsdbReplica.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "ovs/OvsdbTransaction.hpp"

using kovs::ovs::OvsdbReplica;
using nlohmann::json;
namespace ovsdb = kovs::ovsdb;

namespace {

const json kSchema = json::parse(R"({"name":"Open_vSwitch","tables":{
  "Bridge":{"columns":{
    "name":{"type":"string"},
    "ports":{"type":{"key":{"type":"uuid","refTable":"Port"},"min":0,"max":"unlimited"}},
    "fail_mode":{"type":{"key":{"type":"string","enum":["set",["standalone","secure"]]},"min":0,"max":1}},
    "external_ids":{"type":{"key":"string","value":"string","min":0,"max":"unlimited"}},
    "datapath_type":{"type":"string"}}}}})");

OvsdbReplica withBridge() {
    OvsdbReplica r;
    r.setSchema(kSchema);
    r.apply(json::parse(R"({"Bridge":{"b1":{"initial":{"name":"br-int","ports":["uuid","p1"],
        "external_ids":["map",[["a","1"],["b","2"]]],"datapath_type":"system"}}}})"));
    return r;
}

}  // namespace

TEST(OvsdbReplica, SchemaKinds) {
    OvsdbReplica r;
    r.setSchema(kSchema);
    EXPECT_EQ(r.kind("Bridge", "name"), OvsdbReplica::ColumnKind::Scalar);
    EXPECT_EQ(r.kind("Bridge", "ports"), OvsdbReplica::ColumnKind::Set);
    EXPECT_EQ(r.kind("Bridge", "fail_mode"), OvsdbReplica::ColumnKind::Scalar);
    EXPECT_EQ(r.kind("Bridge", "external_ids"), OvsdbReplica::ColumnKind::Map);
    EXPECT_THROW(r.setSchema(json::object()), kovs::Error);
}

TEST(OvsdbReplica, ModifyTogglesSetElementsAndScalars) {
    auto r = withBridge();
    // One element added, the bare-atom form of a one-element set.
    r.apply(json::parse(R"({"Bridge":{"b1":{"modify":{"ports":["uuid","p2"],"datapath_type":"netdev"}}}})"));
    const auto* b = r.row("Bridge", "b1");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(ovsdb::uuidSet((*b)["ports"]), (std::vector<std::string>{"p1", "p2"}));
    EXPECT_EQ((*b)["datapath_type"], "netdev");
    // Symmetric difference: p1 removed, p3 added.
    r.apply(json::parse(R"({"Bridge":{"b1":{"modify":{"ports":["set",[["uuid","p1"],["uuid","p3"]]]}}}})"));
    EXPECT_EQ(ovsdb::uuidSet((*r.row("Bridge", "b1"))["ports"]), (std::vector<std::string>{"p2", "p3"}));
    // An optional column (max 1) is sent whole, not as a diff.
    r.apply(json::parse(R"({"Bridge":{"b1":{"modify":{"fail_mode":"secure"}}}})"));
    EXPECT_EQ(ovsdb::stringOr(*r.row("Bridge", "b1"), "fail_mode"), "secure");
    r.apply(json::parse(R"({"Bridge":{"b1":{"modify":{"fail_mode":"standalone"}}}})"));
    EXPECT_EQ(ovsdb::stringOr(*r.row("Bridge", "b1"), "fail_mode"), "standalone");
    r.apply(json::parse(R"({"Bridge":{"b1":{"modify":{"fail_mode":["set",[]]}}}})"));
    EXPECT_EQ(ovsdb::stringOr(*r.row("Bridge", "b1"), "fail_mode", "none"), "none");
}

TEST(OvsdbReplica, ModifyMapAddsRemovesReplaces) {
    auto r = withBridge();
    r.apply(json::parse(R"({"Bridge":{"b1":{"modify":{"external_ids":["map",[["a","1"],["b","3"],["c","4"]]]}}}})"));
    auto m = ovsdb::mapValue((*r.row("Bridge", "b1"))["external_ids"]);
    EXPECT_EQ(m, (std::map<std::string, std::string>{{"b", "3"}, {"c", "4"}}));
}

TEST(OvsdbReplica, InsertDeleteAndFindByName) {
    auto r = withBridge();
    r.apply(json::parse(R"({"Bridge":{"b2":{"insert":{"name":"br-phy"}}}})"));
    ASSERT_TRUE(r.findByName("Bridge", "br-phy"));
    EXPECT_EQ(r.findByName("Bridge", "br-phy")->first, "b2");
    EXPECT_EQ(r.size(), 2u);
    r.apply(json::parse(R"({"Bridge":{"b1":{"delete":null}}})"));
    EXPECT_FALSE(r.findByName("Bridge", "br-int"));
    EXPECT_EQ(r.size(), 1u);
}

TEST(OvsdbReplica, MalformedUpdatesAreErrors) {
    auto r = withBridge();
    EXPECT_THROW(r.apply(json::array()), kovs::Error);
    EXPECT_THROW(r.apply(json::parse(R"({"Bridge":{"zz":{"modify":{"name":"x"}}}})")), kovs::Error);
    EXPECT_THROW(r.apply(json::parse(R"({"Bridge":{"b1":{"frob":{}}}})")), kovs::Error);
    EXPECT_THROW(r.apply(json::parse(R"({"Bridge":{"b1":{"modify":{"external_ids":"x"}}}})")), kovs::Error);
}
