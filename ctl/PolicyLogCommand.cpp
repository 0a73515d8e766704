#include "ctl/PolicyLogCommand.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "base/UnixJsonRequest.hpp"

namespace kovs::ctl {
namespace {

std::atomic<bool> interrupted{false};
void onInterrupt(int) { interrupted = true; }

std::string endpoint(const nlohmann::json& e, const char* address, const char* pod) {
    const auto p = e.value(pod, "");
    return p.empty() ? e.value(address, "?") : fmt::format("{} ({})", e.value(address, "?"), p);
}

std::string line(const nlohmann::json& e) {
    const auto rule = e.value("rule", "");
    const auto by = rule.empty() ? fmt::format("{} {}: isolated by {}, no rule allowed it", e.value("direction", "?"), e.value("tier", "?"),
                                               e.value("policy", "?"))
                                 : fmt::format("{} {} {} rule {}", e.value("direction", "?"), e.value("tier", "?"), e.value("policy", "?"), rule);
    const auto packets = e.value("packets", 1);
    return fmt::format("{}  {:<5} {:<4} {} -> {}  {}{}\n", e.value("time", "?"), e.value("verdict", "?"), e.value("protocol", "?"),
                       endpoint(e, "source", "sourcePod"), endpoint(e, "destination", "destinationPod"), by,
                       packets > 1 ? fmt::format(" ({} packets)", packets) : "");
}

// false once stdout is gone (a closed pipe).
bool print(const nlohmann::json& reply, bool json) {
    for (const auto& e : reply.value("entries", nlohmann::json::array())) {
        const auto text = json ? e.dump() + "\n" : line(e);
        if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) return false;
    }
    return std::fflush(stdout) == 0;
}

}  // namespace

int policyLog(const std::string& socket, bool follow, bool json) {
    // A closed pipe is an error of fwrite (EPIPE), not a signal that kills us.
    ::signal(SIGPIPE, SIG_IGN);
    struct sigaction sa {};
    sa.sa_handler = onInterrupt;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    uint64_t after = 0;
    auto reply = unixJsonRequest(socket, {{"command", "policy-log"}, {"after", after}});
    if (!print(reply, json)) return 0;
    after = reply.value("last", uint64_t(0));
    while (follow && !interrupted) {
        for (int i = 0; i < 10 && !interrupted; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (interrupted) break;
        try {
            reply = unixJsonRequest(socket, {{"command", "policy-log"}, {"after", after}});
        } catch (const std::exception&) {
            if (interrupted) break;  // Ctrl-C while it waited for the agent
            throw;
        }
        // Entries that left the ring before we asked: say so, once.
        const auto first = reply.value("first", uint64_t(0));
        if (after > 0 && first > after + 1 && !json) std::fprintf(stdout, "... %llu entries not shown (the agent keeps the last ones only)\n",
                                                                   static_cast<unsigned long long>(first - after - 1));
        if (!print(reply, json)) return 0;
        after = reply.value("last", after);
    }
    return 0;
}

}  // namespace kovs::ctl
