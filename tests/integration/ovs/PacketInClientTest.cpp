// PacketInClient against a real ovs-vswitchd (OvsSandbox, private netns,
// userspace datapath): frames sent into a veth on br-int hit a flow whose
// action is controller(meter_id=...), and the client reads them as
// packet-ins. Shown here: the mgmt socket's service connection gets no
// packet-in until it sets miss_send_len; the meter cuts a flood to its rate
// (and without meter_id the flood arrives whole); a flow added before its
// meter exists is not metered at all (why the agent sets the meter first and
// re-adds the flows after a reconnect); a restarted vswitchd gets its meter back.
#include "ovs/PacketInClient.hpp"

#include <gtest/gtest.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/Process.hpp"
#include "ovs/PacketHeaders.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"
#include "tests/unit/ovs/TestFrames.hpp"

using kovs::EventLoop;
using kovs::ovs::PacketInClient;
using kovs::ovs::PacketInClientOptions;
using kovs::ovs::openflow::PacketIn;
using kovs::test::OvsSandbox;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kMeter = 5;
constexpr uint64_t kCookie = 0x6b0000000009;

struct Bridge {
    OvsSandbox ovs;
    int ofport = 0;
    Bridge() {
        ovs.vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev", "fail_mode=secure"});
        kovs::runChecked({"ip", "link", "add", "v1", "type", "veth", "peer", "name", "v1p"});
        kovs::runChecked({"ip", "link", "set", "v1", "up"});
        kovs::runChecked({"ip", "link", "set", "v1p", "up"});
        ovs.vsctl({"add-port", "br-int", "v1"});
        ofport = std::stoi(ovs.vsctl({"get", "Interface", "v1", "ofport"}));
    }
    ~Bridge() { kovs::runProcess({"ip", "link", "del", "v1"}); }
    std::string mgmt() const { return ovs.dir() + "/br-int.mgmt"; }
    // The flow of a logged rule; `userdata` as the agent's reconnect generation.
    void logFlow(bool metered, const std::string& userdata = "") {
        ovs.ofctl({"add-flow", "br-int", "cookie=" + std::to_string(kCookie) +
                                             ",table=0,priority=10,ip actions=controller(max_len=128" +
                                             (userdata.empty() ? "" : ",userdata=" + userdata) +
                                             (metered ? ",meter_id=" + std::to_string(kMeter) : std::string()) + ")"});
    }
    uint64_t flowPackets() const {
        auto dump = ovs.ofctl({"dump-flows", "br-int"});
        auto at = dump.find("n_packets=");
        return at == std::string::npos ? 0 : std::stoull(dump.substr(at + 10));
    }
    bool meterThere(const std::string& rate) const {
        auto meters = ovs.ofctl({"-O", "OpenFlow13", "dump-meters", "br-int"});
        return meters.find("meter=" + std::to_string(kMeter) + " pktps stats bands=\ntype=drop rate=" + rate) != std::string::npos;
    }
};

// Sends frames into v1's peer: `count` of them, or as many as fit in `duration`.
size_t sendFrames(size_t count, std::chrono::milliseconds duration = 0ms) {
    kovs::UniqueFd s(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = static_cast<int>(::if_nametoindex("v1p"));
    to.sll_halen = 6;
    auto deadline = std::chrono::steady_clock::now() + duration;
    size_t sent = 0;
    while (duration > 0ms ? std::chrono::steady_clock::now() < deadline : sent < count) {
        auto f = kovs::test::ipFrame("10.244.1.5", "10.244.2.7", IPPROTO_TCP, uint16_t(10000 + sent % 50000), 80);
        if (::sendto(s.get(), f.data(), f.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == ssize_t(f.size())) ++sent;
    }
    return sent;
}

// Floods for `duration` on a thread while the loop reads: what was sent and what arrived.
std::pair<size_t, size_t> flood(EventLoop& loop, const std::vector<PacketIn>& got, std::chrono::milliseconds duration) {
    const size_t before = got.size();
    std::atomic<size_t> sent{0};
    std::atomic<bool> done{false};
    std::thread t([&] {
        sent = sendFrames(0, duration);
        done = true;
    });
    loop.runUntil([&] { return done.load(); }, duration + 10s);
    t.join();
    // What vswitchd still had queued.
    size_t last = 0;
    loop.runUntil([&] { return false; }, 300ms);
    while (got.size() != last) {
        last = got.size();
        loop.runUntil([&] { return false; }, 200ms);
    }
    return {sent.load(), got.size() - before};
}

struct Listener {
    EventLoop loop;
    std::vector<PacketIn> got;
    PacketInClient client;
    Listener(const Bridge& b, uint32_t rate, uint16_t missSendLen = 128)
        : client(loop, options(b, rate, missSendLen), [this](const PacketIn& p) { got.push_back(p); }) {
        client.start();
        EXPECT_TRUE(loop.runUntil([&] { return client.connected(); }, 10s)) << client.lastError();
    }
    static PacketInClientOptions options(const Bridge& b, uint32_t rate, uint16_t missSendLen) {
        PacketInClientOptions o;
        o.socketPath = b.mgmt();
        o.meters = {{kMeter, rate}};
        o.missSendLen = missSendLen;
        o.statsInterval = 200ms;
        return o;
    }
    bool waitFor(size_t n) { return loop.runUntil([&] { return got.size() >= n; }, 10s); }
};

}  // namespace

TEST(PacketInClient, ReadsThePacketInsOfAControllerAction) {
    Bridge b;
    Listener l(b, 1000);
    ASSERT_TRUE(kovs::test::pollUntil([&] { return b.meterThere("1000"); }, 5s)) << b.ovs.ofctl({"-O", "OpenFlow13", "dump-meters", "br-int"});
    b.logFlow(true);
    sendFrames(5);
    ASSERT_TRUE(l.waitFor(5)) << "got " << l.got.size() << " packet-ins";
    const auto& p = l.got.front();
    EXPECT_EQ(p.cookie, kCookie);
    EXPECT_EQ(p.inPort, uint32_t(b.ofport));
    EXPECT_EQ(p.tableId, 0);
    auto h = kovs::ovs::parsePacketHeaders(p.data);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->sourceText(), "10.244.1.5:10000");
    EXPECT_EQ(h->destinationText(), "10.244.2.7:80");
    EXPECT_EQ(h->protocolName(), "TCP");
    // The meter's statistics come back over the same connection.
    ASSERT_TRUE(l.loop.runUntil([&] { auto* s = l.client.meterStats(kMeter); return s && s->packetsIn >= 5; }, 5s));
}

