// The status socket's commands as the agent answers them: what kovsctl and
// kovs-cni send, and the errors a malformed request gets (StatusServer turns a
// throw into {"error": what}).
#include "agent/ControlCommands.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "base/Error.hpp"
#include "cni/AgentReport.hpp"

using kovs::agent::CniStats;
using kovs::agent::controlCommands;
using kovs::Error;
using nlohmann::json;

namespace {

// Runs one request through the handler; the reply, if it came before return.
std::optional<json> ask(const kovs::agent::StatusServer::Handler& h, const json& request) {
    std::optional<json> answer;
    h(request, [&](const json& a) { answer = a; });
    return answer;
}

std::string errorOf(const kovs::agent::StatusServer::Handler& h, const json& request) {
    try {
        ask(h, request);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(ControlCommands, StatusIsTheAgentsStatus) {
    CniStats cni;
    auto h = controlCommands({[] { return json{{"node", "n1"}}; }, cni});
    EXPECT_EQ(ask(h, {{"command", "status"}}), (json{{"node", "n1"}}));
}

TEST(ControlCommands, CniReportIsCounted) {
    CniStats cni;
    auto h = controlCommands({[] { return json::object(); }, cni});
    auto report = kovs::cni::agentReport("ADD", 0, std::chrono::milliseconds(5));
    EXPECT_EQ(ask(h, report), (json{{"ok", true}}));
    EXPECT_EQ(cni.total(), 1u);
}

TEST(ControlCommands, PortReadyInCompanionModeHasNoFlowsToWaitFor) {
    CniStats cni;
    auto h = controlCommands({[] { return json::object(); }, cni, nullptr});
    auto a = ask(h, {{"command", "port-ready"}, {"port", "kovs1a2b3c4d"}, {"timeoutMs", 3000}});
    ASSERT_TRUE(a.has_value()) << "answered at once";
    EXPECT_EQ((*a)["ready"], true);
    EXPECT_NE((*a)["why"].get<std::string>().find("companion"), std::string::npos) << a->dump();
}

TEST(ControlCommands, RejectsMalformedRequestsNamingTheField) {
    CniStats cni;
    auto h = controlCommands({[] { return json::object(); }, cni});
    EXPECT_NE(errorOf(h, {{"command", "reboot"}}).find("unknown command 'reboot' (known: status"), std::string::npos);
    EXPECT_NE(errorOf(h, json::object()).find("unknown command ''"), std::string::npos);
    // The kernel's interface-name rule, as everywhere else (base/InterfaceName).
    for (const char* bad : {"", "a/b", "a b", "a:b", "sixteen-chars-xx", ".."}) {
        EXPECT_NE(errorOf(h, {{"command", "port-ready"}, {"port", bad}}).find("port-ready: 'port' must be an interface name"),
                  std::string::npos)
            << bad;
    }
    EXPECT_NE(errorOf(h, {{"command", "port-ready"}, {"port", "kovs1"}, {"timeoutMs", 30001}}).find("'timeoutMs' must be 0-30000"),
              std::string::npos);
    EXPECT_NE(errorOf(h, {{"command", "port-ready"}, {"port", "kovs1"}, {"timeoutMs", -1}}).find("'timeoutMs'"), std::string::npos);
    EXPECT_EQ(cni.total(), 0u);
}

TEST(ControlCommands, PolicyLogNeedsTheLoggerAndASequenceNumber) {
    CniStats cni;
    auto none = controlCommands({[] { return json::object(); }, cni});
    EXPECT_NE(errorOf(none, {{"command", "policy-log"}}).find("NetworkPolicy is not enforced on this node"), std::string::npos);
    kovs::EventLoop loop;
    kovs::flows::PolicyLogger logger(loop, {[] { return std::make_shared<const std::map<uint64_t, kovs::flows::LoggedDecision>>(); },
                                            [](const kovs::flows::PolicyLogging&) {}},
                                     {.socketPath = "/nonexistent"}, nullptr);
    auto h = controlCommands({[] { return json::object(); }, cni, nullptr, nullptr, nullptr, "n1", &logger});
    auto a = ask(h, {{"command", "policy-log"}, {"after", 0}});
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ((*a)["entries"], json::array());
    EXPECT_EQ((*a)["last"], 0);
    EXPECT_NE(errorOf(h, {{"command", "policy-log"}, {"after", -1}}).find("'after' must be a sequence number"), std::string::npos);
    EXPECT_NE(errorOf(h, {{"command", "policy-log"}, {"after", "x"}}).find("'after' must be a sequence number"), std::string::npos);
    EXPECT_NE(errorOf(h, {{"command", "policy-log"}, {"limit", 0}}).find("'limit' must be 1-100000"), std::string::npos);
}
