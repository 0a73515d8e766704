// TunnelReconciler against a real userspace ovs-vswitchd: br-phy (netdev)
// holds 172.30.0.1/24 in the test netns; each peer is a netns behind a veth
// whose other end is a br-phy port, so the kernel resolves peer MACs through
// OVS exactly as on a node. The last test stops vswitchd (SIGSTOP) while the
// job has work to do and shows the loop, and /healthz on it, carry on.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>

#include "agent/HealthServer.hpp"
#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"
#include "base/Log.hpp"
#include "base/Process.hpp"
#include "ovs/UnixctlClient.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"
#include "tunnel/TunnelReconciler.hpp"

using namespace kovs::tunnel;
using kovs::peers::Peer;
using kovs::peers::PeerSet;
using kovs::runChecked;
using kovs::runProcess;
using kovs::test::OvsSandbox;
using namespace std::chrono_literals;

namespace {

// One peer node: a netns with an address on the underlay, wired into br-phy.
class PeerNetns {
public:
    PeerNetns(OvsSandbox& ovs, int n) : ns_("tunpeer" + std::to_string(n)), ip_("172.30.0." + std::to_string(10 + n)) {
        std::string a = "tunA" + std::to_string(n), b = "tunB" + std::to_string(n);
        runChecked({"ip", "netns", "add", ns_});
        runChecked({"ip", "link", "add", a, "type", "veth", "peer", "name", b, "netns", ns_});
        runChecked({"ip", "-n", ns_, "addr", "add", ip_ + "/24", "dev", b});
        runChecked({"ip", "-n", ns_, "link", "set", b, "up"});
        runChecked({"ip", "link", "set", a, "up"});
        ovs.vsctl({"add-port", "br-phy", a});
        auto link = nlohmann::json::parse(runChecked({"ip", "-n", ns_, "-j", "link", "show", b}));
        mac_ = link.at(0).at("address").get<std::string>();
    }
    ~PeerNetns() { runProcess({"ip", "netns", "del", ns_}); }  // the veth pair dies with it

    Peer peer() const { return Peer{ns_, {kovs::IpPrefix::parse(ip_)}, {}}; }
    const std::string& ip() const { return ip_; }
    const std::string& mac() const { return mac_; }

private:
    std::string ns_, ip_, mac_;
};

void addUnderlayAddress() {
    runChecked({"ip", "addr", "replace", "172.30.0.1/24", "dev", "br-phy"});
    runChecked({"ip", "link", "set", "br-phy", "up"});
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// The status line of GET `path` on 127.0.0.1:port ("" when nothing came back).
std::string httpStatus(int port, const std::string& path) {
    kovs::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) return "";
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n";
    if (::send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL) < 0) return "";
    std::string in;
    char buf[1024];
    ssize_t n;
    while ((n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0) in.append(buf, static_cast<size_t>(n));
    return in.substr(0, in.find("\r\n"));
}

// SIGCONT on scope exit, so a failed assertion never leaves vswitchd stopped.
struct Stopped {
    pid_t pid;
    explicit Stopped(pid_t p) : pid(p) { ::kill(pid, SIGSTOP); }
    ~Stopped() { resume(); }
    void resume() const { ::kill(pid, SIGCONT); }
};

}  // namespace

class TunnelReconcilerTest : public ::testing::Test {
protected:
    void SetUp() override {
        // vswitchd leaves its netdev bridge's tap behind when it exits; an
        // earlier test's br-phy (and its addresses) must not leak into this one.
        runProcess({"ip", "link", "del", "br-phy"});
        ovs.vsctl({"add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev"});
        addUnderlayAddress();
    }

