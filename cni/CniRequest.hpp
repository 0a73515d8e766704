#pragma once
// One kovs-cni invocation, parsed and validated from the CNI_* environment and
// the network configuration on stdin. Everything a later step relies on is
// checked here, before any state is created, so bad input fails with the
// spec's error code and leaves nothing behind.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/TunnelOverhead.hpp"

namespace kovs::cni {

using Json = nlohmann::json;
using Env = std::map<std::string, std::string>;

enum class Command { Add, Del, Check, Version, Status, Gc };
const char* commandName(Command c);

struct Attachment {
    std::string containerId;
    std::string ifname;
    auto operator<=>(const Attachment&) const = default;
};

struct NetConf {
    std::string cniVersion;
    std::string name;
    std::string type;
    std::optional<int> mtu;
    std::optional<int> uplinkMtu;
    std::string ovsdb = "unix:/var/run/openvswitch/db.sock";
    std::string bridge = "br-int";
    std::optional<Json> ipam;        // main mode: the IPAM plugin's section
    std::optional<Json> prevResult;  // chained mode (ADD), or the cached result (CHECK/DEL)
    std::optional<std::vector<Attachment>> validAttachments;  // GC
    std::string logFile;
    std::string logLevel = "info";
    // kovs-agent's status socket (its statusSocket default), told the outcome
    // of every command for /metrics; "" reports nowhere.
    std::string agentSocket = "/var/run/kovs/agent.sock";

    // Main mode (kovs makes the interface) is the one configured with IPAM;
    // chained mode only switches offload off on what earlier plugins made.
    bool mainMode() const { return ipam.has_value(); }
    std::string ipamType() const { return ipam ? ipam->at("type").get<std::string>() : ""; }
    // `mtu`; else uplinkMTU less what VXLAN needs over an IPv4 underlay (an
    // IPv6 underlay needs 20 more: give `mtu`, or leave both out); else the
    // MTU of the pod's gateway interface on the node (gw0, which follows the
    // uplink and the underlay's family: the agent's gatewayMtu()), given by
    // the caller; else 1500 less that.
    int podMtu(std::optional<int> gatewayMtu = std::nullopt) const {
        if (mtu) return *mtu;
        if (uplinkMtu) return *uplinkMtu - gateway::vxlanOverhead(false);
        return gatewayMtu.value_or(1500 - gateway::vxlanOverhead(false));
    }
};

struct CniRequest {
    Command command = Command::Version;
    std::string containerId;
    std::string netns;
    std::string ifname;
    std::map<std::string, std::string> args;  // CNI_ARGS
    std::vector<std::string> path;            // CNI_PATH, split
    Env env;                                  // all of it, for delegating to IPAM
    std::string stdinData;                    // verbatim, for delegating to IPAM
    NetConf conf;

    std::string arg(const std::string& key) const {
        auto it = args.find(key);
        return it == args.end() ? "" : it->second;
    }
};

class CniRequestParser {
public:
    static constexpr size_t kMaxConfigBytes = 1 << 20;

    // Throws CniError with the spec's code: 4 for the environment, 6 for JSON
    // that does not parse, 1 for an unsupported cniVersion, 2 for a field
    // kovs-cni does not support, 7 for a bad value.
    static CniRequest parse(const Env& env, std::string_view stdinData);

    static Command parseCommand(const Env& env);
    static NetConf parseConfig(std::string_view stdinData, Command command);
    static std::map<std::string, std::string> parseArgs(std::string_view cniArgs);
    static void validateIfname(const std::string& what, const std::string& name, int code);
    static void validateContainerId(const std::string& id);
};

}  // namespace kovs::cni