TEST(PacketInClient, AServiceConnectionGetsNoPacketInWithoutMissSendLen) {
    Bridge b;
    Listener l(b, 1000, /*missSendLen=*/0);
    ASSERT_TRUE(kovs::test::pollUntil([&] { return b.meterThere("1000"); }, 5s));
    b.logFlow(true);
    sendFrames(5);
    l.loop.runUntil([&] { return false; }, 1s);
    EXPECT_EQ(l.got.size(), 0u);
    EXPECT_GE(b.flowPackets(), 5u) << "the frames did not reach the flow";
}

TEST(PacketInClient, TheMeterCutsAFloodToItsRate) {
    Bridge b;
    constexpr uint32_t kRate = 50;
    Listener l(b, kRate);
    ASSERT_TRUE(kovs::test::pollUntil([&] { return b.meterThere(std::to_string(kRate)); }, 5s));
    b.logFlow(true);
    auto [sent, arrived] = flood(l.loop, l.got, 2000ms);
    std::printf("metered at %u pkt/s: %zu frames sent in 2 s, %zu packet-ins arrived\n", kRate, sent, arrived);
    EXPECT_GT(sent, 20u * kRate) << "the flood was too slow to show anything";
    // The rate for 2 s, and the bucket's burst (one second's worth) on top.
    EXPECT_LE(arrived, 4 * kRate);
    EXPECT_GE(arrived, kRate);
    ASSERT_TRUE(l.loop.runUntil([&] { auto* s = l.client.meterStats(kMeter); return s && !s->bandDrops.empty() && s->bandDrops[0] > 0; }, 5s));
}

TEST(PacketInClient, WithoutTheMeterTheFloodArrivesWhole) {
    Bridge b;
    Listener l(b, 50);
    b.logFlow(false);
    auto [sent, arrived] = flood(l.loop, l.got, 1000ms);
    std::printf("without meter_id: %zu frames sent in 1 s, %zu packet-ins arrived\n", sent, arrived);
    EXPECT_GT(arrived, 20u * 50);
}

// A controller action names its meter when its flow is added: a flow added
// before the meter exists stays unmetered after the meter comes.
TEST(PacketInClient, AFlowAddedBeforeItsMeterIsNotMetered) {
    Bridge b;
    b.logFlow(true);
    Listener l(b, 50);
    ASSERT_TRUE(kovs::test::pollUntil([&] { return b.meterThere("50"); }, 5s));
    auto [sent, arrived] = flood(l.loop, l.got, 1000ms);
    std::printf("flow before meter: %zu frames sent in 1 s, %zu packet-ins arrived\n", sent, arrived);
    EXPECT_GT(arrived, 20u * 50);
    // Added again with other actions (what the flow job does once the client
    // has set the meter: the generation in the userdata changes), it is.
    b.logFlow(true, "01");
    auto [sent2, arrived2] = flood(l.loop, l.got, 1000ms);
    std::printf("the flow added again after the meter: %zu frames sent in 1 s, %zu packet-ins arrived\n", sent2, arrived2);
    EXPECT_LE(arrived2, 3u * 50);
}

TEST(PacketInClient, AfterAVswitchdRestartItReconnectsAndSetsTheMeterAgain) {
    Bridge b;
    Listener l(b, 77);
    ASSERT_TRUE(kovs::test::pollUntil([&] { return b.meterThere("77"); }, 5s));
    b.ovs.killVswitchd(SIGKILL);
    ASSERT_TRUE(l.loop.runUntil([&] { return !l.client.connected(); }, 5s));
    b.ovs.startVswitchd();
    ASSERT_TRUE(l.loop.runUntil([&] { return l.client.connected() && l.client.connects() >= 2; }, 15s)) << l.client.lastError();
    ASSERT_TRUE(kovs::test::pollUntil([&] { return b.meterThere("77"); }, 5s)) << b.ovs.ofctl({"-O", "OpenFlow13", "dump-meters", "br-int"});
    // A new rate reaches the meter in place.
    l.client.setMeter(kMeter, 88);
    EXPECT_TRUE(kovs::test::pollUntil([&] { return b.meterThere("88"); }, 5s));
}
