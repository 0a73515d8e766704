#include "agent/Config.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"
#include "base/InterfaceName.hpp"
#include "base/IpPrefix.hpp"
#include "gateway/TunnelOverhead.hpp"
#include "uplink/UplinkOptions.hpp"

namespace kovs::agent {
namespace {

void checkCidr(const std::string& where, const std::string& s) {
    try {
        if (s.find('/') != std::string::npos) {
            IpPrefix::parse(s);
            return;
        }
    } catch (const Error&) {
    }
    throw Error(where + ": expected an address with prefix length like 10.244.1.0/24 or fd00::/64, got '" + s + "'");
}

// Walks one YAML mapping, hands each known key to its handler and rejects the rest.
class Section {
public:
    Section(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {
        if (node_ && !node_.IsNull() && !node_.IsMap()) fail("", "expected a mapping");
    }

    std::string key(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }

    [[noreturn]] void fail(const std::string& k, const std::string& why) const {
        std::string where = k.empty() ? (path_.empty() ? "config" : path_) : key(k);
        throw Error(where + ": " + why);
    }

    std::string scalar(const std::string& k) const {
        const auto& v = node_[k];
        if (!v.IsScalar()) fail(k, "expected a value, got a " + std::string(v.IsMap() ? "mapping" : "list"));
        return v.Scalar();
    }

    void str(const std::string& k, std::string& out) const {
        if (has(k)) {
            out = scalar(k);
            if (out.empty()) fail(k, "must not be empty");
        }
    }
    // A key renamed in a later release: the old name still works, with a warning.
    void renamedStr(const std::string& k, const std::string& old, std::string& out) const {
        if (has(old)) {
            if (has(k)) fail(old, "is the old name of " + key(k) + "; give only " + key(k));
            spdlog::warn("{}: renamed to {}; the old name still works", key(old), key(k));
            str(old, out);
        }
        str(k, out);
    }
    void flag(const std::string& k, bool& out) const {
        if (!has(k)) return;
        auto s = scalar(k);
        if (s == "true" || s == "yes" || s == "on") out = true;
        else if (s == "false" || s == "no" || s == "off") out = false;
        else fail(k, "expected true or false, got '" + s + "'");
    }
    long integer(const std::string& k, long lo, long hi) const {
        auto s = scalar(k);
        try {
            size_t used = 0;
            long v = std::stol(s, &used);
            if (used == s.size() && v >= lo && v <= hi) return v;
        } catch (const std::exception&) {
        }
        fail(k, "expected an integer " + std::to_string(lo) + "-" + std::to_string(hi) + ", got '" + s + "'");
    }
    void duration(const std::string& k, std::chrono::milliseconds& out) const {
        if (!has(k)) return;
        // Plain numbers are seconds; "500ms", "10s", "2m" are accepted too.
        auto s = scalar(k);
        size_t used = 0;
        double v = -1;
        try {
            v = std::stod(s, &used);
        } catch (const std::exception&) {
        }
        std::string unit = s.substr(used);
        double ms = unit == "ms" ? v : (unit == "" || unit == "s") ? v * 1000 : unit == "m" ? v * 60000 : -1;
        // !(x <= y) refuses NaN too, which every comparison answers false.
        if (!std::isfinite(v) || !(v > 0) || !(ms >= 1 && ms <= 86400000))
            fail(k, "expected a duration like 10s, 500ms or 2m, got '" + s + "'");
        out = std::chrono::milliseconds(static_cast<long>(ms));
    }
    template <typename E>
    void choice(const std::string& k, E& out, const std::map<std::string, E>& options) const {
        if (!has(k)) return;
        auto s = scalar(k);
        auto it = options.find(s);
        if (it == options.end()) {
            std::string names;
            for (const auto& [n, _] : options) names += (names.empty() ? "" : ", ") + n;
            fail(k, "expected one of " + names + ", got '" + s + "'");
        }
        out = it->second;
    }
    void list(const std::string& k, std::vector<std::string>& out,
              const std::function<void(const std::string&, const std::string&)>& check) const {
        if (!has(k)) return;
        const auto& v = node_[k];
        if (!v.IsSequence()) fail(k, "expected a list");
        out.clear();
        for (size_t i = 0; i < v.size(); ++i) {
            std::string item = key(k) + "[" + std::to_string(i) + "]";
            if (!v[i].IsScalar()) throw Error(item + ": expected a value");
            check(item, v[i].Scalar());
            out.push_back(v[i].Scalar());
        }
    }
    // A list of prefixes ("10.244.1.0/24"); `network` clears host bits, as a
    // route destination or a CIDR means.
    void prefixes(const std::string& k, std::vector<IpPrefix>& out, bool network) const {
        std::vector<std::string> texts;
        list(k, texts, checkCidr);
        if (!has(k)) return;
        out.clear();
        for (const auto& t : texts) {
            auto p = IpPrefix::parse(t);
            out.push_back(network ? p.network() : p);
        }
    }
    // A key that became a list: the old single value still works, with a warning.
    void prefixesOrOld(const std::string& k, const std::string& old, std::vector<IpPrefix>& out, bool network) const {
        if (has(old)) {
            if (has(k)) fail(old, "is the old name of " + key(k) + "; give only " + key(k));
            spdlog::warn("{}: renamed to {} (a list); the old name still works", key(old), key(k));
            auto text = scalar(old);
            checkCidr(key(old), text);
            auto p = IpPrefix::parse(text);
            out = {network ? p.network() : p};
        }
        prefixes(k, out, network);
    }
    Section sub(const std::string& k) const { return Section(has(k) ? node_[k] : YAML::Node(), key(k)); }

    bool has(const std::string& k) const {
        seen_.insert(k);
        return node_ && node_.IsMap() && node_[k] && !node_[k].IsNull();
    }

    // Call last: any key no handler asked for is a typo or an unsupported option.
    void rejectUnknown() const {
        if (!node_ || !node_.IsMap()) return;
        for (const auto& kv : node_) {
            auto k = kv.first.as<std::string>();
            if (!seen_.count(k)) fail(k, "unknown key");
        }
    }

private:
    YAML::Node node_;
    std::string path_;
    mutable std::set<std::string> seen_;
};

void checkIfname(const Section& s, const std::string& k, const std::string& v) {
    auto problem = interfaceNameProblem(v);
    if (!problem.empty())
        s.fail(k, "not a valid interface name (" + problem + "): '" + v + "'");
}

// gw0 carries pod packets that the tunnel wraps in 50 bytes of VXLAN on the
// uplink. In companion mode the other CNI's tunnel may add more (Geneve with
// OVN's option: 58), which only the node can tell: kovsctl doctor checks it.
void checkMtus(const Config& c) {
    int overhead = c.tunnelOverhead();
    if (c.mode == Config::Mode::Standalone && c.gatewayMtu() < Config::kMinGatewayMtu)
        throw Error("gateway.mtu: uplink.mtu - " + std::to_string(overhead) + " = " + std::to_string(c.gatewayMtu()) +
                    " is below 576; set gateway.mtu");
    if (c.gateway.mtu > c.uplink.mtu - overhead)
        throw Error("gateway.mtu: " + std::to_string(c.gateway.mtu) + " leaves no room for the " +
                    std::to_string(overhead) + "-byte VXLAN header on a " + std::to_string(c.uplink.mtu) +
                    "-byte uplink (at most " + std::to_string(c.uplink.mtu - overhead) + ")");
}

}  // namespace

int Config::underlayFamily() const {
    bool v4 = false, v6 = false;
    for (const auto& c : node.podCIDRs) (c.family == AF_INET ? v4 : v6) = true;
    return v6 && !v4 ? AF_INET6 : AF_INET;
}

int Config::tunnelOverhead() const {
    return gateway::vxlanOverhead(underlayFamily() == AF_INET6);
}

void resolveUplinkMtu(Config& c, const std::string& sysClassNet) {
    if (c.uplink.mtu == 0) {
        std::ifstream f(sysClassNet + "/" + c.uplink.interface + "/mtu");
        int mtu = 0;
        c.uplink.mtu = (f >> mtu) && mtu >= 626 ? mtu : 1500;
    }
    checkMtus(c);
}

Config parseConfig(const std::string& text) {
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw Error("config: invalid YAML at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
    Config c;
    Section top(root, "");

    auto node = top.sub("node");
    node.str("name", c.node.name);
    node.prefixesOrOld("podCIDRs", "podCIDR", c.node.podCIDRs, true);
    for (size_t i = 0; i < c.node.podCIDRs.size(); ++i) {
        const auto& p = c.node.podCIDRs[i];
        for (size_t j = 0; j < i; ++j) {
            if (c.node.podCIDRs[j].family == p.family)
                node.fail("podCIDRs", "two pod CIDRs of one family (" + c.node.podCIDRs[j].str() + ", " + p.str() + ")");
        }
        if (p.prefixLen > p.maxPrefixLen() - 2)
            node.fail("podCIDRs", p.str() + " leaves no room for a gateway and pods");
    }
    node.rejectUnknown();

    auto cluster = top.sub("cluster");
    cluster.prefixes("serviceCIDRs", c.cluster.serviceCIDRs, true);
    cluster.rejectUnknown();

    auto ovs = top.sub("ovs");
    ovs.flag("manage", c.ovs.manage);
    ovs.str("rundir", c.ovs.rundir);
    ovs.renamedStr("remote", "db", c.ovs.remote);
    ovs.renamedStr("database", "dbPath", c.ovs.database);
    ovs.str("schema", c.ovs.schema);
    if (ovs.has("socketBufferKiB")) {
        c.ovs.socketBufferKiB = static_cast<int>(ovs.integer("socketBufferKiB", 0, 262144));
        if (c.ovs.socketBufferKiB != 0 && c.ovs.socketBufferKiB < 256)
            ovs.fail("socketBufferKiB", "expected 0 (OVS's default) or 256-262144, got '" +
                                            std::to_string(c.ovs.socketBufferKiB) + "'");
    }
    if (!c.ovs.remote.empty() && c.ovs.remote.rfind("unix:", 0) != 0 && c.ovs.remote.rfind("tcp:", 0) != 0)
        ovs.fail(ovs.has("db") ? "db" : "remote", "expected unix:/path or tcp:host:port, got '" + c.ovs.remote + "'");
    ovs.rejectUnknown();

    auto br = top.sub("bridge");
    for (auto [k, out] : {std::pair{"integration", &c.bridge.integration}, {"physical", &c.bridge.physical},
                          {"gateway", &c.bridge.gateway}, {"tunnel", &c.bridge.tunnel}}) {
        br.str(k, *out);
        checkIfname(br, k, *out);
    }
    c.bridge.tunnelConfigured = br.has("tunnel");
    c.bridge.physicalConfigured = br.has("physical");
    if (br.has("tunnelDstPort")) c.bridge.tunnelDstPort = static_cast<uint16_t>(br.integer("tunnelDstPort", 1, 65535));
    br.rejectUnknown();

    top.choice("mode", c.mode, {{"standalone", Config::Mode::Standalone}, {"companion", Config::Mode::Companion}});

    auto gw = top.sub("gateway");
    gw.flag("guard", c.gateway.guard);
    if (gw.has("mtu")) c.gateway.mtu = static_cast<int>(gw.integer("mtu", 576, 65535));
    gw.prefixes("addresses", c.gateway.addresses, false);
    gw.prefixes("extraRoutes", c.gateway.extraRoutes, true);
    gw.duration("resync", c.gateway.resync);
    gw.str("networkdDropinDir", c.gateway.networkdDropinDir);
    gw.rejectUnknown();

    auto up = top.sub("uplink");
    up.choice("mode", c.uplink.mode,
              {{"shim", Config::UplinkMode::Shim}, {"direct", Config::UplinkMode::Direct}, {"none", Config::UplinkMode::None}});
    up.str("interface", c.uplink.interface);
    checkIfname(up, "interface", c.uplink.interface);
    std::map<std::string, std::string> portTypes;
    for (const auto& t : uplink::uplinkPortTypes()) portTypes[t] = t;
    up.choice("portType", c.uplink.portType, portTypes);
    if (up.has("mtu")) {
        c.uplink.mtu = static_cast<int>(up.integer("mtu", 626, 65535));
        c.uplink.mtuConfigured = true;
    }
    up.rejectUnknown();

    auto flows = top.sub("flows");
    flows.flag("conntrack", c.flows.conntrack);
    flows.duration("ofctlTimeout", c.flows.ofctlTimeout);
    flows.rejectUnknown();

    auto egress = top.sub("egress");
    egress.flag("masquerade", c.egress.masquerade);
    egress.prefixesOrOld("clusterCIDRs", "clusterCIDR", c.egress.clusterCIDRs, true);
    egress.prefixes("nonMasqueradeCIDRs", c.egress.nonMasqueradeCIDRs, true);
    egress.rejectUnknown();

    auto peers = top.sub("peers");
    peers.choice("source", c.peers.source,
                 {{"none", Config::PeerSourceKind::None}, {"file", Config::PeerSourceKind::File},
                  {"kubernetes", Config::PeerSourceKind::Kubernetes}});
    peers.str("file", c.peers.file);
    peers.str("kubeconfig", c.peers.kubeconfig);
    peers.flag("allowUnprotectedToken", c.peers.allowUnprotectedToken);
    peers.rejectUnknown();

    auto policy = top.sub("networkPolicy");
    c.networkPolicy.configured = policy.has("enforce");
    policy.flag("enforce", c.networkPolicy.enforce);
    if (policy.has("logRate")) c.networkPolicy.logRate = static_cast<int>(policy.integer("logRate", 1, 100000));
    if (policy.has("logEntries")) c.networkPolicy.logEntries = static_cast<int>(policy.integer("logEntries", 1, 100000));
    policy.rejectUnknown();
    if (c.networkPolicy.configured && c.networkPolicy.enforce) {
        if (c.mode == Config::Mode::Companion)
            policy.fail("enforce", "companion mode never installs policy: the other CNI owns it");
        else if (c.peers.source != Config::PeerSourceKind::Kubernetes)
            policy.fail("enforce", "needs peers.source: kubernetes (policies, pods and namespaces come from the API)");
    }

    top.duration("resync", c.resync);
    top.str("statusSocket", c.statusSocket);
    top.str("metricsAddress", c.metricsAddress);
    top.rejectUnknown();

    if (c.node.name.empty()) {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        c.node.name = host;
    }
    if (c.uplink.mtu) checkMtus(c);  // else once the uplink's MTU is known (resolveUplinkMtu)
    if (c.mode == Config::Mode::Standalone && c.node.podCIDRs.empty() && c.gateway.addresses.empty())
        top.fail("node.podCIDRs", "required in standalone mode (or give gateway.addresses)");
    // Standalone: the local pod CIDR of the flow table is the network of gw0's address.
    for (const auto& a : c.gateway.addresses) {
        if (c.mode == Config::Mode::Standalone && a.prefixLen > a.maxPrefixLen() - 2)
            top.fail("gateway.addresses", a.str() + ": in standalone mode its network is the pod CIDR, and leaves no room for pods");
    }
    return c;
}

Config loadConfig(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw SystemError("config " + path, errno);
    std::stringstream ss;
    ss << f.rdbuf();
    try {
        return parseConfig(ss.str());
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

}  // namespace kovs::agent
