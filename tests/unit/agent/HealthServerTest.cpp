// The agent's HTTP health endpoints (/healthz, /readyz, /metrics) over real
// sockets: what kubelet's probes get, also from bad, idle and slow clients.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "agent/HealthServer.hpp"
#include "base/Error.hpp"
#include "tests/unit/agent/ServerTestSupport.hpp"

using namespace kovs;
using kovs::test::LoopThread;

TEST(HealthServer, ServesProbesAndMetricsFromTheLoop) {
    LoopThread lt;
    std::string notReady = "OVSDB not connected";
    agent::HealthServer server(lt.loop, "127.0.0.1:0",
                        {[&] { return notReady; }, [] { return std::string("kovs_up 1\n"); }});
    lt.start();
    httplib::Client c("127.0.0.1", server.port());
    auto h = c.Get("/healthz");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
    auto r = c.Get("/readyz");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(r->body, "OVSDB not connected\n");
    lt.loop.post([&] { notReady.clear(); });
    r = c.Get("/readyz");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->body, "kovs_up 1\n");
    lt.join();
}

TEST(HealthServer, RejectsABadAddress) {
    EventLoop loop;
    EXPECT_THROW(agent::HealthServer(loop, "localhost", {}), Error);
    EXPECT_THROW(agent::HealthServer(loop, "127.0.0.1:99999", {}), Error);
    EXPECT_THROW(agent::HealthServer(loop, "no-such-host.invalid:9474", {}), Error);
    agent::HealthServer taken(loop, "127.0.0.1:0", {});
    try {
        agent::HealthServer(loop, "127.0.0.1:" + std::to_string(taken.port()), {});
        FAIL() << "bound a port already in use";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("Address already in use"), std::string::npos) << e.what();
    }
}

namespace {

int connectTo(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
}

// The status line of the answer on `fd` ("" when none came: closed, or the
// receive timed out); closes `fd`.
std::string statusLine(int fd) {
    std::string out;
    char buf[4096];
    while (out.find("\r\n") == std::string::npos) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out.substr(0, out.find("\r\n"));
}

// The status line of the answer to one raw request, over a fresh connection.
std::string exchange(int port, const std::string& request) {
    int fd = connectTo(port);
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    return statusLine(fd);
}

}  // namespace

