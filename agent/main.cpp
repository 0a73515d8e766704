// kovs-agent: the per-node agent. See docs/architecture.md.
#include <malloc.h>
#include <signal.h>
#include <sys/signalfd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "agent/Agent.hpp"
#include "agent/Config.hpp"
#include "base/Error.hpp"
#include "base/Log.hpp"

int main(int argc, char** argv) {
    // One malloc arena for every thread, set before any thread starts. The
    // agent's other threads (the Kubernetes watch, the HTTP server) idle
    // nearly always, and an arena of their own keeps pages of what they once
    // held: the peer source's, after a NodeList, 0.3-0.4 MiB (docs/benchmarks.md).
    mallopt(M_ARENA_MAX, 1);
    CLI::App app{"kovs-agent: keeps Open vSwitch's userspace datapath working on this node"};
    std::string configPath, logLevel = "info", logFile;
    bool once = false, cleanup = false;
    app.add_option("-c,--config", configPath, "agent configuration (YAML, see docs/configuration.md)")->required();
    app.add_option("--log-level", logLevel, "trace, debug, info, warn or error");
    app.add_option("--log-file", logFile, "log here instead of stderr");
    app.add_flag("--once", once, "reconcile once and exit; exit 0 only if the node converged");
    app.add_flag("--cleanup", cleanup, "remove what kovs created on this node and exit");
    CLI11_PARSE(app, argc, argv);

    try {
        kovs::setupLogging(logLevel, logFile);
        auto config = kovs::loadConfig(configPath);

        // SIGTERM/SIGINT end the loop; the datapath stays as it is, so an agent
        // restart never disturbs traffic.
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        sigprocmask(SIG_BLOCK, &sigs, nullptr);
        signal(SIGPIPE, SIG_IGN);
        kovs::UniqueFd sigfd(::signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK));
        if (!sigfd) kovs::throwErrno("signalfd");

        kovs::EventLoop loop;
        kovs::Agent agent(loop, std::move(config));
        if (cleanup) {
            agent.cleanup();
            return 0;
        }
        if (once) return agent.runOnce() ? 0 : 1;

        loop.watch(sigfd.get(), EPOLLIN, [&](uint32_t) {
            signalfd_siginfo si;
            while (::read(sigfd.get(), &si, sizeof si) == sizeof si) {
                spdlog::info("signal {}: stopping, datapath left running", si.ssi_signo);
                loop.stop();
            }
        });
        agent.start();
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
        loop.after(std::chrono::seconds(10), trimHeap);
        loop.run();
        return 0;
    } catch (const std::exception& e) {
        if (!logFile.empty()) spdlog::error("{}", e.what());
        std::fprintf(stderr, "kovs-agent: %s\n", e.what());
        return 1;
    }
}
