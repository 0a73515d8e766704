#include "ovs/UnixctlClient.hpp"

#include <cstdlib>
#include <optional>

#include "base/Error.hpp"

namespace kovs::ovs {

std::string UnixctlCommand::describe() const {
    std::string s = command;
    for (const auto& a : args) s += " " + a;
    return s;
}

bool UnixctlReplies::allOk() const {
    if (!unreachable.empty()) return false;
    for (const auto& r : replies) {
        if (!r.ok) return false;
    }
    return true;
}

std::string UnixctlClient::defaultRundir() {
    const char* env = std::getenv("OVS_RUNDIR");
    return env && *env ? env : "/var/run/openvswitch";
}

UnixctlClient::UnixctlClient(EventLoop& loop, std::string rundir, std::string target, std::chrono::milliseconds timeout)
    : loop_(loop),
      rundir_(std::move(rundir)),
      target_(std::move(target)),
      pidfile_(rundir_ + "/" + target_ + ".pid"),
      timeout_(timeout) {}

UnixctlClient::~UnixctlClient() { *alive_ = false; }

void UnixctlClient::ensureConnected() {
    // Not Pidfile::readLive: next to Antrea vswitchd runs in another pid
    // namespace, and the pid is only a file name here.
    auto now = pidfile_.read();
    if (!now) throw Error(target_ + ": no pid in " + pidfile_.path() + " (is it running?)");
    if (conn_ && conn_->isOpen() && *now == pid_) return;
    if (conn_ && conn_->isOpen()) {
        // Requests still pending on the old daemon fail with this reason,
        // from the loop rather than from inside this call.
        auto old = std::move(conn_);
        auto token = alive_;
        std::string why = target_ + " restarted (pid " + std::to_string(pid_) + " -> " + std::to_string(*now) + ")";
        loop_.post([old, token, why] {
            if (*token) old->close(why);
        });
    }
    conn_.reset();
    auto path = rundir_ + "/" + target_ + "." + std::to_string(*now) + ".ctl";
    conn_ = std::make_shared<JsonRpcConnection>(loop_, "unix:" + path, timeout_);
    pid_ = *now;
}

void UnixctlClient::pipeline(std::vector<UnixctlCommand> commands, Callback done) {
    struct Batch {
        UnixctlReplies result;
        size_t left = 0;
        Callback done;
    };
    auto batch = std::make_shared<Batch>();
    batch->result.replies.resize(commands.size());
    batch->left = commands.size();
    batch->done = std::move(done);
    auto token = alive_;
    std::string unreachable;
    try {
        if (!commands.empty()) ensureConnected();
    } catch (const Error& e) {
        unreachable = e.what();
    }
    if (commands.empty() || !unreachable.empty()) {
        for (auto& r : batch->result.replies) r = {false, unreachable};
        batch->result.unreachable = unreachable;
        loop_.post([batch, token] {
            if (*token) batch->done(std::move(batch->result));
        });
        return;
    }
    batch->result.pid = pid_;
    auto settle = [batch, token](size_t i, UnixctlReply reply) {
        batch->result.replies[i] = std::move(reply);
        if (--batch->left == 0 && *token) batch->done(std::move(batch->result));
    };
    for (size_t i = 0; i < commands.size(); ++i) {
        nlohmann::json params = commands[i].args;  // strings only, as unixctl requires
        conn_->request(
            commands[i].command, params,
            [settle, i](const nlohmann::json& r) { settle(i, {true, r.is_string() ? r.get<std::string>() : r.dump()}); },
            [settle, i](const std::string& e) { settle(i, {false, e}); }, timeout_);
    }
}

BlockingUnixctlClient::BlockingUnixctlClient(std::string rundir, std::string target, std::chrono::milliseconds timeout)
    : client_(loop_, std::move(rundir), std::move(target), timeout) {}

UnixctlReplies BlockingUnixctlClient::pipeline(std::vector<UnixctlCommand> commands) {
    std::optional<UnixctlReplies> out;
    client_.pipeline(std::move(commands), [&](UnixctlReplies r) { out = std::move(r); });
    // Every request has its own timeout; the loop's deadline is a backstop.
    loop_.runUntil([&] { return out.has_value(); }, client_.timeout() + std::chrono::seconds(1));
    if (!out) throw Error("unixctl: no replies within " + std::to_string(client_.timeout().count()) + " ms");
    return std::move(*out);
}

std::string BlockingUnixctlClient::call(const std::string& command, const std::vector<std::string>& args) {
    UnixctlCommand c{command, args};
    auto r = pipeline({c});
    if (!r.unreachable.empty()) throw Error(r.unreachable);
    if (!r.replies.at(0).ok) throw Error(c.describe() + ": " + r.replies[0].text);
    return r.replies[0].text;
}

}  // namespace kovs::ovs
