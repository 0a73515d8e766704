// Netns switching and ethtool offload on a real veth pair in a test netns; the
// `ethtool -k` binary is the independent witness of what the library did.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "base/Ethtool.hpp"
#include "base/Netns.hpp"
#include "tests/support/TestNetns.hpp"

using kovs::Ethtool;
using kovs::Netns;
using kovs::OffloadState;
using kovs::test::ethtoolFeature;
using kovs::test::TestNetns;

namespace {

// A veth pair: `host` stays in the test's netns, `pod` lives in `ns`.
struct VethInNetns {
    TestNetns ns{"kovs-offload-test"};
    std::string host = "ot-host0";
    std::string pod = "ot-pod0";
    VethInNetns() {
        kovs::runProcess({"ip", "link", "del", host});
        kovs::runChecked({"ip", "link", "add", host, "type", "veth", "peer", "name", pod, "netns", ns.name()});
    }
    ~VethInNetns() { kovs::runProcess({"ip", "link", "del", host}); }
};

}  // namespace

TEST(Netns, EntersAndReturnsToTheOriginalNamespace) {
    TestNetns ns("kovs-netns-test");
    auto home = Netns::currentInode();
    ASSERT_NE(home, ns.inode());
    {
        Netns in(ns.path());
        EXPECT_EQ(Netns::currentInode(), ns.inode());
        // A socket made inside sees the namespace's devices only.
        Ethtool et;
        EXPECT_FALSE(et.state("lo") == OffloadState{});
    }
    EXPECT_EQ(Netns::currentInode(), home);
}

TEST(Netns, SwitchIsBoundToTheCallingThread) {
    TestNetns ns("kovs-netns-thread");
    auto home = Netns::currentInode();
    std::promise<void> entered, release;
    auto releaseFuture = release.get_future().share();
    std::thread worker([&] {
        Netns in(ns.path());
        entered.set_value();
        releaseFuture.wait();
    });
    entered.get_future().wait();
    // The worker is inside the pod netns; this thread must not be.
    EXPECT_EQ(Netns::currentInode(), home);
    release.set_value();
    worker.join();
    EXPECT_EQ(Netns::currentInode(), home);
}

TEST(Ethtool, TurnsTxChecksumOffInsidePodNetnsAndLeavesHostEndAlone) {
    VethInNetns veth;
    {
        Netns in(veth.ns.path());
        Ethtool et;
        ASSERT_TRUE(et.txChecksum(veth.pod)) << "a fresh veth starts with TX checksum on";
        EXPECT_TRUE(et.ensureTxChecksumOff(veth.pod));
        EXPECT_FALSE(et.txChecksum(veth.pod));
        EXPECT_FALSE(et.ensureTxChecksumOff(veth.pod)) << "already off: no repair to count";
    }
    EXPECT_EQ(ethtoolFeature(veth.ns.name(), veth.pod, "tx-checksumming"), "off");
    // The kernel drops TSO along with TX checksum (TSO depends on it). ethtool
    // 6.1's "tcp-segmentation-offload" summary also counts features newer than
    // itself, so the witness is the tx-tcp-segmentation feature itself.
    EXPECT_EQ(ethtoolFeature(veth.ns.name(), veth.pod, "tx-tcp-segmentation"), "off");
    EXPECT_EQ(ethtoolFeature("", veth.host, "tx-checksumming"), "on");
    Ethtool host;
    EXPECT_TRUE(host.txChecksum(veth.host));
}

TEST(Ethtool, ReportsTsoAndGsoAsEthtoolDoes) {
    VethInNetns veth;
    Ethtool et;
    for (bool on : {false, true}) {
        et.setTxChecksum(veth.host, on);
        auto st = et.state(veth.host);
        const char* word = on ? "on" : "off";
        EXPECT_EQ(st.txChecksum, on);
        EXPECT_EQ(ethtoolFeature("", veth.host, "tx-checksumming"), word);
        EXPECT_EQ(ethtoolFeature("", veth.host, "tx-tcp-segmentation") == "on", st.tso) << word;
        EXPECT_EQ(ethtoolFeature("", veth.host, "generic-segmentation-offload") == "on", st.gso) << word;
    }
}

TEST(Ethtool, MissingDeviceInNetnsIsAClearErrorAndWeComeBack) {
    VethInNetns veth;
    auto home = Netns::currentInode();
    try {
        Netns in(veth.ns.path());
        Ethtool et;
        et.setTxChecksum(veth.host, false);  // the host end is not in the pod netns
        FAIL() << "expected an error";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("ethtool STXCSUM " + veth.host), std::string::npos) << e.what();
    }
    EXPECT_EQ(Netns::currentInode(), home);
    EXPECT_EQ(ethtoolFeature("", veth.host, "tx-checksumming"), "on");
}
