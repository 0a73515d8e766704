#include "offload/cni/CniPlugin.hpp"

#include <spdlog/spdlog.h>

#include "base/Log.hpp"
#include "offload/cni/ChainedMode.hpp"
#include "offload/cni/CniError.hpp"
#include "offload/cni/CniVersion.hpp"
#include "offload/cni/MainMode.hpp"

extern char** environ;

namespace kovs::cni {
namespace {

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
    std::string version(kCurrentVersion);
    try {
        auto req = CniRequestParser::parse(env, stdinData);
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
        if (!result.is_null()) out << result.dump() << "\n";
        return 0;
    } catch (const CniError& e) {
        spdlog::error("{}", e.what());
        out << e.toJson(version).dump() << "\n";
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        out << CniError(kInternal, e.what()).toJson(version).dump() << "\n";
    }
    return 1;
}

}  // namespace kovs::cni
