// Why kovs-cni exists, measured: TCP from a pod to gw0 through the userspace
// datapath works with the pod's TX checksum offload off and fails with it on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <string>

#include "base/Ethtool.hpp"
#include "base/Netns.hpp"
#include "base/Process.hpp"
#include "base/UniqueFd.hpp"
#include "cni/VethPair.hpp"
#include "tests/support/Poll.hpp"
#include "tests/integration/cni/CniTestSupport.hpp"

using nlohmann::json;
using namespace kovs::test;
using kovs::cni::VethPair;

namespace {

// A TCP connection from inside `netns` to addr:port, carrying `payload`;
// returns what the server read (empty when the connection never came up).
std::string tcpExchange(const std::string& netns, const std::string& addr, uint16_t port, const std::string& payload,
                        int timeoutMs) {
    kovs::UniqueFd server(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(server.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    ::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
    if (::bind(server.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) kovs::throwErrno("bind " + addr);
    if (::listen(server.get(), 4) < 0) kovs::throwErrno("listen");

    kovs::UniqueFd client;
    {
        kovs::Netns in(netns);
        client.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    }
    ::connect(client.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    pollfd pc{client.get(), POLLOUT, 0};
    if (::poll(&pc, 1, timeoutMs) <= 0) return "";
    int soErr = 0;
    socklen_t len = sizeof soErr;
    ::getsockopt(client.get(), SOL_SOCKET, SO_ERROR, &soErr, &len);
    if (soErr != 0) return "";
    if (::send(client.get(), payload.data(), payload.size(), MSG_NOSIGNAL) < 0) return "";
    pollfd ps{server.get(), POLLIN, 0};
    if (::poll(&ps, 1, timeoutMs) <= 0) return "";
    kovs::UniqueFd conn(::accept4(server.get(), nullptr, nullptr, SOCK_CLOEXEC));
    std::string got;
    while (got.size() < payload.size()) {
        pollfd pr{conn.get(), POLLIN, 0};
        if (::poll(&pr, 1, timeoutMs) <= 0) break;
        char buf[4096];
        auto n = ::recv(conn.get(), buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
    }
    return got;
}

}  // namespace

// Why kovs-cni exists: through the userspace datapath, a pod whose veth
// leaves TCP checksums to offload cannot talk to gw0.
TEST_F(KovsCni, PodReachesGw0OnlyWithOffloadOff) {
    ovs.vsctl({"add-port", "br-int", "gw0", "--", "set", "Interface", "gw0", "type=internal"});
    ASSERT_TRUE(pollUntil([&] { return linkExists("", "gw0"); })) << "vswitchd did not create gw0";
    kovs::runChecked({"ip", "addr", "add", "10.244.0.1/24", "dev", "gw0"});
    kovs::runChecked({"ip", "link", "set", "gw0", "up"});
    kovs::runChecked({"ethtool", "-K", "gw0", "tx", "off"});

    auto add = call(env("ADD"), mainConf());
    ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
    auto host = VethPair::hostNameFor("c1", "eth0");
    ASSERT_TRUE(pollUntil([&] { return ofport(host) > 0; })) << "vswitchd did not open " << host;
    ASSERT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "off");

    // With offload off (as ADD left it) TCP works; the first try may race the ARP.
    const std::string payload(64 * 1024, 'k');
    std::string got;
    pollUntil([&] { return (got = tcpExchange(pod.path(), "10.244.0.1", 15201, payload, 2000)) == payload; },
              std::chrono::seconds(10), std::chrono::milliseconds(100));
    EXPECT_EQ(got.size(), payload.size()) << "pod -> gw0 TCP with tx-checksumming off";

    // Forced back on: the checksums the pod left to offload are never filled
    // in by the userspace datapath, and gw0's kernel drops the segments.
    {
        kovs::Netns in(pod.path());
        kovs::Ethtool().setTxChecksum("eth0", true);
    }
    ASSERT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "on");
    got = tcpExchange(pod.path(), "10.244.0.1", 15202, payload, 3000);
    EXPECT_NE(got.size(), payload.size()) << "pod -> gw0 TCP unexpectedly worked with tx-checksumming on";
    RecordProperty("bytes_with_offload_on", static_cast<int>(got.size()));
}
