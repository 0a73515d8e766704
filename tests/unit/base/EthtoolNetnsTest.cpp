// Netns and Ethtool without root: bad input is rejected with errors that name
// the object, and reads work on the loopback device.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/Error.hpp"
#include "base/Ethtool.hpp"
#include "base/Netns.hpp"
#include "tests/integration/support/Emulator.hpp"

using kovs::Ethtool;
using kovs::Netns;

namespace {

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const kovs::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Netns, RejectsMissingPathAndStaysHome) {
    if (kovs::test::underEmulator()) GTEST_SKIP() << kovs::test::kQemuNoNsIoctl;
    auto before = Netns::currentInode();
    auto msg = errorOf([] { Netns ns("/nonexistent/netns"); });
    EXPECT_NE(msg.find("netns /nonexistent/netns: open"), std::string::npos) << msg;
    EXPECT_EQ(Netns::currentInode(), before);
}

TEST(Netns, RejectsFileThatIsNotANamespace) {
    if (kovs::test::underEmulator()) GTEST_SKIP() << kovs::test::kQemuNoNsIoctl;
    auto before = Netns::currentInode();
    auto msg = errorOf([] { Netns ns("/proc/self/status"); });
    EXPECT_NE(msg.find("not a network namespace"), std::string::npos) << msg;
    EXPECT_EQ(Netns::currentInode(), before);
}

TEST(Netns, OpensOwnNamespace) {
    if (kovs::test::underEmulator()) GTEST_SKIP() << kovs::test::kQemuNoNsIoctl;
    auto fd = Netns::open("/proc/self/ns/net");
    EXPECT_TRUE(fd);
}

TEST(Ethtool, ReadsLoopbackState) {
    if (kovs::test::underEmulator()) GTEST_SKIP() << kovs::test::kQemuNoEthtool;
    Ethtool et;
    auto st = et.state("lo");
    // The loopback device has checksumming and segmentation offload in every kernel.
    EXPECT_TRUE(st.txChecksum);
    EXPECT_TRUE(st.gso);
}

TEST(Ethtool, NamesDeviceInErrors) {
    Ethtool et;
    auto msg = errorOf([&] { et.txChecksum("kovs-nosuchdev"); });
    EXPECT_NE(msg.find("ethtool GTXCSUM kovs-nosuchdev"), std::string::npos) << msg;
    msg = errorOf([&] { et.txChecksum("a-name-longer-than-15"); });
    EXPECT_NE(msg.find("not a valid interface name"), std::string::npos) << msg;
    msg = errorOf([&] { et.txChecksum(""); });
    EXPECT_NE(msg.find("not a valid interface name"), std::string::npos) << msg;
}
