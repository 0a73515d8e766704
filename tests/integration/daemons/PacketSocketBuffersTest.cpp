// PacketSocketBuffers against a real ovs-vswitchd (userspace datapath) in the
// test's private network namespace: its AF_PACKET sockets are resized from
// this process, a second pass changes nothing, and the socket OVS opens for a
// re-added port is found and resized again; the job sizes the send socket
// vswitchd opens at its first transmit without waiting for a resync.
#include "daemons/PacketSocketBuffers.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "daemons/SocketBufferSizer.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"
#include "tests/support/TempDir.hpp"

using namespace kovs;

namespace {

constexpr int kBytes = 4 * 1024 * 1024;

const daemons::PacketSocketInfo* socketOf(const std::vector<daemons::PacketSocketInfo>& all, const std::string& ifname) {
    auto it = std::find_if(all.begin(), all.end(), [&](const daemons::PacketSocketInfo& s) { return s.ifname == ifname; });
    return it == all.end() ? nullptr : &*it;
}

}  // namespace

TEST(PacketSocketBuffers, ResizesVswitchdsSocketsAndTheNewOneOfAReaddedPort) {
    test::OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-sock", "--", "set", "Bridge", "br-sock", "datapath_type=netdev"});
    runChecked({"ip", "link", "add", "kvsock0", "type", "veth", "peer", "name", "kvsock0p"});
    runChecked({"ip", "link", "set", "kvsock0", "up"});
    runChecked({"ip", "link", "set", "kvsock0p", "up"});
    ovs.vsctl({"add-port", "br-sock", "kvsock0"});
    pid_t pid = daemons::vswitchdPid(ovs.dir());
    ASSERT_EQ(pid, ovs.vswitchdPid());
    ASSERT_TRUE(test::pollUntil([&] { return socketOf(daemons::packetSockets(pid), "kvsock0") != nullptr; },
                                std::chrono::seconds(10)))
        << "vswitchd opened no AF_PACKET socket for its system port";
    auto before = daemons::packetSockets(pid);
    ASSERT_LT(socketOf(before, "kvsock0")->rcvbuf, kBytes) << "the kernel default is expected to be smaller";

    auto first = daemons::sizePacketSocketBuffers(pid, kBytes);
    EXPECT_GE(first.sockets, 1);
    EXPECT_EQ(first.resized, first.sockets);
    for (const auto& s : daemons::packetSockets(pid)) {
        EXPECT_EQ(s.rcvbuf, kBytes) << s.ifname;
        EXPECT_EQ(s.sndbuf, kBytes) << s.ifname;
    }
    auto again = daemons::sizePacketSocketBuffers(pid, kBytes);
    EXPECT_EQ(again.sockets, first.sockets);
    EXPECT_EQ(again.resized, 0) << "already sized sockets must be left alone";

    // OVS opens a fresh socket, at the default size, for a re-added port.
    ovs.vsctl({"del-port", "br-sock", "kvsock0"});
    ovs.vsctl({"add-port", "br-sock", "kvsock0"});
    ASSERT_TRUE(test::pollUntil(
        [&] {
            auto now = daemons::packetSockets(pid);
            const auto* p = socketOf(now, "kvsock0");
            return p && p->rcvbuf < kBytes;
        },
        std::chrono::seconds(10)));
    EXPECT_EQ(daemons::sizePacketSocketBuffers(pid, kBytes).resized, 1);
    EXPECT_EQ(socketOf(daemons::packetSockets(pid), "kvsock0")->rcvbuf, kBytes);
    runChecked({"ip", "link", "del", "kvsock0"});
}

// vswitchd opens the one socket it sends on through every system port at
// its first transmit, which no OVSDB change announces. With a resync of a
// minute, the job still sizes it within seconds.
TEST(SocketBufferSizer, TheSendSocketOpenedAtTheFirstTransmitIsSizedBeforeTheResync) {
    test::OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-sock", "--", "set", "Bridge", "br-sock", "datapath_type=netdev"});
    runChecked({"ip", "link", "add", "kvsock0", "type", "veth", "peer", "name", "kvsock0p"});
    runChecked({"ip", "link", "set", "kvsock0", "up"});
    ovs.vsctl({"add-port", "br-sock", "kvsock0"});
    pid_t pid = daemons::vswitchdPid(ovs.dir());
    auto sized = [&](const std::string& ifname) {
        auto all = daemons::packetSockets(pid);
        const auto* s = socketOf(all, ifname);
        return s && s->rcvbuf == kBytes && s->sndbuf == kBytes;
    };
    EventLoop loop;
    daemons::SocketBufferSizer sizer(loop, ovs.dir(), kBytes / 1024, std::chrono::minutes(1));
    sizer.start();
    ASSERT_TRUE(loop.runUntil([&] { return sized("kvsock0"); }, std::chrono::seconds(10)));
    ASSERT_EQ(socketOf(daemons::packetSockets(pid), ""), nullptr) << "vswitchd has sent nothing yet";

    // One frame out of the port: vswitchd opens its send socket.
    ovs.ofctl({"packet-out", "br-sock",
               "in_port=LOCAL,packet=ffffffffffff0a580af401050806" "0001080006040001" "0a580af40105" "0af40101"
               "000000000000" "0af40102,actions=output:kvsock0"});
    ASSERT_TRUE(test::pollUntil([&] { return socketOf(daemons::packetSockets(pid), "") != nullptr; }, std::chrono::seconds(5)))
        << "no send socket after a transmit";
    EXPECT_TRUE(loop.runUntil([&] { return sized(""); }, std::chrono::seconds(10)))
        << "the send socket waits for the resync";
    runChecked({"ip", "link", "del", "kvsock0"});
}

TEST(PacketSocketBuffers, APidfileNamingAnotherProcessIsAClearError) {
    kovs::test::TempDir tmp{"kovs-pidfile"};
    const std::string& dir = tmp.path();
    auto error = [&] {
        try {
            daemons::vswitchdPid(dir);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(error().find("ovs-vswitchd.pid: no pid in it"), std::string::npos) << error();
    // Next to Antrea the pidfile holds a pid of another pid namespace: here, ours.
    std::ofstream(dir + "/ovs-vswitchd.pid") << ::getpid() << "\n";
    std::string self;
    std::getline(std::ifstream("/proc/self/comm"), self);
    EXPECT_NE(error().find("is '" + self + "'"), std::string::npos) << error();
    EXPECT_NE(error().find("not ovs-vswitchd"), std::string::npos) << error();
    std::filesystem::remove_all(dir);
}

TEST(PacketSocketBuffers, AProcessThatIsGoneIsAClearError) {
    try {
        daemons::sizePacketSocketBuffers(999999999, kBytes);
        FAIL() << "no error for a pid that does not exist";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/proc/999999999/net/packet: cannot read"), std::string::npos) << e.what();
    }
}
