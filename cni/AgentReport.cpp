#include "cni/AgentReport.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include "base/UniqueFd.hpp"
#include "base/UnixJsonRequest.hpp"
#include "base/UnixAddress.hpp"

namespace kovs::cni {

nlohmann::json agentReport(const std::string& command, int code, std::chrono::nanoseconds took) {
    return {{"command", "cni-report"}, {"cni", command}, {"code", code},
            {"seconds", std::chrono::duration<double>(took).count()}};
}

bool sendAgentReport(const std::string& socketPath, const nlohmann::json& report) noexcept {
    try {
        if (socketPath.empty()) return false;
        auto addr = unixAddress(socketPath, "agent socket");
        UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (!fd) return false;
        // A unix stream connect never waits: it succeeds or fails (EAGAIN when
        // the agent's backlog is full, ENOENT/ECONNREFUSED when it is not there).
        if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) return false;
        std::string line = report.dump() + "\n";
        return ::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(line.size());
    } catch (...) {
        return false;
    }
}

PortFlows waitForPortFlows(const std::string& socketPath, const std::string& port, std::chrono::milliseconds timeout) noexcept {
    try {
        if (socketPath.empty()) return {false, "no agent socket configured"};
        // The agent answers by the deadline itself; the extra second is for
        // an agent that is wedged.
        auto reply = unixJsonRequest(socketPath, {{"command", "port-ready"}, {"port", port}, {"timeoutMs", timeout.count()}},
                                     static_cast<int>(timeout.count()) + 1000);
        return {reply.value("ready", false), reply.value("why", "")};
    } catch (const std::exception& e) {
        return {false, e.what()};
    }
}

}  // namespace kovs::cni
