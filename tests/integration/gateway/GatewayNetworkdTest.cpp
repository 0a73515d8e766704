// The gateway guard against a real systemd-networkd 252 that believes it
// manages gw0 (catch-all .network file): `networkctl reconfigure gw0` removes
// every IPv4 address and route of gw0. With the guard on, gw0 comes back after
// each of 20 reconfigures and 2 networkd restarts while a TCP stream from a
// pod to a server bound on the gateway address keeps flowing. With the guard
// off the same scenario breaks; with the drop-in, networkd leaves gw0 alone.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "gateway/GatewayGuard.hpp"
#include "gateway/NetworkdDropins.hpp"
#include "base/Error.hpp"
#include "base/Process.hpp"
#include "base/UniqueFd.hpp"
#include "tests/integration/gateway/GatewayTestSupport.hpp"
#include "tests/support/NetworkdSandbox.hpp"
#include "tests/support/Poll.hpp"

using namespace kovs;
using namespace kovs::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* kPodNs = "kovs-gw-pod";
constexpr uint16_t kPort = 15201;

// A TCP stream pod -> 10.244.1.1:kPort. The client socket is created in the
// pod's netns by a thread that entered it; the server counts bytes received.
class PodStream {
public:
    PodStream() {
        listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!listener_) throwErrno("pod stream: socket");
        int one = 1;
        ::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a = addr();
        if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) throwErrno("pod stream: bind 10.244.1.1");
        if (::listen(listener_.get(), 1) < 0) throwErrno("pod stream: listen");

        std::string err;
        std::thread([&] {
            UniqueFd ns(::open(("/run/netns/" + std::string(kPodNs)).c_str(), O_RDONLY | O_CLOEXEC));
            if (!ns || ::setns(ns.get(), CLONE_NEWNET) < 0) {
                err = "setns into pod";
                return;
            }
            client_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
            sockaddr_in a = addr();
            if (::connect(client_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) err = std::string("connect: ") + std::strerror(errno);
        }).join();  // a thread of its own: setns must not move the test's main thread
        if (!err.empty()) throw Error("pod stream: " + err);
        server_.reset(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!server_) throwErrno("pod stream: accept");

        sender_ = std::thread([this] {
            std::vector<char> buf(16 * 1024, 'k');
            while (!stop_) {
                if (::send(client_.get(), buf.data(), buf.size(), MSG_NOSIGNAL) < 0) {
                    if (!stop_) broken_ = std::string("send: ") + std::strerror(errno);
                    return;
                }
            }
        });
        receiver_ = std::thread([this] {
            std::vector<char> buf(64 * 1024);
            while (!stop_) {
                ssize_t n = ::recv(server_.get(), buf.data(), buf.size(), 0);
                if (n <= 0) {
                    if (!stop_) broken_ = n == 0 ? "peer closed" : std::string("recv: ") + std::strerror(errno);
                    return;
                }
                received_ += static_cast<uint64_t>(n);
            }
        });
    }
    ~PodStream() {
        stop_ = true;
        ::shutdown(client_.get(), SHUT_RDWR);
        ::shutdown(server_.get(), SHUT_RDWR);
        sender_.join();
        receiver_.join();
    }

    uint64_t received() const { return received_; }
    std::string broken() const {
        std::lock_guard l(m_);
        return broken_;
    }
    // Waits until `bytes` more than now have arrived.
    bool flows(uint64_t bytes = 1 << 20, std::chrono::milliseconds limit = 15s) const {
        uint64_t mark = received_;
        return pollUntil([&] { return received_ >= mark + bytes; }, limit, 2ms);
    }

private:
    static sockaddr_in addr() {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(kPort);
        ::inet_pton(AF_INET, "10.244.1.1", &a.sin_addr);
        return a;
    }

    UniqueFd listener_, client_, server_;
    std::thread sender_, receiver_;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> received_{0};
    mutable std::mutex m_;
    std::string broken_;
};

