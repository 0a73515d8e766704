#include "peers/PeerFile.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include "base/Error.hpp"

namespace kovs::peers {
namespace {

std::string scalar(const YAML::Node& n, const std::string& what) {
    if (!n || !n.IsScalar()) throw Error(what + ": expected a string");
    return n.Scalar();
}

Peer parseEntry(const YAML::Node& e, const std::string& where) {
    if (!e.IsMap()) throw Error(where + ": expected a mapping with name, nodeIP, podCIDRs");
    Peer p;
    for (const auto& kv : e) {
        std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "<non-scalar>";
        if (key != "name" && key != "nodeIP" && key != "podCIDRs") {
            throw Error(where + ": unknown key '" + key + "'");
        }
    }
    p.name = scalar(e["name"], where + ".name");
    if (p.name.empty()) throw Error(where + ".name: must not be empty");
    std::string here = where + " (" + p.name + ")";
    p.nodeIPs.push_back(parseNodeIP(scalar(e["nodeIP"], here + ".nodeIP"), here + ".nodeIP"));
    if (auto cidrs = e["podCIDRs"]) {
        if (!cidrs.IsSequence()) throw Error(here + ".podCIDRs: expected a list");
        for (size_t i = 0; i < cidrs.size(); ++i) {
            std::string w = here + ".podCIDRs[" + std::to_string(i) + "]";
            appendUnique(p.podCIDRs, parsePodCIDR(scalar(cidrs[i], w), w));
        }
    }
    return p;
}

}  // namespace

PeerSet parsePeerFile(const std::string& text, const std::string& origin) {
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw Error("peer file " + origin + ": " + e.what());
    }
    YAML::Node list;
    if (root.IsNull()) {
        return {};
    } else if (root.IsSequence()) {
        list = root;
    } else if (root.IsMap()) {
        for (const auto& kv : root) {
            if (!kv.first.IsScalar() || kv.first.Scalar() != "peers") {
                throw Error("peer file " + origin + ": unknown top-level key (only 'peers' is allowed)");
            }
        }
        list = root["peers"];
        if (list.IsNull()) return {};
        if (!list.IsSequence()) throw Error("peer file " + origin + ": 'peers' must be a list");
    } else {
        throw Error("peer file " + origin + ": expected a list of peers or a 'peers:' mapping");
    }
    PeerSet out;
    std::set<std::string> ips;
    for (size_t i = 0; i < list.size(); ++i) {
        std::string where = "peer file " + origin + ": peers[" + std::to_string(i) + "]";
        Peer p = parseEntry(list[i], where);
        if (out.count(p.name)) throw Error(where + ": duplicate name '" + p.name + "'");
        if (!ips.insert(p.tunnelAddress()).second) throw Error(where + ": duplicate nodeIP " + p.tunnelAddress());
        out.emplace(p.name, std::move(p));
    }
    return out;
}

PeerSet readPeerFile(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw SystemError("peer file " + path + ": cannot open", errno);
    std::stringstream text;
    text << in.rdbuf();
    return parsePeerFile(text.str(), path);
}

}  // namespace kovs::peers