TEST(HealthServer, AnswersBadRequestsWithTheRightStatus) {
    LoopThread lt;
    agent::HealthServer server(lt.loop, "127.0.0.1:0", {[] { return std::string(); }, [] { return std::string(); }});
    lt.start();
    EXPECT_EQ(exchange(server.port(), "GET /readyz?verbose HTTP/1.1\r\nHost: x\r\n\r\n"), "HTTP/1.1 200 OK");
    EXPECT_EQ(exchange(server.port(), "GET /nope HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 Not Found");
    EXPECT_EQ(exchange(server.port(), "POST /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 405 Method Not Allowed");
    EXPECT_EQ(exchange(server.port(), "hello\r\n\r\n"), "HTTP/1.1 400 Bad Request");
    EXPECT_EQ(exchange(server.port(), "GET /healthz HTTP/1.1\r\n"), "");  // closed before the head ended
    EXPECT_EQ(exchange(server.port(), "GET /healthz HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n"),
              "HTTP/1.1 400 Bad Request");
    // A client that connects and says nothing holds nobody up.
    int idle = connectTo(server.port());
    EXPECT_EQ(exchange(server.port(), "GET /healthz HTTP/1.1\r\n\r\n"), "HTTP/1.1 200 OK");
    ::close(idle);
    lt.join();
}

namespace {
// Sends one byte of a request every 200 ms, up to 40 bytes (8 s); returns
// how many went out before the server closed the connection.
int trickle(int fd) {
    std::string request = "GET /healthz HTTP/1.1\r\nX-Slow: " + std::string(20, 'a');
    for (int i = 0; i < 40; ++i) {
        char ignored;
        if (::recv(fd, &ignored, 1, MSG_DONTWAIT) == 0) return i;  // closed by the server
        if (::send(fd, &request[static_cast<size_t>(i)], 1, MSG_NOSIGNAL) != 1) return i;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return 40;
}
}  // namespace

// A client trickling its request byte by byte gets 2 s in all, not 2 s per
// byte: otherwise it holds the only serving thread, and the kubelet's
// liveness probes behind it, for as long as it likes.
TEST(HealthServer, ATricklingClientIsCutOffAndProbesGoOn) {
    LoopThread lt;
    agent::HealthServer server(lt.loop, "127.0.0.1:0", {[] { return std::string(); }, [] { return std::string(); }});
    lt.start();
    int fd = connectTo(server.port());
    int sent = trickle(fd);
    ::close(fd);
    EXPECT_LT(sent, 40) << "the server kept a trickling client for all 8 s";
    EXPECT_EQ(exchange(server.port(), "GET /healthz HTTP/1.1\r\n\r\n"), "HTTP/1.1 200 OK");
    lt.join();
}

namespace {
// GET path as kubelet's prober sends it, with its timeoutSeconds (3 s in
// kind/manifests/kovs.yaml): the status line, or "" when no answer came in time.
std::string probe(int port, const std::string& path) {
    int fd = connectTo(port);
    timeval tv{3, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kube-probe/1.27\r\n\r\n";
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    return statusLine(fd);
}
}  // namespace

// Idle connections to the metrics port (a port scanner, a stuck scraper, a
// few curl sessions left open) must not starve kubelet's probes: with one
// connection served at a time, 4 idle ones held /healthz for 8 s and the
// liveness probe failed (issue 15, item 4).
TEST(HealthServer, IdleConnectionsDoNotStarveTheProbes) {
    LoopThread lt;
    agent::HealthServer server(lt.loop, "127.0.0.1:0", {[] { return std::string(); }, [] { return std::string("kovs_up 1\n"); }});
    lt.start();
    std::vector<int> idle;
    for (int i = 0; i < 8; ++i) idle.push_back(connectTo(server.port()));
    EXPECT_EQ(probe(server.port(), "/healthz"), "HTTP/1.1 200 OK");
    EXPECT_EQ(probe(server.port(), "/readyz"), "HTTP/1.1 200 OK");
    for (int fd : idle) ::close(fd);
    lt.join();
}

// A flood larger than the server keeps open: the oldest silent connections
// make room, and a probe still gets its answer.
TEST(HealthServer, AFloodOfIdleConnectionsStillLeavesRoomForAProbe) {
    LoopThread lt;
    agent::HealthServer server(lt.loop, "127.0.0.1:0", {[] { return std::string(); }, [] { return std::string(); }});
    lt.start();
    std::vector<int> idle;
    for (int i = 0; i < 300; ++i) idle.push_back(connectTo(server.port()));
    EXPECT_EQ(probe(server.port(), "/healthz"), "HTTP/1.1 200 OK");
    for (int fd : idle) ::close(fd);
    lt.join();
}

// A wedged loop fails every probe with 503 after the loop's 2 s budget, each
// probe on its own budget: five at once all get their answer within
// kubelet's 3 s, where answers one after the other would take 10 s.
TEST(HealthServer, AWedgedLoopFailsEachProbeOnItsOwnBudget) {
    LoopThread lt;
    agent::HealthServer server(lt.loop, "127.0.0.1:0", {[] { return std::string(); }, [] { return std::string(); }});
    lt.start();
    std::atomic<bool> release{false};
    lt.loop.post([&] {
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
    std::vector<std::string> got(5);
    std::vector<std::thread> probes;
    for (size_t i = 0; i < got.size(); ++i) probes.emplace_back([&, i] { got[i] = probe(server.port(), "/healthz"); });
    for (auto& t : probes) t.join();
    release = true;
    for (const auto& g : got) EXPECT_EQ(g, "HTTP/1.1 503 Service Unavailable");
    EXPECT_EQ(probe(server.port(), "/healthz"), "HTTP/1.1 200 OK") << "the loop is back";
    lt.join();
}

// Stopping the server (the agent exiting) does not wait for a slow client.
TEST(HealthServer, StopsWithoutWaitingForASlowClient) {
    LoopThread lt;
    lt.start();
    std::atomic<bool> trickleDone{false};
    std::thread client;
    {
        agent::HealthServer server(lt.loop, "127.0.0.1:0", {[] { return std::string(); }, [] { return std::string(); }});
        int fd = connectTo(server.port());
        client = std::thread([fd, &trickleDone] {
            trickle(fd);
            ::close(fd);
            trickleDone = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server is reading from it now
    }
    EXPECT_FALSE(trickleDone) << "the server's destructor waited for the client";
    client.join();
    lt.join();
}

// A handler that throws costs its answer (500), not the agent (std::terminate).
TEST(HealthServer, AHandlerThatThrowsGetsA500) {
    LoopThread lt;
    agent::HealthServer server(lt.loop, "127.0.0.1:0",
                        {[]() -> std::string { throw std::runtime_error("no memory"); }, {}});
    lt.start();
    EXPECT_EQ(exchange(server.port(), "GET /readyz HTTP/1.1\r\n\r\n"), "HTTP/1.1 500 Internal Server Error");
    EXPECT_EQ(exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 500 Internal Server Error");
    EXPECT_EQ(exchange(server.port(), "GET /healthz HTTP/1.1\r\n\r\n"), "HTTP/1.1 200 OK");
    lt.join();
}