class GatewayNetworkdTest : public ::testing::Test {
protected:
    void SetUp() override {
        runProcess({"ip", "netns", "del", kPodNs});
        runProcess({"ip", "link", "del", "gw0"});
        runChecked({"ip", "netns", "add", kPodNs});
        runChecked({"ip", "link", "add", "gw0", "type", "veth", "peer", "name", "eth0", "netns", kPodNs});
        pod({"ip", "link", "set", "lo", "up"});
        pod({"ip", "link", "set", "eth0", "up"});
        pod({"ip", "addr", "add", "10.244.1.5/24", "dev", "eth0"});
        opt_.name = "gw0";
        opt_.mtu = 1450;
        opt_.addresses = {gatewayAddressFor("10.244.1.0/24")};
        opt_.routes = {{IpPrefix::parse("10.96.0.0/12"), std::nullopt}};
    }
    void TearDown() override {
        if (HasFailure() && networkd_) std::fprintf(stderr, "--- networkd/dbus log tail ---\n%s\n", networkd_->logTail().c_str());
        guard_.reset();
        networkd_.reset();
        runProcess({"ip", "link", "del", "gw0"});
        runProcess({"ip", "netns", "del", kPodNs});
    }
    static void pod(std::vector<std::string> argv) {
        argv.insert(argv.begin(), {"ip", "netns", "exec", kPodNs});
        runChecked(argv);
    }
    bool consistent() const {
        auto v = LinkView::read("gw0");
        auto* podRoute = v.route("10.244.1.0/24");
        return v.up && v.mtu == 1450 && v.addresses.count("10.244.1.1/24") && podRoute &&
               podRoute->prefsrc == "10.244.1.1" && v.route("10.96.0.0/12");
    }
    // Configures gw0 by hand, for runs without the guard.
    void configureByHand() {
        runChecked({"ip", "link", "set", "gw0", "mtu", "1450", "up"});
        runChecked({"ip", "addr", "add", "10.244.1.1/24", "dev", "gw0"});
        runChecked({"ip", "route", "add", "10.96.0.0/12", "dev", "gw0", "src", "10.244.1.1", "proto", "107"});
    }

    gateway::GatewayGuardOptions opt_;
    std::unique_ptr<GuardThread> guard_;
    std::unique_ptr<NetworkdSandbox> networkd_;
};

TEST_F(GatewayNetworkdTest, GuardKeepsGatewayAndTcpStreamThroughReconfiguresAndRestarts) {
    guard_ = std::make_unique<GuardThread>(opt_);
    ASSERT_TRUE(pollUntil([&] { return consistent(); }, 5s)) << LinkView::read("gw0").describe();
    networkd_ = std::make_unique<NetworkdSandbox>();
    PodStream stream;
    ASSERT_TRUE(stream.flows()) << "no initial transfer";

    std::vector<double> restoreMs;
    for (int i = 0; i < 22; ++i) {
        bool restart = i == 10 || i == 21;
        auto before = guard_->stats();
        auto t0 = std::chrono::steady_clock::now();
        if (restart) {
            networkd_->restartNetworkd();
        } else {
            networkd_->networkctl({"reconfigure", "gw0"});
            // The damage is real: networkd removed something and the guard repaired it.
            ASSERT_TRUE(pollUntil([&] { return guard_->stats().restores > before.restores; }, 10s))
                << "reconfigure #" << i << " caused no repair; gw0: " << LinkView::read("gw0").describe();
            restoreMs.push_back(guard_->stats().lastRestore.count() / 1e6);
        }
        ASSERT_TRUE(pollUntil([&] { return consistent(); }, 5s))
            << (restart ? "restart" : "reconfigure") << " #" << i << ": " << LinkView::read("gw0").describe();
        auto took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        ASSERT_TRUE(stream.flows()) << "TCP stream stalled after " << (restart ? "restart" : "reconfigure") << " #" << i;
        ASSERT_EQ(stream.broken(), "");
        std::printf("[ gateway ] networkd %-11s #%2d: consistent %7.1f ms after the command started; stream at %llu MiB\n",
                    restart ? "restart" : "reconfigure", i, took,
                    static_cast<unsigned long long>(stream.received() >> 20));
    }
    std::sort(restoreMs.begin(), restoreMs.end());
    std::printf("[ gateway ] guard repair after networkctl reconfigure: median %.3f ms, max %.3f ms over %zu\n",
                restoreMs[restoreMs.size() / 2], restoreMs.back(), restoreMs.size());
    auto s = guard_->stats();
    EXPECT_GE(s.addressesAdded, 20u);
    EXPECT_EQ(stream.broken(), "");
}

