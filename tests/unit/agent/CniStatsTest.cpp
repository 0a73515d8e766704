// What kovs-cni reports to the agent (one datagram per command on the status
// socket) and how the agent counts it into its metrics.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "agent/CniStats.hpp"
#include "agent/StatusServer.hpp"
#include "base/Error.hpp"
#include "base/Metrics.hpp"
#include "cni/AgentReport.hpp"
#include "tests/support/Poll.hpp"
#include "tests/unit/agent/ServerTestSupport.hpp"

using namespace kovs;
using kovs::test::LoopThread;
using kovs::test::TempSocket;

TEST(CniStats, CountsReportsByCommandAndCode) {
    agent::CniStats stats;
    MetricsText empty;
    stats.metrics(empty);
    EXPECT_NE(empty.str().find("kovs_cni_errors_total{command=\"ADD\"} 0\n"), std::string::npos) << empty.str();

    stats.record(cni::agentReport("ADD", 0, std::chrono::milliseconds(12)));
    stats.record(cni::agentReport("ADD", 0, std::chrono::milliseconds(3)));
    stats.record(cni::agentReport("ADD", 11, std::chrono::milliseconds(2)));
    stats.record(cni::agentReport("DEL", 0, std::chrono::milliseconds(30)));
    EXPECT_EQ(stats.total(), 4u);
    MetricsText m;
    stats.metrics(m);
    auto t = m.str();
    EXPECT_NE(t.find("kovs_cni_requests_total{code=\"0\",command=\"ADD\"} 2\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_cni_requests_total{code=\"11\",command=\"ADD\"} 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_cni_errors_total{command=\"ADD\"} 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_cni_errors_total{command=\"DEL\"} 0\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_cni_add_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_cni_add_seconds_count 2\n"), std::string::npos) << t;
}

TEST(CniStats, RejectsMalformedReportsWithoutCountingThem) {
    agent::CniStats stats;
    for (auto bad : {R"({"command":"cni-report","cni":"VERSION","code":0,"seconds":0.1})",
                     R"({"command":"cni-report","cni":"ADD","code":"0","seconds":0.1})",
                     R"({"command":"cni-report","cni":"ADD","code":-1,"seconds":0.1})",
                     R"({"command":"cni-report","cni":"ADD","code":0,"seconds":-2})",
                     R"({"command":"cni-report","cni":"add","code":0,"seconds":0.1})",
                     R"({"command":"cni-report","code":0})"}) {
        EXPECT_THROW(stats.record(nlohmann::json::parse(bad)), Error) << bad;
    }
    EXPECT_EQ(stats.total(), 0u);
}

TEST(AgentReport, ReachesTheStatusSocketAndNeverWaitsForTheAgent) {
    TempSocket socket;
    const auto& path = socket.path;
    {
        LoopThread lt;
        agent::CniStats stats;
        std::atomic<uint64_t> recorded{0};
        agent::StatusServer server(lt.loop, path, [&](const nlohmann::json& req) {
            stats.record(req);
            recorded = stats.total();
            return nlohmann::json{{"ok", true}};
        });
        lt.start();
        EXPECT_TRUE(cni::sendAgentReport(path, cni::agentReport("ADD", 0, std::chrono::milliseconds(4))));
        EXPECT_TRUE(test::pollUntil([&] { return recorded == 1; }));
        // A stopped agent (loop not running): the kernel takes the report, the
        // plugin does not wait for an answer.
        lt.join();
        EXPECT_TRUE(cni::sendAgentReport(path, cni::agentReport("ADD", 0, std::chrono::milliseconds(4))));
        EXPECT_EQ(recorded, 1u);
    }
    // No agent at all.
    EXPECT_FALSE(cni::sendAgentReport(path, cni::agentReport("ADD", 0, std::chrono::milliseconds(4))));
    EXPECT_FALSE(cni::sendAgentReport("/tmp/kovs-no-such-dir/agent.sock", cni::agentReport("DEL", 0, {})));
    EXPECT_FALSE(cni::sendAgentReport("", cni::agentReport("DEL", 0, {})));
    std::filesystem::remove_all(std::filesystem::path(path).parent_path().parent_path());
}