    std::string routes() { return ovs.appctl({"ovs/route/show"}); }
    std::string neighs() { return ovs.appctl({"tnl/neigh/show"}); }
    bool programmed(const PeerNetns& p) {
        return contains(routes(), "User: " + p.ip() + "/32 dev br-phy") &&
               contains(neighs(), p.ip()) && neighOf(p.ip()) == p.mac();
    }
    bool gone(const PeerNetns& p) { return !contains(routes(), p.ip() + "/32") && neighOf(p.ip()).empty(); }
    std::string neighOf(const std::string& ip) {
        std::istringstream in(neighs());
        for (std::string line; std::getline(in, line);) {
            std::istringstream words(line);
            std::string a, b, c;
            if (words >> a >> b >> c && a == ip && c == "br-phy") return b;
        }
        return "";
    }
    // The reconciler runs on `loop`; the checks shell out to ovs-appctl.
    bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout = 10s) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            loop.runUntil([] { return false; }, 20ms);
            if (cond()) return true;
        }
        return cond();
    }

    OvsSandbox ovs;
    kovs::EventLoop loop;
    kovs::ovs::UnixctlClient unixctl{loop, ovs.dir()};
    KernelUnderlay kernel;
    TunnelReconcilerOptions opts{"br-phy", 1s, std::chrono::minutes(5), 20ms};
};

TEST_F(TunnelReconcilerTest, ProgramsPeersAndRemovesThemWhenTheyLeave) {
    PeerNetns p1(ovs, 1), p2(ovs, 2);
    TunnelReconciler r(loop, unixctl, kernel, opts);
    r.start();
    r.setPeers({{"a", p1.peer()}, {"b", p2.peer()}});
    ASSERT_TRUE(waitFor([&] { return programmed(p1) && programmed(p2); }))
        << routes() << neighs() << r.stats().lastError;
    EXPECT_EQ(r.stats().unresolved, 0u);

    // p2 leaves: its route and neighbour go (tnl/neigh has no per-entry
    // delete in 3.1: flush + re-set), p1 stays.
    r.setPeers({{"a", p1.peer()}});
    ASSERT_TRUE(waitFor([&] { return gone(p2); })) << routes() << neighs();
    EXPECT_TRUE(programmed(p1)) << routes() << neighs();

    // OVS learns p2's address again (its node still answers ARP on the
    // underlay). Flushed once is enough: the resyncs (every 1 s here) must
    // not flush every peer's neighbour over it again and again.
    ovs.appctl({"tnl/neigh/set", "br-phy", p2.ip(), p2.mac()});
    auto sent = r.stats().commandsSent;
    waitFor([] { return false; }, 2500ms);
    EXPECT_EQ(neighOf(p2.ip()), p2.mac()) << "flushed again by a resync: " << neighs();
    EXPECT_EQ(r.stats().commandsSent, sent) << "the resyncs sent commands with nothing to change";

    r.setPeers({});
    ASSERT_TRUE(waitFor([&] { return gone(p1); })) << routes() << neighs();
    EXPECT_EQ(r.stats().lastError, "");
}

TEST_F(TunnelReconcilerTest, RepairsEntriesRemovedBehindItsBack) {
    PeerNetns p1(ovs, 1);
    auto o = opts;
    o.neighRefresh = 200ms;
    TunnelReconciler r(loop, unixctl, kernel, o);
    r.start();
    r.setPeers({{"a", p1.peer()}});
    ASSERT_TRUE(waitFor([&] { return programmed(p1); })) << routes() << neighs();

    ovs.appctl({"ovs/route/del", p1.ip() + "/32"});
    ovs.appctl({"tnl/neigh/flush"});
    ASSERT_TRUE(gone(p1));
    ASSERT_TRUE(waitFor([&] { return programmed(p1); })) << "not repaired by the resync: " << routes() << neighs();

    // Neighbours are re-set every neighRefresh even when nothing changed.
    auto sent = r.stats().commandsSent;
    ASSERT_TRUE(waitFor([&] { return r.stats().commandsSent >= sent + 2; }, 5s)) << "no periodic neighbour refresh";
    EXPECT_TRUE(programmed(p1));
}

TEST_F(TunnelReconcilerTest, ReprogramsAfterVswitchdRestart) {
    PeerNetns p1(ovs, 1), p2(ovs, 2);
    TunnelReconciler r(loop, unixctl, kernel, opts);
    r.start();
    r.setPeers({{"a", p1.peer()}, {"b", p2.peer()}});
    ASSERT_TRUE(waitFor([&] { return programmed(p1) && programmed(p2); })) << routes() << neighs();

    ovs.killVswitchd(9);
    ovs.startVswitchd();
    auto restarted = std::chrono::steady_clock::now();
    // br-phy is vswitchd's tap: it came back without its address, which the
    // uplink owner restores (OVS refuses a route whose bridge lacks one).
    ASSERT_TRUE(kovs::test::pollUntil([] { return runProcess({"ip", "link", "show", "br-phy"}).ok(); }, 10s));
    addUnderlayAddress();
    ASSERT_TRUE(waitFor([&] { return programmed(p1) && programmed(p2); }))
        << routes() << neighs() << r.stats().lastError;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - restarted);
    std::printf("routes + neighbours back %lld ms after ovs-vswitchd restart (2 peers)\n",
                static_cast<long long>(ms.count()));
    EXPECT_GE(r.stats().vswitchdRestarts, 1u);
}

