// The agent's local status socket (kovsctl, kovs-cni's port-ready): one JSON
// request per connection, root only, answers now or later.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/StatusServer.hpp"
#include "base/Error.hpp"
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
