#include "agent/TraceCommand.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/Error.hpp"
#include "flows/PacketTrace.hpp"

namespace kovs::agent {
namespace {

struct End {
    std::string given;
    std::string pod;                 // "namespace/name" when a pod
    std::string node;                // the pod's node, where the API tells it
    std::vector<IpPrefix> addresses; // host addresses, its families
};

End resolve(const TraceTargets& t, const flows::FlowInputs& in, const std::string& given) {
    End e{given, "", {}};
    if (given.find('/') == std::string::npos) {
        try {
            auto a = IpPrefix::parse(given);
            if (a.prefixLen != a.maxPrefixLen()) throw Error("a prefix");
            e.addresses.push_back(a);
            return e;
        } catch (const Error&) {
            throw Error("trace: '" + given + "' is neither a pod (namespace/name) nor an address");
        }
    }
    e.pod = given;
    if (t.policy) {
        if (const auto* pod = t.policy->pod(given)) {
            if (pod->hostNetwork) throw Error("trace: " + given + " is a hostNetwork pod: trace its node's address instead");
            e.addresses = pod->ips;
            e.node = pod->nodeName;
        } else {
            throw Error("trace: no pod " + given + " in the Kubernetes API");
        }
    } else {
        for (const auto& pod : in.pods) {
            if (pod.podKey != given) continue;
            for (const auto& a : pod.addresses) {
                try {
                    e.addresses.push_back(IpPrefix::parse(a).host());
                } catch (const Error&) {
                }
            }
        }
        if (e.addresses.empty())
            throw Error("trace: no pod " + given + " on this node (pods of other nodes are known only where NetworkPolicy is "
                        "enforced: give their address)");
    }
    if (e.addresses.empty()) throw Error("trace: " + given + " has no address yet");
    return e;
}

std::optional<IpPrefix> ofFamily(const End& e, int family) {
    for (const auto& a : e.addresses) {
        if (a.family == family) return a;
    }
    return std::nullopt;
}

// The family asked for, else IPv4 where both ends have it, else IPv6.
int familyOf(const End& from, const End& to, int asked) {
    if (asked) {
        const int f = asked == 6 ? AF_INET6 : AF_INET;
        for (const auto* e : {&from, &to}) {
            if (!ofFamily(*e, f)) throw Error(fmt::format("trace: {} has no IPv{} address", e->given, asked));
        }
        return f;
    }
    for (int f : {AF_INET, AF_INET6}) {
        if (ofFamily(from, f) && ofFamily(to, f)) return f;
    }
    throw Error("trace: " + from.given + " and " + to.given + " have no address family in common");
}

nlohmann::json endJson(const End& e, const IpPrefix& address) {
    nlohmann::json j{{"given", e.given}, {"address", address.addressString()}};
    if (!e.pod.empty()) j["pod"] = e.pod;
    if (!e.node.empty()) j["node"] = e.node;
    return j;
}

}  // namespace

void traceCommand(const TraceTargets& t, const nlohmann::json& req, const StatusServer::Reply& reply) {
    if (!t.flows) throw Error("trace: this node has no flow table of kovs's (companion mode): the other CNI owns br-int");
    if (!t.vswitchd) throw Error("trace: no connection to ovs-vswitchd on this node");
    auto from = req.value("from", ""), to = req.value("to", "");
    if (from.empty() || to.empty()) throw Error("trace: 'from' and 'to' are required");
    auto protocolText = req.value("protocol", "TCP");
    flows::TracePacket packet;
    if (protocolText == "TCP") packet.protocol = policy::Protocol::TCP;
    else if (protocolText == "UDP") packet.protocol = policy::Protocol::UDP;
    else if (protocolText == "SCTP") packet.protocol = policy::Protocol::SCTP;
    else throw Error("trace: protocol must be TCP, UDP or SCTP, got '" + protocolText + "'");
    packet.port = req.value("port", 80);
    const int asked = req.value("family", 0);
    if (asked != 0 && asked != 4 && asked != 6) throw Error("trace: family must be 4 or 6");

    auto in = t.flows->currentInputs();
    auto src = resolve(t, in, from), dst = resolve(t, in, to);
    const int family = familyOf(src, dst, asked);
    packet.from = *ofFamily(src, family);
    packet.to = *ofFamily(dst, family);
    auto flow = flows::traceFlow(in, packet);
    nlohmann::json head{{"node", t.node},
                        {"from", endJson(src, packet.from)},
                        {"to", endJson(dst, packet.to)},
                        {"protocol", protocolText},
                        {"port", packet.port},
                        {"bridge", t.flows->bridge()},
                        {"packet", flow}};
    t.vswitchd->pipeline({{"ofproto/trace", {t.flows->bridge(), flow, "--ct-next", "trk,new"}}},
                         [reply, head = std::move(head), in = std::move(in)](ovs::UnixctlReplies r) mutable {
                             const auto& answer = r.replies.at(0);
                             if (!answer.ok) {
                                 reply({{"error", "ofproto/trace: " + answer.text}});
                                 return;
                             }
                             head["ofproto"] = answer.text;
                             try {
                                 auto e = flows::explainTrace(answer.text, in);
                                 auto& steps = head["steps"] = nlohmann::json::array();
                                 for (const auto& s : e.steps) {
                                     steps.push_back({{"table", s.table}, {"stage", s.stage}, {"match", s.match},
                                                      {"priority", s.priority}, {"cookie", fmt::format("{:#x}", s.cookie)},
                                                      {"meaning", s.meaning}, {"actions", s.actions}});
                                 }
                                 head["dropped"] = e.dropped;
                                 head["verdict"] = e.verdict;
                                 if (e.tunnelPeer) head["tunnelPeer"] = e.tunnelPeer->addressString();
                             } catch (const Error& e) {
                                 head["error"] = e.what();
                             }
                             reply(head);
                         });
}

}  // namespace kovs::agent
