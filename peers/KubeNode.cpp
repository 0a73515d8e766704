#include "peers/KubeNode.hpp"

#include "base/Error.hpp"
#include "kube/ApiPayload.hpp"

namespace kovs::peers {

using nlohmann::json;
using kube::member;
using kube::optionalMember;

const std::vector<std::string>& nodeFields() {
    static const std::vector<std::string> kFields{"creationTimestamp", "spec", "podCIDR", "podCIDRs",
                                                  "status",            "addresses", "address"};
    return kFields;
}

std::optional<Peer> peerFromNode(const json& node) {
    Peer p;
    const auto& meta = member(node, "metadata", json::value_t::object, "Node");
    p.name = member(meta, "name", json::value_t::string, "Node.metadata").get<std::string>();
    if (p.name.empty()) throw Error("Node.metadata.name: empty");
    std::string what = "Node " + p.name;
    if (auto* ts = optionalMember(meta, "creationTimestamp", json::value_t::string, what + ".metadata"))
        p.creationTimestamp = ts->get<std::string>();
    const json* spec = optionalMember(node, "spec", json::value_t::object, what);
    const json* status = optionalMember(node, "status", json::value_t::object, what);
    if (status) {
        if (auto* addrs = optionalMember(*status, "addresses", json::value_t::array, what + ".status")) {
            for (const auto& a : *addrs) {
                auto type = member(a, "type", json::value_t::string, what + ".status.addresses[]").get<std::string>();
                if (type != "InternalIP") continue;
                auto addr = member(a, "address", json::value_t::string, what + ".status.addresses[]").get<std::string>();
                auto ip = parseNodeIP(addr, what + " InternalIP");
                if (auto* same = p.nodeIP(ip.family); same && !(*same == ip))
                    throw Error(what + ": two InternalIPs of one family (" + same->addressString() + ", " +
                                ip.addressString() + ")");
                appendUnique(p.nodeIPs, ip);
            }
        }
    }
    if (p.nodeIPs.empty()) return std::nullopt;
    if (spec) {
        if (auto* cidrs = optionalMember(*spec, "podCIDRs", json::value_t::array, what + ".spec")) {
            for (const auto& c : *cidrs) {
                if (!c.is_string()) throw Error(what + ".spec.podCIDRs[]: expected a string");
                appendUnique(p.podCIDRs, parsePodCIDR(c.get<std::string>(), what + ".spec.podCIDRs"));
            }
        } else if (auto* cidr = optionalMember(*spec, "podCIDR", json::value_t::string, what + ".spec")) {
            p.podCIDRs.push_back(parsePodCIDR(cidr->get<std::string>(), what + ".spec.podCIDR"));
        }
    }
    return p;
}

}  // namespace kovs::peers
