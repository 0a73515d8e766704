#include "cni/IpamPlugin.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "base/Process.hpp"
#include "cni/CniError.hpp"

namespace kovs::cni {
namespace {

// The plugin's error JSON, read defensively: a broken plugin must not turn
// into a crash of ours.
struct PluginError {
    int code = kInternal;
    std::string msg, details;
    explicit PluginError(const ProcessResult& res) {
        auto err = nlohmann::json::parse(res.out, nullptr, false);
        details = res.err;
        if (!err.is_object()) return;
        if (err.contains("code") && err["code"].is_number_integer() && err["code"].get<int64_t>() > 0 &&
            err["code"].get<int64_t>() < 1000) {
            code = err["code"].get<int>();
        }
        if (err.contains("msg") && err["msg"].is_string()) msg = err["msg"].get<std::string>();
        if (err.contains("details") && err["details"].is_string()) details = err["details"].get<std::string>();
    }
};

}  // namespace

IpamPlugin::IpamPlugin(const std::string& type, const std::vector<std::string>& cniPath) : type_(type) {
    for (const auto& dir : cniPath) {
        auto candidate = dir + "/" + type;
        if (::access(candidate.c_str(), X_OK) == 0) {
            binary_ = candidate;
            return;
        }
    }
    std::string dirs;
    for (const auto& d : cniPath) dirs += (dirs.empty() ? "" : ":") + d;
    throw CniError(kInvalidConfig, "ipam plugin " + type + " not found in CNI_PATH " + dirs);
}

std::string IpamPlugin::run(const std::string& command, Env env, const std::string& stdinData) const {
    env["CNI_COMMAND"] = command;
    auto attempt = [&](const std::string& input) {
        ProcessOptions opts;
        opts.env = env;
        opts.stdinData = input;
        return runProcess({binary_}, opts);
    };
    auto res = attempt(stdinData);
    spdlog::debug("ipam {} {}: exit {}", type_, command, res.exitCode);
    if (!res.ok()) {
        PluginError err(res);
        // Debian 12's plugins (1.1.1) stop at spec 1.0.0; 1.1.0 changed nothing
        // in what IPAM reads or returns, so retry once with the config relabelled.
        auto conf = nlohmann::json::parse(stdinData, nullptr, false);
        if (err.code == kIncompatibleVersion && conf.is_object() && conf.contains("cniVersion") &&
            conf["cniVersion"] == "1.1.0") {
            conf["cniVersion"] = "1.0.0";
            res = attempt(conf.dump());
            if (res.ok()) return res.out;
            err = PluginError(res);
        }
        if (err.msg.empty()) err.msg = "exit " + std::to_string(res.exitCode) + (res.err.empty() ? "" : ": " + res.err);
        throw CniError(err.code, "ipam " + type_ + " " + command + ": " + err.msg, err.details);
    }
    return res.out;
}

CniResult IpamPlugin::add(const Env& env, const std::string& stdinData) const {
    auto out = run("ADD", env, stdinData);
    try {
        auto j = nlohmann::json::parse(out, nullptr, false);
        if (j.is_discarded()) throw CniError(kDecodeFailure, "ipam " + type_ + " ADD: result is not JSON", out.substr(0, 200));
        auto result = CniResult::fromJson(j, "ipam " + type_ + " result");
        if (result.ips.empty()) throw CniError(kInternal, "ipam " + type_ + " ADD: result has no IPs");
        return result;
    } catch (const CniError&) {
        // The plugin did allocate: give the lease back before failing.
        try {
            del(env, stdinData);
        } catch (const std::exception& e) {
            spdlog::error("ipam {} DEL after an unusable ADD result: {}", type_, e.what());
        }
        throw;
    }
}

void IpamPlugin::del(const Env& env, const std::string& stdinData) const { run("DEL", env, stdinData); }
void IpamPlugin::check(const Env& env, const std::string& stdinData) const { run("CHECK", env, stdinData); }

}  // namespace kovs::cni
