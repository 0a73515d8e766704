#include "ovs/UnixctlClient.hpp"

#include <cstdlib>
#include <fstream>

#include "base/Error.hpp"

namespace kovs {

std::string UnixctlCommand::describe() const {
    std::string s = command;
    for (const auto& a : args) s += " " + a;
    return s;
}

std::string UnixctlClient::defaultRundir() {
    const char* env = std::getenv("OVS_RUNDIR");
    return env && *env ? env : "/var/run/openvswitch";
}

UnixctlClient::UnixctlClient(std::string rundir, std::string target, std::chrono::milliseconds timeout)
    : rundir_(std::move(rundir)), target_(std::move(target)), timeout_(timeout) {}

UnixctlClient::~UnixctlClient() = default;

pid_t UnixctlClient::readPidfile() const {
    std::ifstream f(pidfilePath());
    long pid = -1;
    if (!(f >> pid) || pid <= 0) return -1;
    return static_cast<pid_t>(pid);
}

bool UnixctlClient::targetRestarted() const {
    pid_t now = readPidfile();
    return pid_ > 0 && now != pid_;
}

void UnixctlClient::ensureConnected() {
    pid_t now = readPidfile();
    if (now <= 0) throw Error(target_ + ": no pid in " + pidfilePath() + " (is it running?)");
    if (conn_ && conn_->isOpen() && now == pid_) return;
    conn_.reset();
    auto path = rundir_ + "/" + target_ + "." + std::to_string(now) + ".ctl";
    conn_ = std::make_unique<JsonRpcConnection>(loop_, "unix:" + path);
    pid_t old = pid_;
    pid_ = now;
    if (old > 0 && old != now && onRestart_) onRestart_(old, now);
}

std::string UnixctlClient::call(const std::string& command, const std::vector<std::string>& args) {
    auto replies = pipeline({UnixctlCommand{command, args}});
    if (!replies[0].ok) throw Error(UnixctlCommand{command, args}.describe() + ": " + replies[0].text);
    return replies[0].text;
}

std::vector<UnixctlReply> UnixctlClient::pipeline(const std::vector<UnixctlCommand>& commands) {
    ensureConnected();
    auto replies = std::make_shared<std::vector<UnixctlReply>>(commands.size());
    auto done = std::make_shared<size_t>(0);
    for (size_t i = 0; i < commands.size(); ++i) {
        nlohmann::json params = commands[i].args;  // strings only, as unixctl requires
        conn_->request(
            commands[i].command, params,
            [replies, done, i](const nlohmann::json& r) {
                (*replies)[i] = {true, r.is_string() ? r.get<std::string>() : r.dump()};
                ++*done;
            },
            [replies, done, i](const std::string& e) {
                (*replies)[i] = {false, e};
                ++*done;
            },
            timeout_);
    }
    loop_.runUntil([&] { return *done == commands.size(); }, timeout_ + std::chrono::seconds(1));
    if (*done != commands.size())
        throw Error(target_ + ": " + std::to_string(commands.size() - *done) + " of " +
                    std::to_string(commands.size()) + " unixctl replies missing");
    // A closed connection (daemon died mid-call) is reopened on the next call.
    if (!conn_->isOpen()) conn_.reset();
    return std::move(*replies);
}

}  // namespace kovs
