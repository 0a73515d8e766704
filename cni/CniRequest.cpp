#include "cni/CniRequest.hpp"

#include <spdlog/spdlog.h>

#include <cctype>
#include <set>

#include "base/InterfaceName.hpp"
#include "base/JsonDepth.hpp"
#include "cni/CniError.hpp"
#include "cni/CniVersion.hpp"

namespace kovs::cni {
namespace {

const std::map<std::string, Command> kCommands = {
    {"ADD", Command::Add},       {"DEL", Command::Del},       {"CHECK", Command::Check},
    {"VERSION", Command::Version}, {"STATUS", Command::Status}, {"GC", Command::Gc},
};

// Keys the spec defines for every plugin's configuration, or that runtimes add.
const std::set<std::string> kSpecKeys = {
    "cniVersion", "name", "type", "args", "ipMasq", "ipam", "dns", "capabilities", "runtimeConfig",
    "prevResult", "cni.dev/valid-attachments", "cni.dev/attachments", "disableCheck", "disableGC",
};
// kovs-cni's own keys.
const std::set<std::string> kKovsKeys = {"mtu", "uplinkMTU", "ovsdb", "bridge", "logFile", "logLevel", "agentSocket"};

std::string required(const Env& env, const std::string& key) {
    auto it = env.find(key);
    if (it == env.end() || it->second.empty()) throw CniError(kInvalidEnv, key + " is required and missing");
    return it->second;
}

std::string optional(const Env& env, const std::string& key) {
    auto it = env.find(key);
    return it == env.end() ? "" : it->second;
}

// A short rendering of a JSON value for error messages (never the whole config).
std::string show(const Json& v) {
    auto s = v.dump();
    return s.size() > 64 ? s.substr(0, 61) + "..." : s;
}

std::string stringField(const Json& conf, const std::string& key, bool isRequired) {
    if (!conf.contains(key)) {
        if (isRequired) throw CniError(kInvalidConfig, "network config: " + key + " is required");
        return "";
    }
    const auto& v = conf.at(key);
    if (!v.is_string()) throw CniError(kInvalidConfig, "network config: " + key + " must be a string, got " + show(v));
    return v.get<std::string>();
}

int intField(const Json& conf, const std::string& key, int min, int max) {
    const auto& v = conf.at(key);
    if (!v.is_number_integer()) throw CniError(kInvalidConfig, "network config: " + key + " must be an integer, got " + show(v));
    auto n = v.get<int64_t>();
    if (n < min || n > max) {
        throw CniError(kInvalidConfig, "network config: " + key + " " + std::to_string(n) + " is out of range [" +
                                           std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return static_cast<int>(n);
}

void requireObject(const Json& conf, const std::string& key) {
    if (conf.contains(key) && !conf.at(key).is_object()) {
        throw CniError(kInvalidConfig, "network config: " + key + " must be an object, got " + show(conf.at(key)));
    }
}

void validatePrevResult(const Json& prev) {
    if (!prev.is_object()) throw CniError(kInvalidConfig, "prevResult must be an object, got " + show(prev));
    if (prev.contains("interfaces")) {
        const auto& ifs = prev.at("interfaces");
        if (!ifs.is_array()) throw CniError(kInvalidConfig, "prevResult.interfaces must be an array");
        for (size_t i = 0; i < ifs.size(); ++i) {
            const auto& itf = ifs[i];
            auto where = "prevResult.interfaces[" + std::to_string(i) + "]";
            if (!itf.is_object()) throw CniError(kInvalidConfig, where + " must be an object");
            if (!itf.contains("name") || !itf.at("name").is_string()) {
                throw CniError(kInvalidConfig, where + ".name must be a string");
            }
            CniRequestParser::validateIfname(where + ".name", itf.at("name").get<std::string>(), kInvalidConfig);
            if (itf.contains("sandbox") && !itf.at("sandbox").is_string()) {
                throw CniError(kInvalidConfig, where + ".sandbox must be a string");
            }
        }
    }
    if (prev.contains("ips")) {
        const auto& ips = prev.at("ips");
        if (!ips.is_array()) throw CniError(kInvalidConfig, "prevResult.ips must be an array");
        for (size_t i = 0; i < ips.size(); ++i) {
            auto where = "prevResult.ips[" + std::to_string(i) + "]";
            if (!ips[i].is_object() || !ips[i].contains("address") || !ips[i].at("address").is_string()) {
                throw CniError(kInvalidConfig, where + ".address must be a string");
            }
            if (ips[i].contains("interface") && !ips[i].at("interface").is_number_unsigned()) {
                throw CniError(kInvalidConfig, where + ".interface must be an index");
            }
        }
    }
}

std::vector<Attachment> parseAttachments(const Json& v) {
    const std::string key = "cni.dev/valid-attachments";
    if (!v.is_array()) throw CniError(kInvalidConfig, "network config: " + key + " must be an array");
    std::vector<Attachment> out;
    for (const auto& a : v) {
        if (!a.is_object() || !a.contains("containerID") || !a.at("containerID").is_string() || !a.contains("ifname") ||
            !a.at("ifname").is_string()) {
            throw CniError(kInvalidConfig, "network config: " + key + " entries need string containerID and ifname, got " + show(a));
        }
        out.push_back({a.at("containerID").get<std::string>(), a.at("ifname").get<std::string>()});
    }
    return out;
}

}  // namespace

const char* commandName(Command c) {
    for (const auto& [name, cmd] : kCommands) {
        if (cmd == c) return name.c_str();
    }
    return "?";
}

Command CniRequestParser::parseCommand(const Env& env) {
    auto name = required(env, "CNI_COMMAND");
    auto it = kCommands.find(name);
    if (it == kCommands.end()) {
        throw CniError(kInvalidEnv, "CNI_COMMAND " + name + " is not one of ADD, DEL, CHECK, VERSION, STATUS, GC");
    }
    return it->second;
}

void CniRequestParser::validateIfname(const std::string& what, const std::string& name, int code) {
    auto problem = interfaceNameProblem(name);
    if (!problem.empty()) throw CniError(code, what + " '" + name + "' is not a valid interface name: " + problem);
}

void CniRequestParser::validateContainerId(const std::string& id) {
    // The runtime's own rule (libcni ValidateContainerID).
    bool ok = !id.empty() && std::isalnum(static_cast<unsigned char>(id[0]));
    for (unsigned char c : id) ok = ok && (std::isalnum(c) || c == '_' || c == '.' || c == '-');
    if (!ok) throw CniError(kInvalidEnv, "CNI_CONTAINERID " + id + ": only letters, digits, '_', '.' and '-', starting with a letter or digit");
}

std::map<std::string, std::string> CniRequestParser::parseArgs(std::string_view cniArgs) {
    std::map<std::string, std::string> out;
    size_t pos = 0;
    while (pos <= cniArgs.size() && !cniArgs.empty()) {
        auto end = cniArgs.find(';', pos);
        auto pair = cniArgs.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
        auto eq = pair.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            throw CniError(kInvalidEnv, "CNI_ARGS: '" + std::string(pair) + "' is not KEY=VALUE");
        }
        out[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
        if (end == std::string_view::npos) break;
        pos = end + 1;
    }
    return out;
}

NetConf CniRequestParser::parseConfig(std::string_view stdinData, Command command) {
    if (stdinData.size() > kMaxConfigBytes) {
        throw CniError(kDecodeFailure, "network config on stdin is larger than " + std::to_string(kMaxConfigBytes) + " bytes");
    }
    if (jsonNestingDepth(stdinData) > kMaxJsonDepth)
        throw CniError(kDecodeFailure, "network config on stdin nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    Json conf = Json::parse(stdinData, nullptr, /*allow_exceptions=*/false);
    if (conf.is_discarded()) throw CniError(kDecodeFailure, "network config on stdin is not valid JSON");
    if (!conf.is_object()) throw CniError(kDecodeFailure, "network config on stdin must be a JSON object");

    NetConf nc;
    nc.cniVersion = stringField(conf, "cniVersion", true);
    if (!isSupportedVersion(nc.cniVersion)) {
        std::string list;
        for (auto v : kSupportedVersions) list += (list.empty() ? "" : ", ") + std::string(v);
        throw CniError(kIncompatibleVersion, "cniVersion " + nc.cniVersion + " is not supported (supported: " + list + ")");
    }
    struct MinVersion { Command cmd; std::string_view version; };
    for (auto [cmd, min] : {MinVersion{Command::Check, "0.4.0"}, MinVersion{Command::Gc, "1.1.0"},
                            MinVersion{Command::Status, "1.1.0"}}) {
        if (command == cmd && !versionAtLeast(nc.cniVersion, min)) {
            throw CniError(kIncompatibleVersion, std::string("cniVersion ") + nc.cniVersion + " does not allow " +
                                                     commandName(cmd) + " (needs " + std::string(min) + ")");
        }
    }

    for (const auto& [key, value] : conf.items()) {
        if (!kSpecKeys.count(key) && !kKovsKeys.count(key)) {
            throw CniError(kUnsupportedField, "network config: unsupported field " + key + "=" + show(value));
        }
    }
    nc.name = stringField(conf, "name", true);
    if (nc.name.empty()) throw CniError(kInvalidConfig, "network config: name is empty");
    nc.type = stringField(conf, "type", true);
    if (nc.type != "kovs") throw CniError(kInvalidConfig, "network config: type " + nc.type + " is not kovs");

    if (conf.contains("ipMasq")) {
        const auto& m = conf.at("ipMasq");
        if (!m.is_boolean()) throw CniError(kInvalidConfig, "network config: ipMasq must be a boolean");
        // Masquerading belongs to the agent's flows, not to per-pod iptables rules.
        if (m.get<bool>()) throw CniError(kUnsupportedField, "network config: unsupported field ipMasq=true");
    }
    for (const auto* key : {"args", "dns", "capabilities", "runtimeConfig", "ipam"}) requireObject(conf, key);

    if (conf.contains("uplinkMTU")) nc.uplinkMtu = intField(conf, "uplinkMTU", 68 + gateway::vxlanOverhead(false), 65535);
    if (conf.contains("mtu")) {
        nc.mtu = intField(conf, "mtu", 68, 65535);
        if (nc.uplinkMtu && *nc.mtu > *nc.uplinkMtu) {
            throw CniError(kInvalidConfig, "network config: mtu " + std::to_string(*nc.mtu) + " is larger than uplinkMTU " +
                                               std::to_string(*nc.uplinkMtu));
        }
    }
    if (conf.contains("ovsdb")) {
        nc.ovsdb = stringField(conf, "ovsdb", false);
        if (nc.ovsdb.rfind("unix:", 0) != 0 || nc.ovsdb.size() == 5) {
            throw CniError(kInvalidConfig, "network config: ovsdb " + nc.ovsdb + " is not unix:<socket path>");
        }
    }
    if (conf.contains("bridge")) {
        nc.bridge = stringField(conf, "bridge", false);
        validateIfname("network config: bridge", nc.bridge, kInvalidConfig);
    }
    if (conf.contains("logFile")) nc.logFile = stringField(conf, "logFile", false);
    if (conf.contains("agentSocket")) {
        nc.agentSocket = stringField(conf, "agentSocket", false);
        if (!nc.agentSocket.empty() && (nc.agentSocket[0] != '/' || nc.agentSocket.size() >= 108))
            throw CniError(kInvalidConfig, "network config: agentSocket " + nc.agentSocket + " is not an absolute socket path");
    }
    if (conf.contains("logLevel")) {
        nc.logLevel = stringField(conf, "logLevel", false);
        static const std::set<std::string> levels = {"trace", "debug", "info", "warn", "error", "off"};
        if (!levels.count(nc.logLevel)) throw CniError(kInvalidConfig, "network config: logLevel " + nc.logLevel + " is not one of trace, debug, info, warn, error, off");
    }
    if (conf.contains("ipam")) {
        const auto& ipam = conf.at("ipam");
        auto type = stringField(ipam, "type", true);
        if (type.empty() || type == "." || type == ".." || type.find('/') != std::string::npos) {
            throw CniError(kInvalidConfig, "network config: ipam.type " + type + " is not a plugin name");
        }
        nc.ipam = ipam;
    }
    if (conf.contains("prevResult")) {
        validatePrevResult(conf.at("prevResult"));
        nc.prevResult = conf.at("prevResult");
    }
    if (conf.contains("cni.dev/valid-attachments")) nc.validAttachments = parseAttachments(conf.at("cni.dev/valid-attachments"));

    if (command == Command::Add && !nc.mainMode() && !nc.prevResult) {
        throw CniError(kInvalidConfig, "network config: ADD needs ipam (main mode) or a prevResult (chained mode)");
    }
    if (command == Command::Add && nc.mainMode() && nc.prevResult) {
        throw CniError(kInvalidConfig, "network config: main mode (ipam set) must be the first plugin, but a prevResult is present");
    }
    if (command == Command::Gc && !nc.validAttachments) {
        // Without the list every attachment would look stale.
        throw CniError(kInvalidConfig, "network config: GC needs cni.dev/valid-attachments");
    }
    return nc;
}

CniRequest CniRequestParser::parse(const Env& env, std::string_view stdinData) {
    CniRequest req;
    req.command = parseCommand(env);
    req.env = env;
    req.stdinData = std::string(stdinData);
    if (req.command == Command::Version) return req;  // stdin is optional and only names a version

    bool perContainer = req.command == Command::Add || req.command == Command::Del || req.command == Command::Check;
    if (perContainer) {
        req.containerId = required(env, "CNI_CONTAINERID");
        validateContainerId(req.containerId);
        req.ifname = required(env, "CNI_IFNAME");
        validateIfname("CNI_IFNAME", req.ifname, kInvalidEnv);
        // DEL may come after the netns is gone; ADD and CHECK need it.
        req.netns = req.command == Command::Del ? optional(env, "CNI_NETNS") : required(env, "CNI_NETNS");
        if (!req.netns.empty() && req.netns[0] != '/') {
            throw CniError(kInvalidEnv, "CNI_NETNS " + req.netns + " is not an absolute path");
        }
    }
    req.args = parseArgs(optional(env, "CNI_ARGS"));
    auto path = perContainer || req.command == Command::Gc ? required(env, "CNI_PATH") : optional(env, "CNI_PATH");
    size_t pos = 0;
    while (pos < path.size()) {
        auto end = path.find(':', pos);
        auto dir = path.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        if (!dir.empty()) req.path.push_back(dir);
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    req.conf = parseConfig(stdinData, req.command);
    return req;
}

}  // namespace kovs::cni
