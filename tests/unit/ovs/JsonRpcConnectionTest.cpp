// JsonRpcConnection against a scripted peer on a unix socket in a temp dir
// (no root, no OVS): echo, id matching, notifications, timeouts, garbage.
#include "ovs/JsonRpcConnection.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "base/Error.hpp"
#include "tests/support/TempDir.hpp"

using kovs::EventLoop;
using kovs::ovs::JsonRpcConnection;
using kovs::UniqueFd;
using nlohmann::json;

namespace {

class Peer {
public:
    Peer() {
        path_ = dir_ / "s.sock";
        listen_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strcpy(sa.sun_path, path_.c_str());
        EXPECT_EQ(::bind(listen_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
        EXPECT_EQ(::listen(listen_.get(), 4), 0);
    }
    void accept() { conn_ = UniqueFd(::accept(listen_.get(), nullptr, nullptr)); }
    void write(const std::string& s) { ASSERT_EQ(::write(conn_.get(), s.data(), s.size()), ssize_t(s.size())); }
    std::string readSome() {
        char buf[4096];
        ssize_t n = ::read(conn_.get(), buf, sizeof buf);
        return n > 0 ? std::string(buf, size_t(n)) : "";
    }
    void hangup() { conn_.reset(); }
    const std::string& path() const { return path_; }

private:
    kovs::test::TempDir dir_{"kovs-rpc"};
    std::string path_;
    UniqueFd listen_, conn_;
};

// A TCP socket bound to a free loopback port, listening with `backlog`
// unless that is negative; `remote` is its tcp:127.0.0.1:PORT.
struct LoopbackSocket {
    UniqueFd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    sockaddr_in addr{};
    std::string remote;
    explicit LoopbackSocket(int backlog) {
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        if (backlog >= 0) {
            EXPECT_EQ(::listen(fd.get(), backlog), 0);
        }
        socklen_t len = sizeof addr;
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
        remote = "tcp:127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    }
};

}  // namespace

TEST(JsonRpcConnection, RepliesMatchedByIdEvenOutOfOrderAndSplit) {
    Peer peer;
    EventLoop loop;
    JsonRpcConnection c(loop, "unix:" + peer.path());
    peer.accept();
    std::vector<std::string> got;
    c.request("a", json::array(), [&](const json& r) { got.push_back("a=" + r.dump()); }, [](const std::string&) {});
    c.request("b", json::array(), [&](const json& r) { got.push_back("b=" + r.dump()); }, [](const std::string&) {});
    auto sent = peer.readSome();
    EXPECT_NE(sent.find(R"("method":"a")"), std::string::npos) << sent;
    // Reply to 2 first, then 1, split in the middle of a string with a brace.
    std::string replies = R"({"id":2,"result":"x}","error":null}{"id":1,"result":[1],"error":null})";
    peer.write(replies.substr(0, 15));
    loop.runUntil([&] { return false; }, std::chrono::milliseconds(20));
    peer.write(replies.substr(15));
    ASSERT_TRUE(loop.runUntil([&] { return got.size() == 2; }, std::chrono::seconds(5)));
    EXPECT_EQ(got, (std::vector<std::string>{R"(b="x}")", "a=[1]"}));
    EXPECT_EQ(c.pendingRequests(), 0u);
}

TEST(JsonRpcConnection, AnswersEchoAndDispatchesNotifications) {
    Peer peer;
    EventLoop loop;
    JsonRpcConnection c(loop, peer.path());
    peer.accept();
    std::string method;
    json params;
    c.setNotificationHandler([&](const std::string& m, const json& p) {
        method = m;
        params = p;
    });
    peer.write(R"({"method":"echo","params":["hi"],"id":"echo"}{"method":"update2","params":["kovs",{}],"id":null})");
    ASSERT_TRUE(loop.runUntil([&] { return !method.empty(); }, std::chrono::seconds(5)));
    EXPECT_EQ(method, "update2");
    EXPECT_EQ(params, json::parse(R"(["kovs",{}])"));
    EXPECT_EQ(json::parse(peer.readSome()), json::parse(R"({"id":"echo","result":["hi"],"error":null})"));
}

TEST(JsonRpcConnection, ErrorRepliesTimeoutsAndHangup) {
    Peer peer;
    EventLoop loop;
    JsonRpcConnection c(loop, peer.path());
    peer.accept();
    std::vector<std::string> errors;
    auto onErr = [&](const std::string& e) { errors.push_back(e); };
    c.request("bad", json::array(), [](const json&) {}, onErr);
    c.request("slow", json::array(), [](const json&) {}, onErr, std::chrono::milliseconds(50));
    peer.write(R"({"id":1,"result":null,"error":{"error":"unknown method","details":"bad"}})");
    ASSERT_TRUE(loop.runUntil([&] { return errors.size() == 2; }, std::chrono::seconds(5)));
    EXPECT_EQ(errors[0], "unknown method: bad");
    EXPECT_EQ(errors[1], "timed out");
    EXPECT_THROW(c.call("slow", json::array(), std::chrono::milliseconds(30)), kovs::Error);

    std::string closed;
    c.setCloseHandler([&](const std::string& why) { closed = why; });
    c.request("pending", json::array(), [](const json&) {}, onErr);
    peer.hangup();
    ASSERT_TRUE(loop.runUntil([&] { return !closed.empty(); }, std::chrono::seconds(5)));
    // Unread requests in the peer's buffer turn its close into a reset.
    EXPECT_TRUE(closed == "peer closed the connection" || closed == "recv: Connection reset by peer") << closed;
    EXPECT_FALSE(c.isOpen());
    EXPECT_EQ(errors.back(), "connection to " + peer.path() + " closed: " + closed);
}

TEST(JsonRpcConnection, GarbageClosesTheConnectionWithTheReason) {
    Peer peer;
    EventLoop loop;
    JsonRpcConnection c(loop, peer.path());
    peer.accept();
    std::string closed;
    c.setCloseHandler([&](const std::string& why) { closed = why; });
    peer.write("{} hello");
    ASSERT_TRUE(loop.runUntil([&] { return !closed.empty(); }, std::chrono::seconds(5)));
    EXPECT_NE(closed.find("expected '{' or '['"), std::string::npos) << closed;
}

TEST(JsonRpcConnection, SpeaksOverTcp) {
    LoopbackSocket l(1);
    EventLoop loop;
    JsonRpcConnection c(loop, l.remote);
    UniqueFd peer(::accept(l.fd.get(), nullptr, nullptr));
    std::string reply = R"({"id":1,"result":{"ok":true},"error":null})";
    ASSERT_EQ(::write(peer.get(), reply.data(), reply.size()), ssize_t(reply.size()));
    EXPECT_EQ(c.call("get_schema", json::array({"x"})), json::parse(R"({"ok":true})"));
}

TEST(JsonRpcConnection, BadRemotesAreClearErrors) {
    EventLoop loop;
    try {
        JsonRpcConnection c(loop, "unix:/nonexistent/kovs.sock");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "connect /nonexistent/kovs.sock: No such file or directory");
    }
    EXPECT_THROW(JsonRpcConnection(loop, "ssl:1.2.3.4:6640"), kovs::Error);
    EXPECT_THROW(JsonRpcConnection(loop, "tcp:nohostport"), kovs::Error);
    // A host name is refused rather than looked up: the lookup would block the loop.
    try {
        JsonRpcConnection c(loop, "tcp:ovsdb.example:6640");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "connect tcp:ovsdb.example:6640: 'ovsdb.example' is not an IP address (host names are "
                               "not looked up: that would block the agent)");
    }
}