TEST_F(TunnelReconcilerTest, UnresolvablePeerGetsItsRouteAndIsRetried) {
    PeerNetns p1(ovs, 1);
    TunnelReconciler r(loop, unixctl, kernel, opts);
    r.start();
    Peer ghost{"ghost", {kovs::IpPrefix::parse("172.30.0.99")}, {}};
    r.setPeers({{"a", p1.peer()}, {"ghost", ghost}});
    ASSERT_TRUE(waitFor([&] { return programmed(p1) && contains(routes(), "User: 172.30.0.99/32 dev br-phy"); }))
        << routes() << neighs();
    EXPECT_EQ(r.stats().unresolved, 1u);
    EXPECT_EQ(neighOf("172.30.0.99"), "");
    // Once the ghost answers, its MAC is picked up by a retry.
    PeerNetns late(ovs, 89);  // 172.30.0.99
    ASSERT_EQ(late.ip(), "172.30.0.99");
    ASSERT_TRUE(waitFor([&] { return neighOf("172.30.0.99") == late.mac(); })) << neighs();
    EXPECT_EQ(r.stats().unresolved, 0u);
}

// vswitchd stopped (SIGSTOP: its socket accepts, nobody answers) while the
// job has work to do (a peer leaves). Every pass then fails on unixctl
// timeouts, and meanwhile a 10 ms timer on the same loop keeps firing and
// /healthz, answered through the loop, keeps answering. After SIGCONT the
// job converges. If the loop waited for vswitchd, it would be blocked for a
// whole unixctl timeout at a time: the largest gap between two timer firings
// is printed and must stay below that.
TEST_F(TunnelReconcilerTest, AStoppedVswitchdDoesNotStallTheLoop) {
    PeerNetns p1(ovs, 1), p2(ovs, 2);
    constexpr auto kUnixctlTimeout = 2s;
    kovs::ovs::UnixctlClient client(loop, ovs.dir(), "ovs-vswitchd", kUnixctlTimeout);
    TunnelReconciler r(loop, client, kernel, opts);
    kovs::agent::HealthServer health(loop, "127.0.0.1:0", {[] { return std::string(); }, [] { return std::string(); }});
    r.start();
    r.setPeers({{"a", p1.peer()}, {"b", p2.peer()}});
    ASSERT_TRUE(waitFor([&] { return programmed(p1) && programmed(p2); })) << routes() << neighs();

    // The ticker: the longest gap between two firings of a 10 ms timer.
    using Clock = std::chrono::steady_clock;
    auto last = Clock::now();
    Clock::duration worst{0};
    bool ticking = true;
    std::function<void()> tick = [&] {
        auto now = Clock::now();
        worst = std::max(worst, now - last);
        last = now;
        if (ticking) loop.after(10ms, tick);
    };
    // /healthz from another thread, the way the kubelet probes it.
    std::atomic<bool> probing{true}, proberDone{false};
    std::atomic<int> healthy{0}, unhealthy{0};
    std::mutex seenMutex;
    std::string seen;
    std::thread prober([&] {
        while (probing) {
            auto status = httpStatus(health.port(), "/healthz");
            if (status == "HTTP/1.1 200 OK") {
                ++healthy;
            } else {
                ++unhealthy;
                std::lock_guard lock(seenMutex);
                seen = status;
            }
            std::this_thread::sleep_for(20ms);  // pacing, not waiting for state
        }
        proberDone = true;
    });

    uint64_t passes;
    {
        Stopped stopped(ovs.vswitchdPid());
        passes = r.stats().passes;
        last = Clock::now();
        loop.after(10ms, tick);
        r.setPeers({{"a", p1.peer()}});  // work to do: p2's route and neighbour must go
        // At least two passes fail on timeouts (the retry backoff runs in between).
        ASSERT_TRUE(loop.runUntil(
            [&] { return r.stats().passes >= passes + 2 && contains(r.stats().lastError, "timed out"); }, 120s))
            << "passes " << r.stats().passes - passes << ", last error: " << r.stats().lastError;
        ticking = false;
        // The loop keeps running until the last probe is answered: a probe
        // still in flight while this thread waited in join() would meet a
        // loop nobody runs and get the 503 of a wedged one.
        probing = false;
        EXPECT_TRUE(loop.runUntil([&] { return proberDone.load(); }, 10s));
        prober.join();
    }
    auto worstMs = std::chrono::duration_cast<std::chrono::milliseconds>(worst).count();
    std::printf("[ figure ] vswitchd stopped: %llu passes failed on a %lld ms unixctl timeout; a 10 ms timer's "
                "largest gap %lld ms; /healthz answered %d times, failed %d\n",
                static_cast<unsigned long long>(r.stats().passes - passes),
                static_cast<long long>(std::chrono::milliseconds(kUnixctlTimeout).count()),
                static_cast<long long>(worstMs), healthy.load(), unhealthy.load());
    EXPECT_LT(worst, kUnixctlTimeout) << "the loop was blocked for a whole unixctl timeout";
    EXPECT_GT(healthy.load(), 0);
    EXPECT_EQ(unhealthy.load(), 0) << "last: " << seen;

    // SIGCONT (the Stopped guard): the job converges.
    ASSERT_TRUE(waitFor([&] { return programmed(p1) && gone(p2) && r.stats().lastError.empty(); }, 30s))
        << routes() << neighs() << r.stats().lastError;
}

