// The agent's local status socket (kovsctl, kovs-cni's port-ready): one JSON
// request per connection, root only, answers now or later.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/StatusServer.hpp"
#include "base/Error.hpp"
#include "base/UniqueFd.hpp"
#include "base/UnixAddress.hpp"
#include "base/UnixJsonRequest.hpp"
#include "tests/support/Poll.hpp"
#include "tests/unit/agent/ServerTestSupport.hpp"

using namespace kovs;
using kovs::test::LoopThread;
using kovs::test::TempSocket;

TEST(StatusServer, AnswersOneRequestPerConnectionOnARootOnlySocket) {
    TempSocket socket;
    const auto& path = socket.path;
    LoopThread lt;
    int handled = 0;
    agent::StatusServer server(lt.loop, path, [&](const nlohmann::json& req) {
        ++handled;
        if (req.value("command", "") != "status") throw Error("unknown command '" + req.value("command", "") + "'");
        return nlohmann::json{{"node", "n1"}};
    });
    lt.start();
    struct stat st{};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(unixJsonRequest(path, {{"command", "status"}})["node"], "n1");
    try {
        unixJsonRequest(path, {{"command", "bogus"}});
        FAIL() << "an unknown command was answered";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unknown command 'bogus'"), std::string::npos) << e.what();
    }
    EXPECT_EQ(handled, 2);
    lt.join();
    std::filesystem::remove_all(std::filesystem::path(path).parent_path().parent_path());
}

TEST(StatusServer, ClientNamesTheSocketWhenNoAgentListens) {
    try {
        unixJsonRequest("/tmp/kovs-no-such-dir/agent.sock", {{"command", "status"}});
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/tmp/kovs-no-such-dir/agent.sock (is kovs-agent running?)"), std::string::npos)
            << e.what();
    }
}

// A handler may answer later (port-ready waits for flows); a client that left
// meanwhile costs nothing, and its fd number reused by a new client does not
// get the old answer.
TEST(StatusServer, AnswersLaterAndDropsAnswersForClientsThatLeft) {
    TempSocket socket;
    const auto& path = socket.path;
    LoopThread lt;
    std::vector<agent::StatusServer::Reply> pending;
    std::mutex m;
    agent::StatusServer server(lt.loop, path, agent::StatusServer::Handler([&](const nlohmann::json& req, const agent::StatusServer::Reply& reply) {
        if (req.value("command", "") == "now") return reply({{"now", true}});
        std::lock_guard lock(m);
        pending.push_back(reply);
    }));
    lt.start();
    std::thread later([&] {
        EXPECT_TRUE(test::pollUntil([&] { std::lock_guard lock(m); return pending.size() == 1; }));
        lt.loop.post([&] { pending[0]({{"later", true}}); });
    });
    EXPECT_EQ(unixJsonRequest(path, {{"command", "wait"}}, 5000)["later"], true);
    later.join();
    // This client gives up before the answer comes; the next one is answered at once.
    EXPECT_THROW(unixJsonRequest(path, {{"command", "wait"}}, 100), Error);
    EXPECT_EQ(unixJsonRequest(path, {{"command", "now"}})["now"], true);
    lt.loop.post([&] { pending[1]({{"late", true}}); });  // goes nowhere, harms nothing
    EXPECT_EQ(unixJsonRequest(path, {{"command", "now"}})["now"], true);
    lt.join();
    std::filesystem::remove_all(std::filesystem::path(path).parent_path().parent_path());
}

namespace {
// A raw client that connects and sends `bytes` without a newline.
kovs::UniqueFd idleClient(const std::string& path, const std::string& bytes = "{\"command\"") {
    kovs::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    auto addr = kovs::unixAddress(path, "test");
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) throw kovs::Error("connect " + path);
    if (!bytes.empty() && ::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) < 0) throw kovs::Error("send");
    return fd;
}
// Whether the server closed the connection within `ms`: EOF, or a reset
// when it closed before reading what this client sent.
bool closedWithin(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return false;
    char c;
    ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}
}  // namespace

// Clients that never finish their request cannot hold the socket: beyond
// kMaxClients the oldest is closed, and each is closed kRequestTimeout after
// it connected. Before, every one held an fd for ever.
TEST(StatusServer, IdleClientsAreCappedAndTimedOut) {
    TempSocket socket;
    LoopThread lt;
    agent::StatusServer server(lt.loop, socket.path, [&](const nlohmann::json&) { return nlohmann::json{{"ok", true}}; });
    lt.start();
    std::vector<kovs::UniqueFd> idle;
    for (size_t i = 0; i < agent::StatusServer::kMaxClients + 8; ++i) idle.push_back(idleClient(socket.path));
    EXPECT_EQ(unixJsonRequest(socket.path, {{"command", "status"}}, 2000)["ok"], true)
        << "a real request is answered with the socket full of idle clients";
    EXPECT_TRUE(closedWithin(idle[0].get(), 1000)) << "the oldest idle client was not closed to make room";
    size_t open = 0;
    std::atomic<bool> counted{false};
    lt.loop.post([&] {
        open = server.clients();
        counted = true;
    });
    ASSERT_TRUE(test::pollUntil([&] { return counted.load(); }));
    EXPECT_LE(open, agent::StatusServer::kMaxClients);
    auto timeoutMs = std::chrono::duration_cast<std::chrono::milliseconds>(agent::StatusServer::kRequestTimeout).count();
    EXPECT_TRUE(closedWithin(idle.back().get(), static_cast<int>(timeoutMs) + 3000))
        << "an idle client was not closed after the request timeout";
    lt.join();
}

// A reply larger than the socket buffer arrives whole; before, one
// non-blocking send cut it off at what the buffer took (a few hundred KiB).
TEST(StatusServer, LargeRepliesArriveWhole) {
    TempSocket socket;
    LoopThread lt;
    std::string big(3u << 20, 'x');
    agent::StatusServer server(lt.loop, socket.path, [&](const nlohmann::json&) { return nlohmann::json{{"big", big}}; });
    lt.start();
    auto r = unixJsonRequest(socket.path, {{"command", "status"}}, 5000);
    EXPECT_EQ(r["big"].get<std::string>().size(), big.size());
    lt.join();
}