namespace {

// A loopback listener that never accepts, its queue already full: the kernel
// drops further SYNs, so a connect to it stays in SYN_SENT, like one to an
// unreachable host (no root, no netns needed).
class FullListener {
public:
    FullListener() {
        for (int i = 0; i < 3; ++i) {
            fillers_.emplace_back(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
            ::connect(fillers_.back().get(), reinterpret_cast<sockaddr*>(&listen_.addr), sizeof listen_.addr);
        }
    }
    const std::string& remote() const { return listen_.remote; }

private:
    LoopbackSocket listen_{0};
    std::vector<UniqueFd> fillers_;
};

}  // namespace

TEST(JsonRpcConnection, AConnectThatHangsTimesOutWithoutBlockingTheLoop) {
    FullListener server;
    EventLoop loop;
    JsonRpcConnection c(loop, server.remote(), std::chrono::milliseconds(300));  // returns at once
    EXPECT_TRUE(c.isOpen());
    EXPECT_FALSE(c.isConnected());
    std::string requestError, closed;
    c.request("get_schema", json::array(), [](const json&) {}, [&](const std::string& e) { requestError = e; },
              std::chrono::seconds(30));
    c.setCloseHandler([&](const std::string& why) { closed = why; });
    // A timer on the same loop fires while the connect is under way.
    bool timerFired = false;
    loop.after(std::chrono::milliseconds(1), [&] { timerFired = closed.empty(); });
    ASSERT_TRUE(loop.runUntil([&] { return !closed.empty(); }, std::chrono::seconds(30)));
    EXPECT_TRUE(timerFired) << "the timer did not fire before the connect gave up";
    EXPECT_EQ(closed, "connect " + server.remote() + ": timed out after 300 ms");
    EXPECT_EQ(requestError, "connection to " + server.remote() + " closed: " + closed);
    EXPECT_FALSE(c.isOpen());
}

TEST(JsonRpcConnection, ARefusedTcpConnectIsReportedOnTheLoop) {
    // A port nobody listens on: bind one, read its number, close it.
    std::string remote = LoopbackSocket(-1).remote;
    EventLoop loop;
    std::string failure;
    try {
        JsonRpcConnection c(loop, remote);
        c.setCloseHandler([&](const std::string& why) { failure = why; });
        loop.runUntil([&] { return !failure.empty(); }, std::chrono::seconds(30));
    } catch (const kovs::Error& e) {
        failure = e.what();  // the kernel may refuse a loopback connect at once
    }
    EXPECT_EQ(failure, "connect " + remote + ": Connection refused");
}