namespace {

// A peer behind a router: the router's leg on the underlay (172.30.0.254, a
// br-phy port, announcing a new MAC by gratuitous ARP) and a far subnet
// 172.31.5.0/24 holding the peer at .10; the test netns routes that subnet
// via the router.
class RoutedPeer {
public:
    explicit RoutedPeer(OvsSandbox& ovs) {
        runChecked({"ip", "netns", "add", router_});
        runChecked({"ip", "netns", "add", far_});
        runChecked({"ip", "link", "add", "tunRa", "type", "veth", "peer", "name", "tunRb", "netns", router_});
        runChecked({"ip", "-n", router_, "link", "add", "tunRc", "type", "veth", "peer", "name", "tunFb", "netns", far_});
        runChecked({"ip", "netns", "exec", router_, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.conf.all.arp_notify=1"});
        runChecked({"ip", "-n", router_, "addr", "add", "172.30.0.254/24", "dev", "tunRb"});
        runChecked({"ip", "-n", router_, "addr", "add", "172.30.0.253/24", "dev", "tunRb"});  // a second gateway
        runChecked({"ip", "-n", router_, "addr", "add", "172.31.5.1/24", "dev", "tunRc"});
        runChecked({"ip", "-n", router_, "link", "set", "tunRb", "up"});
        runChecked({"ip", "-n", router_, "link", "set", "tunRc", "up"});
        runChecked({"ip", "-n", far_, "addr", "add", "172.31.5.10/24", "dev", "tunFb"});
        runChecked({"ip", "-n", far_, "link", "set", "tunFb", "up"});
        runChecked({"ip", "-n", far_, "route", "add", "default", "via", "172.31.5.1"});
        runChecked({"ip", "link", "set", "tunRa", "up"});
        ovs.vsctl({"add-port", "br-phy", "tunRa"});
        routeVia();
    }
    ~RoutedPeer() {
        runProcess({"ip", "route", "del", "172.31.5.0/24"});
        runProcess({"ip", "netns", "del", far_});
        runProcess({"ip", "netns", "del", router_});
    }
    void routeVia(const std::string& gw = gateway()) const { runChecked({"ip", "route", "replace", "172.31.5.0/24", "via", gw}); }
    void unroute() const { runChecked({"ip", "route", "del", "172.31.5.0/24"}); }
    std::string routerMac() const {
        auto link = nlohmann::json::parse(runChecked({"ip", "-n", router_, "-j", "link", "show", "tunRb"}));
        return link.at(0).at("address").get<std::string>();
    }
    void setRouterMac(const std::string& mac) const { runChecked({"ip", "-n", router_, "link", "set", "tunRb", "address", mac}); }
    Peer peer() const { return Peer{far_, {kovs::IpPrefix::parse(ip())}, {}}; }
    static std::string ip() { return "172.31.5.10"; }
    static std::string gateway() { return "172.30.0.254"; }

private:
    std::string router_ = "tunrtr", far_ = "tunfar";
};

}  // namespace

// The kernel's route decides the OVS route's gateway and the neighbour the
// tunnel needs; with a 60 s resync only the kernel's notifications can make
// the job follow a route that moves to another gateway, goes and comes back.
// (A new MAC announced by gratuitous ARP OVS also snoops by itself.)
TEST_F(TunnelReconcilerTest, ARoutedPeerFollowsTheKernelsRouteAndItsGatewaysMac) {
    PeerNetns near(ovs, 1);
    RoutedPeer far(ovs);
    auto o = opts;
    o.resync = 60s;
    TunnelReconciler r(loop, unixctl, kernel, o);
    r.start();
    r.setPeers({{"near", near.peer()}, {"far", far.peer()}});
    auto viaRouter = "User: " + RoutedPeer::ip() + "/32 dev br-phy GW " + RoutedPeer::gateway();
    ASSERT_TRUE(waitFor([&] {
        return programmed(near) && contains(routes(), viaRouter) && neighOf(RoutedPeer::gateway()) == far.routerMac();
    })) << routes() << neighs() << r.stats().lastError;
    EXPECT_EQ(r.pathOf(RoutedPeer::ip()).gateway, RoutedPeer::gateway());
    EXPECT_TRUE(r.hasRoute(RoutedPeer::ip()));
    EXPECT_TRUE(r.hasNeighbour(RoutedPeer::ip()));
    EXPECT_EQ(neighOf(RoutedPeer::ip()), "") << "a routed peer needs no neighbour of its own";

    // The router is replaced: a new MAC, announced by gratuitous ARP.
    const std::string newMac = "02:00:00:00:fe:01";
    auto changed = std::chrono::steady_clock::now();
    far.setRouterMac(newMac);
    ASSERT_TRUE(waitFor([&] { return neighOf(RoutedPeer::gateway()) == newMac; }, 5s))
        << "the gateway's new MAC was not followed: " << neighs();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - changed);
    std::printf("gateway MAC change (gratuitous ARP) in vswitchd after %lld ms (resync 60 s)\n", static_cast<long long>(ms.count()));

