#include "flows/PacketTrace.hpp"

#include <algorithm>

#include <fmt/format.h>

#include <regex>
#include <sstream>

#include "base/Error.hpp"
#include "base/Strings.hpp"
#include "flows/PolicyStage.hpp"

namespace kovs::flows {
namespace {

const FlowPod* localPod(const FlowInputs& in, const IpPrefix& address) {
    for (const auto& pod : in.pods) {
        for (const auto& a : pod.addresses) {
            try {
                if (IpPrefix::parse(a).host() == address) return &pod;
            } catch (const Error&) {
                // a malformed row: the render leaves it out, and so does the trace
            }
        }
    }
    return nullptr;
}

bool inLocalPodCidr(const FlowInputs& in, const IpPrefix& address) {
    for (const auto& g : in.gatewayAddresses) {
        if (g.network().contains(address)) return true;
    }
    return false;
}

bool isGateway(const FlowInputs& in, const IpPrefix& address) {
    for (const auto& g : in.gatewayAddresses) {
        if (g.host() == address) return true;
    }
    return false;
}

const FlowPeer* peerOwning(const FlowInputs& in, const IpPrefix& address) {
    for (const auto& peer : in.peers) {
        for (const auto& cidr : peer.podCIDRs) {
            if (cidr.contains(address)) return &peer;
        }
        for (const auto& ip : peer.nodeIPs) {
            if (ip.host() == address) return &peer;
        }
    }
    return nullptr;
}

std::string portName(const FlowInputs& in, int ofport) {
    if (ofport == in.gateway.ofport) return "gw0";
    if (ofport == in.tunnelOfport) return "the tunnel";
    for (const auto& pod : in.pods) {
        if (pod.ofport == ofport) return "pod " + (pod.podKey.empty() ? pod.port : pod.podKey) + " (port " + pod.port + ")";
    }
    return "port " + std::to_string(ofport);
}

std::string cookieMeaning(const FlowInputs& in, uint64_t cookie) {
    if (auto drop = policyDropOf(cookie)) {
        // The pod of that port, and the policies selecting any of its addresses.
        std::vector<IpPrefix> hosts;
        for (const auto& pod : in.pods) {
            if (pod.ofport != drop->ofport) continue;
            for (const auto& a : pod.addresses) hosts.push_back(IpPrefix::parse(a).host());
        }
        auto policies = policy::isolatingPolicies(in.policy, drop->ingress, hosts);
        if (!policies.empty())
            return fmt::format("dropped: the {} pod is isolated for {} (by {}) and no rule allows this", drop->ingress ? "destination" : "source",
                               drop->ingress ? "ingress" : "egress", join(std::vector<std::string>(policies.begin(), policies.end()), ", "));
    }
    switch (cookie & kCookieLowBits) {
        case FlowTable::kCookieTunnelUnknownSource: return "dropped: the tunnel packet's outer source is no known peer node";
        case FlowTable::kCookiePodSpoofed: return "dropped: not the pod's own MAC and address (anti-spoofing)";
        case FlowTable::kCookieTunnelForgedSource:
            return "dropped: the inner source is not the sending peer's pod CIDR or node address (forged)";
        case FlowTable::kCookiePodRouterMessage: return "dropped: a router advertisement or redirect from a pod";
        case kCookiePolicyIngressDrop: return "dropped: the destination pod is isolated for ingress and no rule allows this";
        case kCookiePolicyEgressDrop: return "dropped: the source pod is isolated for egress and no rule allows this";
        default: break;
    }
    if (cookie > kCookiePolicyRule && cookie - kCookiePolicyRule <= 0xffffffffu) {
        const auto id = static_cast<uint32_t>(cookie - kCookiePolicyRule);
        for (const auto& r : in.policy.rules) {
            if (r.id == id)
                return fmt::format("allowed by NetworkPolicy {}, {} rule {}", r.policy, r.ingress ? "ingress" : "egress", r.rule);
        }
        for (const auto& r : in.policy.admin) {
            if (r.id != id) continue;
            const char* verdict = r.action == policy::AdminAction::Allow ? "allowed"
                                  : r.action == policy::AdminAction::Deny ? "dropped"
                                                                          : "passed on to NetworkPolicy";
            return fmt::format("{} by {} {}, {} rule {}", verdict,
                               r.tier == policy::Tier::Admin ? "AdminNetworkPolicy" : "BaselineAdminNetworkPolicy", r.policy,
                               r.ingress ? "ingress" : "egress", r.rule);
        }
        return fmt::format("decided by policy rule {} (no longer in this agent's policy)", id);
    }
    return "";
}

}  // namespace

std::string traceFlow(const FlowInputs& in, const TracePacket& p) {
    if (p.from.family != p.to.family) throw Error("the source and the destination are of different address families");
    if (p.port < 1 || p.port > 65535) throw Error("port " + std::to_string(p.port) + " is not 1-65535");
    const bool v6 = p.from.family == AF_INET6;
    std::string entry;
    if (const auto* pod = localPod(in, p.from)) {
        entry = fmt::format("in_port={},dl_src={},dl_dst={}", pod->ofport, pod->mac, in.gateway.mac);
    } else if (inLocalPodCidr(in, p.from) && !isGateway(in, p.from)) {
        throw Error(p.from.addressString() + " is in this node's pod CIDR, but no pod on this node has it");
    } else if (const auto* peer = peerOwning(in, p.from)) {
        const bool toHere = localPod(in, p.to) || inLocalPodCidr(in, p.to);
        if (!toHere)
            throw Error(fmt::format("{} belongs to the node at {}: sent to {} it never enters this node's br-int; trace it there",
                                    p.from.addressString(), peer->tunnelIP.addressString(), p.to.addressString()));
        entry = fmt::format("in_port={},{}={}", in.tunnelOfport, peer->tunnelIP.family == AF_INET ? "tun_src" : "tun_ipv6_src",
                            peer->tunnelIP.addressString());
    } else {
        // This node itself, or what the node's kernel forwards (the world, a Service's translation).
        entry = fmt::format("in_port={},dl_src={}", in.gateway.ofport, in.gateway.mac);
    }
    std::string proto = policy::protocolName(p.protocol);
    for (auto& c : proto) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return fmt::format("{},{}{},{}={},{}={},tp_src=33333,tp_dst={}", entry, proto, v6 ? "6" : "", v6 ? "ipv6_src" : "nw_src",
                       p.from.addressString(), v6 ? "ipv6_dst" : "nw_dst", p.to.addressString(), p.port);
}

TraceExplained explainTrace(const std::string& text, const FlowInputs& in) {
    // " 0. ip,in_port=3,..., priority 100, cookie 0x6b02" (no match: " 0. priority 0, cookie ...").
    static const std::regex step(R"(^\s*(\d+)\. (?:(.*), )?priority (\d+)(?:, cookie (0x[0-9a-fA-F]+))?\s*$)");
    static const std::regex output(R"(^output:(\d+)$)");
    static const std::regex tunDst(R"(^set_field:([0-9a-fA-F.:]+)->tun(?:_ipv6)?_dst$)");
    TraceExplained out;
    std::string datapathActions;
    std::optional<int> outputPort;
    std::istringstream lines(text);
    std::string line;
    std::smatch m;
    bool inStep = false;
    while (std::getline(lines, line)) {
        if (std::regex_match(line, m, step)) {
            TraceStep s;
            s.table = std::stoi(m[1]);
            s.stage = stageName(s.table);
            s.match = m[2];
            s.priority = std::stoi(m[3]);
            if (m[4].matched) s.cookie = std::stoull(m[4], nullptr, 16);
            s.meaning = cookieMeaning(in, s.cookie);
            out.steps.push_back(std::move(s));
            inStep = true;
            continue;
        }
        if (line.rfind("Datapath actions: ", 0) == 0) datapathActions = line.substr(18);
        if (line.empty() || line[0] != ' ') {
            inStep = false;
            continue;
        }
        if (!inStep) continue;
        auto action = line.substr(line.find_first_not_of(' '));
        if (std::regex_match(action, m, output)) outputPort = std::stoi(m[1]);
        if (std::regex_match(action, m, tunDst)) out.tunnelPeer = IpPrefix::parse(m[1].str()).host();
        out.steps.back().actions.push_back(std::move(action));
    }
    if (out.steps.empty()) throw Error("not an ofproto/trace output: no table in it");
    const auto& last = out.steps.back();
    // A logged drop's flow has the controller action alone (flows/PolicyLog.hpp).
    const bool logOnly = !last.actions.empty() && std::all_of(last.actions.begin(), last.actions.end(), [](const std::string& a) {
        return a.rfind("controller(", 0) == 0 || a.rfind("CONTROLLER", 0) == 0;
    });
    const bool lastDrops = !last.actions.empty() && (last.actions.back() == "drop" || logOnly);
    if (lastDrops || datapathActions == "drop") {
        out.dropped = true;
        out.verdict = !last.meaning.empty() ? last.meaning
                                            : fmt::format("dropped in table {} ({})", last.table, last.stage.empty() ? "unknown" : last.stage);
        out.tunnelPeer.reset();
        return out;
    }
    if (!outputPort) {
        out.verdict = "datapath actions: " + datapathActions;
        return out;
    }
    if (*outputPort == in.tunnelOfport) {
        out.verdict = out.tunnelPeer ? "sent through the tunnel to the node at " + out.tunnelPeer->addressString()
                                     : std::string("sent through the tunnel");
    } else if (*outputPort == in.gateway.ofport) {
        out.verdict = "handed to this node's kernel through gw0 (the node, Services, the world)";
    } else {
        out.verdict = "delivered to " + portName(in, *outputPort);
    }
    return out;
}

}  // namespace kovs::flows
