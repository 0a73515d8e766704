// kovs-agent: the per-node agent. See docs/architecture.md.
#include <malloc.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <functional>

#include "agent/Agent.hpp"
#include "agent/Config.hpp"
#include "agent/NodeCleanup.hpp"
#include "agent/OvsDaemons.hpp"
#include "agent/TerminationSignals.hpp"
#include "base/Error.hpp"
#include "base/Log.hpp"

namespace {

// kubelet's grace period is 30 s; a DaemonSet rollout waits for every pod,
// so the agent ends within 2 s of SIGTERM wherever it is (TerminationSignals).
constexpr std::chrono::milliseconds kAgentCutShort{1500};
// The ovs container's stop hands the uplink back and stops both daemons,
// which must not be cut short; well inside the grace period all the same.
constexpr std::chrono::milliseconds kOvsDaemonsCutShort{25000};

// Runs `start`, then the loop until a signal. A start that failed because a
// signal stopped the loop (its waits give up at once) is a clean stop.
template <typename Start>
int runUntilSignal(kovs::EventLoop& loop, Start start) {
    try {
        start();
    } catch (const std::exception& e) {
        if (!loop.stopped()) throw;
        spdlog::info("stopped during start-up (the step under way gave up: {})", e.what());
        return 0;
    }
    loop.run();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // One malloc arena for every thread, set before any thread starts. The
    // agent's other threads (the Kubernetes watch, the HTTP server, the
    // signal wait) idle nearly always, and an arena of their own keeps pages
    // of what they once held: the peer source's, after a NodeList, 0.3-0.4
    // MiB (docs/benchmarks.md).
    mallopt(M_ARENA_MAX, 1);
    CLI::App app{"kovs-agent: keeps Open vSwitch's userspace datapath working on this node"};
    std::string configPath, logLevel = "info", logFile;
    bool once = false, cleanup = false, ovsDaemons = false;
    app.add_option("-c,--config", configPath, "agent configuration (YAML, see docs/configuration.md)")->required();
    app.add_option("--log-level", logLevel, "trace, debug, info, warn or error");
    app.add_option("--log-file", logFile, "log here instead of stderr");
    auto* onceOpt = app.add_flag("--once", once, "reconcile once and exit; exit 0 only if the node converged");
    auto* cleanupOpt = app.add_flag("--cleanup", cleanup, "remove what kovs created on this node and exit");
    app.add_flag("--ovs-daemons", ovsDaemons,
                 "run only ovsdb-server and ovs-vswitchd (the DaemonSet's ovs container); when stopped, hand the node "
                 "addresses back to the uplink interface, then stop them")
        ->excludes(onceOpt)
        ->excludes(cleanupOpt);
    CLI11_PARSE(app, argc, argv);

    try {
        kovs::setupLogging(logLevel, logFile);
        auto config = kovs::agent::loadConfig(configPath);
        signal(SIGPIPE, SIG_IGN);

        kovs::EventLoop loop;
        // Before any other thread exists (it blocks SIGTERM/SIGINT for all).
        kovs::agent::TerminationSignals signals(loop, ovsDaemons ? kOvsDaemonsCutShort : kAgentCutShort);

        if (ovsDaemons) {
            kovs::agent::OvsDaemons daemons(loop, std::move(config));
            int rc = runUntilSignal(loop, [&] { daemons.start(); });
            daemons.stop();
            return rc;
        }
        if (cleanup) {
            kovs::agent::resolveUplinkMtu(config);
            kovs::agent::cleanupNode(loop, config);
            return 0;
        }
        kovs::agent::Agent agent(loop, std::move(config));
        if (once) return agent.runOnce() ? 0 : 1;
        // glibc hands freed memory back to the kernel by itself only from the
        // top of the heap; what a burst of work frees below live data (a
        // NodeList, the reconciles of 100 new peers, a resync) stays resident
        // until malloc_trim. Measured: 0.4 MiB of the idle agent's RSS with
        // peers from the Kubernetes API (docs/benchmarks.md). A trim of this
        // heap takes microseconds.
        std::function<void()> trimHeap = [&] {
            malloc_trim(0);
            loop.after(std::chrono::seconds(10), trimHeap);
        };
        // The datapath stays as it is when the agent stops: an agent restart
        // never disturbs traffic.
        return runUntilSignal(loop, [&] {
            agent.start();
            loop.after(std::chrono::seconds(10), trimHeap);
        });
    } catch (const std::exception& e) {
        if (!logFile.empty()) spdlog::error("{}", e.what());
        std::fprintf(stderr, "kovs-agent: %s\n", e.what());
        return 1;
    }
}