    // The kernel's route moves to the second gateway: the OVS route follows
    // (OVS keeps a user route as it was given; only kovs can move it).
    auto events = r.stats().kernelEvents;
    far.routeVia("172.30.0.253");
    auto viaSecond = "User: " + RoutedPeer::ip() + "/32 dev br-phy GW 172.30.0.253";
    ASSERT_TRUE(waitFor([&] { return contains(routes(), viaSecond) && neighOf("172.30.0.253") == newMac; }, 5s))
        << "the kernel's new gateway was not followed: " << routes() << neighs();
    EXPECT_EQ(r.pathOf(RoutedPeer::ip()).gateway, "172.30.0.253");
    EXPECT_GT(r.stats().kernelEvents, events) << "followed, but not because the kernel said so";
    far.routeVia();

    // The node loses its route to the far subnet: reported, the near peer
    // untouched, and programmed again when the route is back.
    far.unroute();
    ASSERT_TRUE(waitFor([&] { return r.stats().noPath == 1; }, 5s)) << r.stats().noPath;
    EXPECT_NE(r.pathOf(RoutedPeer::ip()).problem.find("no route"), std::string::npos) << r.pathOf(RoutedPeer::ip()).problem;
    EXPECT_TRUE(programmed(near)) << routes() << neighs();
    EXPECT_EQ(r.stats().lastError, "") << "a peer without a route is not the pass's failure";
    far.routeVia();
    ASSERT_TRUE(waitFor([&] { return r.stats().noPath == 0 && r.hasRoute(RoutedPeer::ip()) && r.hasNeighbour(RoutedPeer::ip()); }, 5s));
    EXPECT_TRUE(contains(routes(), viaRouter)) << routes();
}
