// The uplink record: what --cleanup restores from must read back exactly,
// and what an older kovs left in its place must not be taken for it.
#include "uplink/UplinkRecord.hpp"

#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "tests/support/TempDir.hpp"

using namespace kovs;
using namespace kovs::uplink;

namespace {

UplinkRecord sample() {
    UplinkRecord r;
    r.mode = "shim";
    r.device = "eth0";
    r.mac = "02:42:ac:12:00:02";
    r.mtu = 9000;
    AddressInfo v4;
    v4.local = IpPrefix::parse("172.18.0.2/16");
    v4.flags = IFA_F_PERMANENT;
    v4.broadcast = IpPrefix::parse("172.18.255.255");
    v4.label = "eth0";
    AddressInfo v6;
    v6.local = IpPrefix::parse("fc00:f853:ccd:e793::2/64");
    v6.flags = IFA_F_PERMANENT | IFA_F_NODAD;
    r.addresses = {v4, v6};
    RouteInfo def;
    def.dst = IpPrefix::parse("0.0.0.0/0");
    def.gateway = IpPrefix::parse("172.18.0.1");
    RouteInfo src;
    src.dst = IpPrefix::parse("10.99.0.0/16");
    src.prefsrc = IpPrefix::parse("172.18.0.2");
    src.priority = 50;
    src.protocol = RTPROT_STATIC;
    src.onlink = true;
    r.routes = {def, src};
    return r;
}

}  // namespace

TEST(UplinkRecord, RoundTripsThroughJsonAndTheFile) {
    auto r = sample();
    EXPECT_EQ(recordFromJson(toJson(r)), r);
    kovs::test::TempDir dir{"kovs-uplink-record"};
    auto path = dir.path() + "/sub/uplink.json";
    saveRecord(path, r);
    EXPECT_EQ(loadRecord(path), r);
    removeRecord(path);
    EXPECT_FALSE(loadRecord(path));
    EXPECT_NO_THROW(removeRecord(path)) << "removing what is gone is fine";
}

TEST(UplinkRecord, WhatAnOlderKovsWroteIsIgnoredNotTrusted) {
    kovs::test::TempDir dir{"kovs-uplink-record"};
    auto path = dir.path() + "/uplink.json";
    // kovs 0.1: `ip -j` output.
    std::ofstream(path) << R"({"mode":"shim","device":"eth0","mac":"02:42:ac:12:00:02","mtu":1500,
        "addresses":[{"family":"inet","local":"172.18.0.2","prefixlen":16}],"routes4":[],"routes6":[]})";
    EXPECT_FALSE(loadRecord(path));
    std::ofstream(path) << "{not json";
    EXPECT_FALSE(loadRecord(path));
}

TEST(UplinkRecord, ABadFieldIsNamed) {
    auto j = toJson(sample());
    j["addresses"][0]["local"] = "172.18.0.300/16";
    try {
        recordFromJson(j);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("172.18.0.300"), std::string::npos) << e.what();
    }
    j = toJson(sample());
    j["routes"][1].erase("priority");
    EXPECT_THROW(recordFromJson(j), Error);
}
