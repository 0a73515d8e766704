#include "cni/CniPlugin.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

#include "base/Log.hpp"
#include "cni/AgentReport.hpp"
#include "cni/ChainedMode.hpp"
#include "cni/CniError.hpp"
#include "cni/CniVersion.hpp"
#include "cni/MainMode.hpp"

extern char** environ;

namespace kovs::cni {
namespace {

// Messages carry text the plugin did not choose (environment variables, IPAM
// stderr, config excerpts cut at a byte count): invalid UTF-8 is replaced
// rather than thrown on, which would leave the runtime with no answer at all.
std::string jsonText(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

nlohmann::json versionInfo(const std::string& stdinData) {
    std::string version(kCurrentVersion);
    auto conf = nlohmann::json::parse(stdinData, nullptr, false);
    if (conf.is_object() && conf.contains("cniVersion") && conf["cniVersion"].is_string() &&
        isSupportedVersion(conf["cniVersion"].get<std::string>())) {
        version = conf["cniVersion"].get<std::string>();
    }
    nlohmann::json j = {{"cniVersion", version}, {"supportedVersions", nlohmann::json::array()}};
    for (auto v : kSupportedVersions) j["supportedVersions"].push_back(std::string(v));
    return j;
}

// Runs the command; returns the JSON to print, or null for commands whose
// success is silence (DEL, CHECK, GC, STATUS).
nlohmann::json dispatch(const CniRequest& req) {
    bool main = req.conf.mainMode();
    switch (req.command) {
    case Command::Version: return versionInfo(req.stdinData);
    case Command::Add: return main ? MainMode(req).add() : ChainedMode(req).add();
    case Command::Del:
        if (main) MainMode(req).del();  // chained mode made nothing to undo
        return nullptr;
    case Command::Check:
        if (main) MainMode(req).check();
        else ChainedMode(req).check();
        return nullptr;
    case Command::Gc:
        if (main) MainMode(req).gc();
        return nullptr;
    case Command::Status:
        if (main) MainMode(req).status();
        return nullptr;
    }
    return nullptr;
}

// Where to report a command whose config did not parse: the configured socket
// if the JSON at least names one, else the default.
std::string agentSocketOf(const std::string& stdinData) {
    auto conf = nlohmann::json::parse(stdinData, nullptr, false);
    if (conf.is_object() && conf.contains("agentSocket") && conf["agentSocket"].is_string())
        return conf["agentSocket"].get<std::string>();
    return NetConf{}.agentSocket;
}

}  // namespace

Env CniPlugin::environment() {
    Env env;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return env;
}

int CniPlugin::run(const Env& env, const std::string& stdinData, std::ostream& out) {
    auto started = std::chrono::steady_clock::now();
    std::optional<Command> command;
    std::string agentSocket;
    int code = 0;
    try {
        command = CniRequestParser::parseCommand(env);
    } catch (const CniError&) {
        // parse() below reports it.
    }
    std::string version(kCurrentVersion);
    try {
        auto req = CniRequestParser::parse(env, stdinData);
        agentSocket = req.conf.agentSocket;
        if (req.command != Command::Version) {
            version = req.conf.cniVersion;
            try {
                setupLogging(req.conf.logLevel, req.conf.logFile);
            } catch (const std::exception& e) {
                throw CniError(kIoFailure, "log file " + req.conf.logFile + ": " + e.what());
            }
        }
        spdlog::debug("{} {}/{} netns {}", commandName(req.command), req.containerId, req.ifname, req.netns);
        auto result = dispatch(req);
        if (!result.is_null()) out << jsonText(result) << "\n";
    } catch (const CniError& e) {
        spdlog::error("{}", e.what());
        out << jsonText(e.toJson(version)) << "\n";
        code = e.code();
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        out << jsonText(CniError(kInternal, e.what()).toJson(version)) << "\n";
        code = kInternal;
    }
    // VERSION is asked constantly by runtimes and says nothing about the node.
    if (command && *command != Command::Version) {
        out.flush();  // the runtime has its answer before the agent hears of it
        if (agentSocket.empty() && code != 0) agentSocket = agentSocketOf(stdinData);
        sendAgentReport(agentSocket, agentReport(commandName(*command), code, std::chrono::steady_clock::now() - started));
    }
    return code == 0 ? 0 : 1;
}

}  // namespace kovs::cni