TEST_F(GatewayNetworkdTest, WithoutGuardReconfigureBreaksGatewayAndStream) {
    opt_.enabled = false;
    guard_ = std::make_unique<GuardThread>(opt_);
    configureByHand();
    networkd_ = std::make_unique<NetworkdSandbox>();
    PodStream stream;
    ASSERT_TRUE(stream.flows()) << "no initial transfer";
    networkd_->networkctl({"reconfigure", "gw0"});
    ASSERT_TRUE(pollUntil([&] { return LinkView::read("gw0").addresses.count("10.244.1.1/24") == 0; }, 10s))
        << "networkd did not remove the address: " << LinkView::read("gw0").describe();
    // Absence over a window: with the guard on, the address is back in milliseconds.
    EXPECT_FALSE(pollUntil([&] { return LinkView::read("gw0").addresses.count("10.244.1.1/24") > 0; }, 2s, 10ms))
        << "the address came back without a guard";
    EXPECT_FALSE(consistent()) << LinkView::read("gw0").describe();
    EXPECT_FALSE(stream.flows(1 << 20, 2s)) << "the stream kept flowing without the gateway address";
    std::printf("[ gateway ] guard off: after networkctl reconfigure gw0 is %s; stream stuck at %llu KiB\n",
                LinkView::read("gw0").describe().c_str(), static_cast<unsigned long long>(stream.received() >> 10));
}

TEST_F(GatewayNetworkdTest, DropinMakesNetworkdLeaveGatewayAlone) {
    opt_.enabled = false;  // the drop-in alone must hold
    guard_ = std::make_unique<GuardThread>(opt_);
    configureByHand();
    networkd_ = std::make_unique<NetworkdSandbox>();
    ASSERT_TRUE(pollUntil([&] { return networkd_->setupState("gw0") != "pending" && !networkd_->setupState("gw0").empty(); }, 10s));
    gateway::NetworkdDropins dropins(networkd_->runtimeNetworkDir());
    dropins.install({"gw0"});
    networkd_->networkctl({"reload"});
    ASSERT_TRUE(pollUntil([&] { return networkd_->setupState("gw0") == "unmanaged"; }, 10s))
        << "gw0 is " << networkd_->setupState("gw0");
    networkd_->networkctl({"reload"});
    EXPECT_FALSE(pollUntil([&] { return !consistent(); }, 2s, 10ms))
        << "networkd touched gw0 despite the drop-in: " << LinkView::read("gw0").describe();
    EXPECT_EQ(networkd_->setupState("gw0"), "unmanaged");

    // Control: without the drop-in the same reload takes gw0 over again and flushes it.
    dropins.remove({"gw0"});
    networkd_->networkctl({"reload"});
    EXPECT_TRUE(pollUntil([&] { return LinkView::read("gw0").addresses.count("10.244.1.1/24") == 0; }, 10s))
        << "without the drop-in networkd left gw0 alone too, so the test proves nothing: "
        << LinkView::read("gw0").describe() << " setup " << networkd_->setupState("gw0");
}

}  // namespace
