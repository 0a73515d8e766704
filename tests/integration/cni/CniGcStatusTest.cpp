// kovs-cni GC (CNI 1.1: remove what the runtime no longer lists, and only
// that) and STATUS (is the plugin ready: OVSDB and the bridge).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cni/VethPair.hpp"
#include "tests/integration/cni/CniTestSupport.hpp"

using nlohmann::json;
using namespace kovs::test;
using kovs::cni::VethPair;

TEST_F(KovsCni, GcRemovesOnlyStaleAttachments) {
    TestNetns pod2("kovs-cni-pod2");
    ASSERT_EQ(call(env("ADD", "keep"), mainConf("1.1.0")).exitCode, 0);
    auto e2 = env("ADD", "stale");
    e2["CNI_NETNS"] = pod2.path();
    auto add2 = call(e2, mainConf("1.1.0"));
    ASSERT_EQ(add2.exitCode, 0) << add2.out << add2.err;
    ASSERT_EQ(leases(data.path(), "kovs-test").size(), 2u);
    // A port kovs-cni does not own is never touched.
    ovs.vsctl({"add-port", "br-int", "foreign0", "--", "set", "Interface", "foreign0", "type=internal"});
    // Nor is one of another kovs network on the same bridge (its GC has its own valid list).
    TestNetns pod3("kovs-cni-pod3");
    auto other = mainConf("1.1.0");
    other["name"] = "kovs-other";
    auto e3 = env("ADD", "other");
    e3["CNI_NETNS"] = pod3.path();
    ASSERT_EQ(call(e3, other).exitCode, 0);

    auto gcConf = mainConf("1.1.0");
    gcConf["cni.dev/valid-attachments"] = json::array({{{"containerID", "keep"}, {"ifname", "eth0"}}});
    // A GC whose IPAM DEL fails (an IPAM plugin saying "try again later")
    // keeps the port, its record, so that the next GC finishes the job.
    TempDir bin;
    std::ofstream(bin.path() + "/host-local")
        << "#!/bin/sh\n[ \"$CNI_COMMAND\" = DEL ] && { echo '{\"code\":11,\"msg\":\"busy\"}'; exit 1; }\n"
           "exec /usr/lib/cni/host-local\n";
    std::filesystem::permissions(bin.path() + "/host-local", std::filesystem::perms::owner_all);
    auto gc = call({{"CNI_COMMAND", "GC"}, {"CNI_PATH", bin.path()}}, gcConf);
    EXPECT_NE(gc.exitCode, 0) << gc.out << gc.err;
    EXPECT_NE(ports().find(VethPair::hostNameFor("stale", "eth0")), std::string::npos) << "the record went with the failure";
    gc = call({{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/usr/lib/cni"}}, gcConf);
    EXPECT_EQ(gc.exitCode, 0) << gc.out << gc.err;
    EXPECT_NE(ports().find(VethPair::hostNameFor("other", "eth0")), std::string::npos) << "GC removed another network's pod";
    EXPECT_EQ(leases(data.path(), "kovs-other").size(), 1u);

    auto keep = VethPair::hostNameFor("keep", "eth0");
    auto stale = VethPair::hostNameFor("stale", "eth0");
    EXPECT_NE(ports().find(keep), std::string::npos);
    EXPECT_NE(ports().find("foreign0"), std::string::npos);
    EXPECT_EQ(ports().find(stale), std::string::npos);
    EXPECT_TRUE(linkExists("", keep));
    EXPECT_FALSE(linkExists("", stale));
    EXPECT_FALSE(linkExists(pod2.name(), "eth0"));
    EXPECT_EQ(leases(data.path(), "kovs-test"), std::vector<std::string>{"10.244.0.2"});
}

TEST_F(KovsCni, StatusReportsBridgeAndOvsdbReadiness) {
    json conf = mainConf("1.1.0");
    std::map<std::string, std::string> e{{"CNI_COMMAND", "STATUS"}, {"CNI_PATH", "/usr/lib/cni"}};
    auto st = call(e, conf);
    EXPECT_EQ(st.exitCode, 0) << st.out << st.err;
    EXPECT_EQ(st.out, "");

    conf["bridge"] = "br-missing";
    st = call(e, conf);
    EXPECT_EQ(st.exitCode, 1);
    EXPECT_EQ(st.code(), 50) << st.out;

    ovs.stopOvsdb();
    st = call(e, mainConf("1.1.0"));
    EXPECT_EQ(st.code(), 50) << st.out;
    EXPECT_NE(st.json().value("msg", "").find("not reachable"), std::string::npos) << st.out;
}
