#pragma once
// kovs-agent as a process, the way the DaemonSet runs it (the binary meson
// passes in KOVS_AGENT): started with a config, waited for until it reports
// itself ready on its status socket (or exits), stopped with SIGTERM, which
// leaves the datapath as it is. Its output goes to a log file.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "base/UnixJsonRequest.hpp"
#include "tests/support/Poll.hpp"

extern "C" char** environ;

namespace kovs::test {

inline std::string agentBinary() {
    const char* p = std::getenv("KOVS_AGENT");
    return p ? p : "agent/kovs-agent";
}

class AgentProcess {
public:
    AgentProcess(const std::string& config, std::string statusSocket, std::string log)
        : socket_(std::move(statusSocket)), log_(std::move(log)) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        posix_spawnattr_t attr;
        kovs::initSpawnAttrs(attr);
        std::vector<std::string> args{agentBinary(), "--config", config, "--log-level", "debug"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        int rc = posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) throw kovs::SystemError("spawn " + args[0], rc);
    }
    ~AgentProcess() { stop(); }
    AgentProcess(const AgentProcess&) = delete;
    AgentProcess& operator=(const AgentProcess&) = delete;

    // "" once the agent says it is ready; else why not (its exit and log).
    std::string waitReady(std::chrono::seconds timeout = std::chrono::seconds(60)) {
        std::string last = "no answer on " + socket_;
        bool ready = kovs::test::pollUntil(
            [&] {
                if (exited()) return true;
                try {
                    auto s = kovs::unixJsonRequest(socket_, {{"command", "status"}}, 1000);
                    if (s.value("ready", false)) return true;
                    last = s.value("notReadyReason", "");
                } catch (const std::exception& e) {
                    last = e.what();
                }
                return false;
            },
            timeout, std::chrono::milliseconds(50));
        if (exited()) return "kovs-agent exited with status " + std::to_string(status_) + ":\n" + log();
        if (!ready) return "kovs-agent not ready: " + last + "\n" + log();
        return "";
    }

    void stop() {
        if (pid_ <= 0) return;
        if (!exited()) {
            ::kill(pid_, SIGTERM);
            ::waitpid(pid_, &status_, 0);
        }
        pid_ = -1;
    }

    std::string log() const {
        std::ifstream in(log_);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

private:
    bool exited() {
        if (pid_ <= 0) return true;
        if (status_ != -1) return true;
        int st = 0;
        if (::waitpid(pid_, &st, WNOHANG) == pid_) {
            status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            return true;
        }
        return false;
    }

    pid_t pid_ = -1;
    int status_ = -1;
    std::string socket_;
    std::string log_;
};

}  // namespace kovs::test
