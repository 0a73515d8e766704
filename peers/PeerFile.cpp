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
    if (!e.IsMap()) throw Error(where + ": expected a mapping with name, nodeIP (or nodeIPs), podCIDRs");
    Peer p;
    for (const auto& kv : e) {
        std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "<non-scalar>";
        if (key != "name" && key != "nodeIP" && key != "nodeIPs" && key != "podCIDRs") {
            throw Error(where + ": unknown key '" + key + "'");
        }
    }
    p.name = scalar(e["name"], where + ".name");
    if (p.name.empty()) throw Error(where + ".name: must not be empty");
    std::string here = where + " (" + p.name + ")";
    // nodeIP, or nodeIPs as a dual-stack Node's InternalIPs: one per family,
    // the tunnel's first.
    if (e["nodeIP"] && e["nodeIPs"]) throw Error(here + ": nodeIP and nodeIPs both given (one of them)");
    if (auto ips = e["nodeIPs"]) {
        if (!ips.IsSequence() || ips.size() == 0) throw Error(here + ".nodeIPs: expected a list of addresses, one per family");
        for (size_t i = 0; i < ips.size(); ++i) {
            std::string w = here + ".nodeIPs[" + std::to_string(i) + "]";
            auto ip = parseNodeIP(scalar(ips[i], w), w);
            if (auto* same = p.nodeIP(ip.family))
                throw Error(w + ": a second address of one family (" + same->addressString() + ", " + ip.addressString() + ")");
            p.nodeIPs.push_back(ip);
        }
    } else {
        p.nodeIPs.push_back(parseNodeIP(scalar(e["nodeIP"], here + ".nodeIP"), here + ".nodeIP"));
    }
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
        for (const auto& ip : p.nodeIPs)
            if (!ips.insert(ip.addressString()).second) throw Error(where + ": duplicate nodeIP " + ip.addressString());
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
