#include "peers/kube/KubeNode.hpp"

#include <algorithm>

#include "base/Error.hpp"

namespace kovs::peers {
namespace {

using nlohmann::json;

const json& member(const json& obj, const char* key, json::value_t type, const std::string& what) {
    if (!obj.is_object()) throw Error(what + ": expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) throw Error(what + ": missing '" + key + "'");
    if (it->type() != type) throw Error(what + "." + key + ": wrong JSON type");
    return *it;
}

const json* optionalMember(const json& obj, const char* key, json::value_t type, const std::string& what) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    if (it->type() != type) throw Error(what + "." + key + ": wrong JSON type");
    return &*it;
}

std::string nodeName(const json& node) {
    const auto& meta = member(node, "metadata", json::value_t::object, "Node");
    auto name = member(meta, "name", json::value_t::string, "Node.metadata").get<std::string>();
    if (name.empty()) throw Error("Node.metadata.name: empty");
    return name;
}

// The members of a NodeList that peerFromNode and parseNodeList read; every
// other member is dropped, with all it holds, while parsing. A kind-shaped
// Node is ~5 KiB of JSON (managedFields, images, conditions, labels), and its
// full DOM several times that: at 100 nodes the parse alone took megabytes,
// and the few peer strings made in the middle of it kept those pages
// resident after it was freed (docs/benchmarks.md, "Agent footprint").
bool nodeListMemberUsed(const std::string& key) {
    static const char* const kUsed[] = {"kind",   "metadata",  "items",  "name",      "resourceVersion", "spec",
                                        "podCIDR", "podCIDRs", "status", "addresses", "type",            "address"};
    return std::any_of(std::begin(kUsed), std::end(kUsed), [&](const char* k) { return key == k; });
}

std::string resourceVersionOf(const json& obj, const std::string& what) {
    const auto& meta = member(obj, "metadata", json::value_t::object, what);
    auto* rv = optionalMember(meta, "resourceVersion", json::value_t::string, what + ".metadata");
    return rv ? rv->get<std::string>() : "";
}

}  // namespace

std::optional<Peer> peerFromNode(const json& node) {
    Peer p;
    p.name = nodeName(node);
    std::string what = "Node " + p.name;
    const json* spec = optionalMember(node, "spec", json::value_t::object, what);
    const json* status = optionalMember(node, "status", json::value_t::object, what);
    if (status) {
        if (auto* addrs = optionalMember(*status, "addresses", json::value_t::array, what + ".status")) {
            for (const auto& a : *addrs) {
                auto type = member(a, "type", json::value_t::string, what + ".status.addresses[]").get<std::string>();
                if (type != "InternalIP") continue;
                auto addr = member(a, "address", json::value_t::string, what + ".status.addresses[]").get<std::string>();
                p.nodeIP = canonicalIP(addr, what + " InternalIP");
                break;
            }
        }
    }
    if (p.nodeIP.empty()) return std::nullopt;
    if (spec) {
        if (auto* cidrs = optionalMember(*spec, "podCIDRs", json::value_t::array, what + ".spec")) {
            for (const auto& c : *cidrs) {
                if (!c.is_string()) throw Error(what + ".spec.podCIDRs[]: expected a string");
                p.podCIDRs.push_back(canonicalCIDR(c.get<std::string>(), what + ".spec.podCIDRs"));
            }
        } else if (auto* cidr = optionalMember(*spec, "podCIDR", json::value_t::string, what + ".spec")) {
            p.podCIDRs.push_back(canonicalCIDR(cidr->get<std::string>(), what + ".spec.podCIDR"));
        }
    }
    std::sort(p.podCIDRs.begin(), p.podCIDRs.end());
    p.podCIDRs.erase(std::unique(p.podCIDRs.begin(), p.podCIDRs.end()), p.podCIDRs.end());
    return p;
}

NodeList parseNodeList(const std::string& body, const std::string& skipNode) {
    json doc = json::parse(body, [](int, json::parse_event_t event, json& parsed) {
        return event != json::parse_event_t::key || nodeListMemberUsed(parsed.get_ref<const std::string&>());
    }, false);
    if (doc.is_discarded()) throw Error("NodeList: response is not valid JSON");
    auto kind = doc.is_object() ? doc.find("kind") : doc.end();
    if (kind == doc.end() || *kind != "NodeList") throw Error("NodeList: response is not a NodeList");
    NodeList out;
    out.resourceVersion = resourceVersionOf(doc, "NodeList");
    if (out.resourceVersion.empty()) throw Error("NodeList: missing metadata.resourceVersion");
    const json* items = optionalMember(doc, "items", json::value_t::array, "NodeList");
    if (!items) return out;
    for (const auto& item : *items) {
        auto peer = peerFromNode(item);
        if (peer && peer->name != skipNode) out.peers[peer->name] = std::move(*peer);
    }
    return out;
}

WatchEvent parseWatchEvent(const std::string& line) {
    json doc = json::parse(line, nullptr, false);
    if (doc.is_discarded()) throw Error("watch event: not valid JSON");
    auto type = member(doc, "type", json::value_t::string, "watch event").get<std::string>();
    const auto& obj = member(doc, "object", json::value_t::object, "watch event");
    WatchEvent ev{};
    if (type == "ERROR") {
        ev.type = WatchEvent::Type::Error;
        auto code = obj.find("code");
        ev.errorCode = code != obj.end() && code->is_number_integer() ? code->get<int>() : 0;
        auto msg = obj.find("message");
        ev.errorMessage = msg != obj.end() && msg->is_string() ? msg->get<std::string>() : "";
        return ev;
    }
    if (type == "ADDED") {
        ev.type = WatchEvent::Type::Added;
    } else if (type == "MODIFIED") {
        ev.type = WatchEvent::Type::Modified;
    } else if (type == "DELETED") {
        ev.type = WatchEvent::Type::Deleted;
    } else if (type == "BOOKMARK") {
        ev.type = WatchEvent::Type::Bookmark;
    } else {
        throw Error("watch event: unknown type '" + type + "'");
    }
    ev.resourceVersion = resourceVersionOf(obj, "watch event object");
    if (ev.resourceVersion.empty()) throw Error("watch event " + type + ": missing metadata.resourceVersion");
    if (ev.type == WatchEvent::Type::Bookmark) return ev;
    ev.nodeName = nodeName(obj);
    if (ev.type != WatchEvent::Type::Deleted) ev.peer = peerFromNode(obj);
    return ev;
}

}  // namespace kovs::peers
