#include "flows/FlowTable.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "base/Error.hpp"
#include "base/MacAddress.hpp"
#include "flows/FlowFields.hpp"
#include "flows/PolicyStage.hpp"

namespace kovs::flows {
namespace {

enum Table {
    kIngress = 0,
    kPodNeighbour = 5,
    kConntrack = 10,
    kConntrackState = 20,
    kEgressPolicy = 22,
    kIngressPolicy = 24,
    kCommit = 28,
    kForward = 30,
    kNeighbourReply = 31,
    kFromTunnel = 40,
    kTunnelDelivery = 41,
};

// ICMPv6 types of neighbour discovery (RFC 4861).
constexpr int kRouterAdvert = 134, kNeighbourSolicit = 135, kNeighbourAdvert = 136, kRedirect = 137;

// The tunnel header's fields of the underlay's family.
const char* tunSrc(const IpPrefix& underlay) { return underlay.family == AF_INET ? "tun_src" : "tun_ipv6_src"; }
const char* tunDst(const IpPrefix& underlay) { return underlay.family == AF_INET ? "tun_dst" : "tun_ipv6_dst"; }

// A pod whose row passed every check: the only shape a stage builds pod flows from.
struct Pod {
    std::string port;
    MacAddress mac;
    std::vector<IpPrefix> ips;  // host prefixes (/32, /128)
    std::optional<IpPrefix> linkLocal;  // with an IPv6 address: fe80::/64 EUI-64 of its MAC, what the kernel gives it
    int ofport = -1;
    std::vector<std::string> claims;  // its MAC and addresses as text: what no other pod may have

    // The IPv6 sources it may send from: its addresses and its link-local.
    std::vector<IpPrefix> ipv6Sources() const {
        std::vector<IpPrefix> out;
        for (const auto& ip : ips) {
            if (ip.family == AF_INET6) out.push_back(ip);
        }
        if (linkLocal) out.push_back(*linkLocal);
        return out;
    }
};

std::string macHex(const MacAddress& mac) {
    std::string hex = "0x";
    for (auto b : mac.bytes) hex += fmt::format("{:02x}", b);
    return hex;
}

// fe80::/64 with the modified EUI-64 interface identifier of `mac` (RFC 4291
// appendix A): the link-local address a Linux interface takes by default
// (addr_gen_mode eui64, which kovs-cni sets on the pod's interface).
IpPrefix eui64LinkLocal(const MacAddress& mac) {
    IpPrefix ll;
    ll.family = AF_INET6;
    ll.prefixLen = 128;
    ll.bytes[0] = 0xfe;
    ll.bytes[1] = 0x80;
    const auto& m = mac.bytes;
    std::array<uint8_t, 8> id{static_cast<uint8_t>(m[0] ^ 0x02), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
    std::copy(id.begin(), id.end(), ll.bytes.begin() + 8);
    return ll;
}

class Flows {
public:
    template <typename... Args>
    void add(int table, int priority, fmt::format_string<Args...> rest, Args&&... args) {
        lines_.push_back(fmt::format("table={},priority={},", table, priority) + fmt::format(rest, std::forward<Args>(args)...));
    }
    void addLine(std::string line) { lines_.push_back(std::move(line)); }
    std::string text() {
        std::sort(lines_.begin(), lines_.end());
        lines_.erase(std::unique(lines_.begin(), lines_.end()), lines_.end());
        std::string t;
        for (const auto& l : lines_) t += l + "\n";
        return t;
    }

private:
    std::vector<std::string> lines_;
};

// What every stage reads: the checked inputs.
struct Plan {
    int gw = -1, tun = -1;
    MacAddress gwMac;
    std::vector<IpPrefix> gateways;  // one per family, with the pod CIDR's length
    std::vector<Pod> pods;
    std::vector<FlowPeer> peers;  // pod CIDRs only of the families in `gateways`
    std::string toGateway;  // the action that hands a packet to the node's kernel

    const IpPrefix* gatewayOf(int family) const {
        for (const auto& g : gateways) {
            if (g.family == family) return &g;
        }
        return nullptr;
    }
    bool hasIPv6() const { return gatewayOf(AF_INET6) != nullptr; }
};

// One pod row's fields, checked; throws naming the port and the field.
Pod checkPod(const FlowPod& row, const Plan& plan) {
    const std::string name = "flow table: pod " + (row.port.empty() ? std::string("(no port name)") : row.port);
    Pod pod{row.port, {}, {}, std::nullopt, row.ofport, {}};
    auto mac = MacAddress::tryParse(row.mac);
    if (!mac) throw Error(name + ": not a MAC address: '" + row.mac + "'");
    if (mac->multicast() || mac->zero()) throw Error(name + ": not a unicast MAC address: " + mac->str());
    pod.mac = *mac;
    if (row.ofport <= 0) throw Error(name + ": no OpenFlow port yet");
    for (const auto& text : row.addresses) {
        IpPrefix ip;
        try {
            ip = IpPrefix::parse(text).host();
        } catch (const Error&) {
            throw Error(name + ": not an IP address: '" + text + "'");
        }
        const auto* gateway = plan.gatewayOf(ip.family);
        if (!gateway) throw Error(name + ": " + ip.addressString() + ": this node has no pod CIDR of its family");
        const auto local = gateway->network();
        if (!local.contains(ip)) throw Error(name + ": " + ip.addressString() + " is outside this node's pod CIDR " + local.str());
        if (ip == local.host() || ip == gateway->host())
            throw Error(name + ": " + ip.addressString() + " is the pod CIDR's " + (ip == local.host() ? "network" : "gateway") + " address");
        if (std::find(pod.ips.begin(), pod.ips.end(), ip) == pod.ips.end()) pod.ips.push_back(ip);
    }
    if (pod.ips.empty()) throw Error(name + ": no IP address");
    if (std::any_of(pod.ips.begin(), pod.ips.end(), [](const IpPrefix& ip) { return ip.family == AF_INET6; }))
        pod.linkLocal = eui64LinkLocal(pod.mac);
    pod.claims.push_back(pod.mac.str());
    for (const auto& ip : pod.ips) pod.claims.push_back(ip.addressString());
    return pod;
}

// The pods whose rows pass checkPod and claim no address or MAC that another
// row holds, or claims as well while nobody holds it.
std::vector<Pod> usablePods(const FlowInputs& in, const Plan& plan, FlowTable::Rendered& out) {
    std::vector<Pod> checked;
    for (const auto& row : in.pods) {
        try {
            checked.push_back(checkPod(row, plan));
        } catch (const Error& e) {
            out.skipped.push_back(e.what());
        }
    }
    std::map<std::string, std::vector<std::string>> claimants;  // address or MAC -> the ports that claim it, sorted
    for (const auto& p : checked) {
        for (const auto& k : p.claims) claimants[k].push_back(p.port);
    }
    for (auto& [_, ports] : claimants) std::sort(ports.begin(), ports.end());
    std::vector<Pod> pods;
    for (auto& p : checked) {
        std::string refused;
        for (const auto& k : p.claims) {
            const auto& ports = claimants[k];
            if (ports.size() < 2) continue;
            auto holder = in.holders.find(k);
            bool held = holder != in.holders.end() && std::find(ports.begin(), ports.end(), holder->second) != ports.end();
            if (held && holder->second == p.port) continue;
            refused = held ? fmt::format("{} is {}'s, which holds it", k, holder->second)
                           : fmt::format("{} is claimed by {}, and none holds it", k, fmt::join(ports, ", "));
        }
        if (!refused.empty()) {
            out.skipped.push_back("flow table: pod " + p.port + ": " + refused + ": refused");
            continue;
        }
        if (!p.port.empty()) out.ports.insert(p.port);
        for (const auto& k : p.claims) out.holders[k] = p.port;
        pods.push_back(std::move(p));
    }
    return pods;
}

// Table 0.
void ingress(Flows& f, const Plan& p) {
    f.add(kIngress, 200, "in_port={} actions=goto_table:{}", p.gw, kConntrack);
    for (const auto& peer : p.peers)
        f.add(kIngress, 200, "in_port={},{}={} actions=goto_table:{}", p.tun, tunSrc(peer.tunnelIP), peer.tunnelIP.addressString(),
              kConntrack);
    f.add(kIngress, 190, "cookie={:#x},in_port={} actions=drop", FlowTable::kCookieTunnelUnknownSource, p.tun);
    for (const auto& pod : p.pods) {
        const auto mac = pod.mac.str();
        for (const auto& ip : pod.ips) {
            if (ip.family != AF_INET) continue;
            const auto a = ip.addressString();
            f.add(kIngress, 200, "in_port={},dl_src={},ip,nw_src={} actions=goto_table:{}", pod.ofport, mac, a, kConntrack);
            f.add(kIngress, 200, "in_port={},dl_src={},arp,arp_spa={},arp_sha={} actions=goto_table:{}", pod.ofport, mac, a, mac,
                  kConntrack);
        }
        for (const auto& ip : pod.ipv6Sources())
            f.add(kIngress, 200, "in_port={},dl_src={},ipv6,ipv6_src={} actions=goto_table:{}", pod.ofport, mac, ip.addressString(),
                  kPodNeighbour);
        // Duplicate address detection of its link-local (the kernel's, from ::).
        if (pod.linkLocal)
            f.add(kIngress, 200, "in_port={},dl_src={},icmp6,icmp_type={},ipv6_src=:: actions=goto_table:{}", pod.ofport, mac,
                  kNeighbourSolicit, kPodNeighbour);
        f.add(kIngress, 190, "cookie={:#x},in_port={} actions=drop", FlowTable::kCookiePodSpoofed, pod.ofport);
    }
    f.add(kIngress, 0, "actions=drop");  // ports kovs knows nothing of (yet)
}

// Table 5: what a pod's IPv6 packets say about neighbours (addresses and MACs
// that other hosts' caches take from them) must be its own.
void podNeighbour(Flows& f, const Plan& p) {
    if (!p.hasIPv6()) return;
    constexpr const char* kNone = "00:00:00:00:00:00";  // no link-layer address option
    for (const auto& pod : p.pods) {
        const auto mac = pod.mac.str();
        for (const auto& ip : pod.ipv6Sources()) {
            const auto a = ip.addressString();
            for (const auto* lla : {mac.c_str(), kNone})
                f.add(kPodNeighbour, 200, "in_port={},icmp6,icmp_type={},nd_target={},nd_tll={} actions=goto_table:{}", pod.ofport,
                      kNeighbourAdvert, a, lla, kConntrack);
            f.add(kPodNeighbour, 210, "in_port={},icmp6,icmp_type={},ipv6_src=::,nd_target={},nd_sll={} actions=goto_table:{}",
                  pod.ofport, kNeighbourSolicit, a, kNone, kConntrack);
        }
        if (!pod.linkLocal) continue;
        f.add(kPodNeighbour, 205, "cookie={:#x},in_port={},icmp6,icmp_type={},ipv6_src=:: actions=drop", FlowTable::kCookiePodSpoofed,
              pod.ofport, kNeighbourSolicit);
        for (const auto* lla : {mac.c_str(), kNone})
            f.add(kPodNeighbour, 200, "in_port={},icmp6,icmp_type={},nd_sll={} actions=goto_table:{}", pod.ofport, kNeighbourSolicit, lla,
                  kConntrack);
    }
    for (int type : {kNeighbourSolicit, kNeighbourAdvert})
        f.add(kPodNeighbour, 190, "cookie={:#x},icmp6,icmp_type={} actions=drop", FlowTable::kCookiePodSpoofed, type);
    for (int type : {kRouterAdvert, kRedirect})
        f.add(kPodNeighbour, 190, "cookie={:#x},icmp6,icmp_type={} actions=drop", FlowTable::kCookiePodRouterMessage, type);
    f.add(kPodNeighbour, 0, "actions=goto_table:{}", kConntrack);
}

// Tables 10 and 20 (and 28), only where a reply of a kernel-forwarded
// connection can be, or a policy needs to know a new connection from a reply.
void conntrack(Flows& f, const Plan& p, bool serviceReplyPath, bool policy) {
    f.add(kConntrack, 0, "actions=goto_table:{}", kForward);
    if (!serviceReplyPath && !policy) return;
    const auto lookup = fmt::format("ct(table={},zone={})", kConntrackState, FlowTable::kCtZone);
    // Neighbour discovery is no connection: straight on.
    if (p.hasIPv6()) {
        for (int type : {kNeighbourSolicit, kNeighbourAdvert})
            f.add(kConntrack, 110, "icmp6,icmp_type={} actions=goto_table:{}", type, kForward);
    }
    // A new connection from the node's kernel is committed with a mark; with
    // a policy stage, after it (table 28), with every other new connection.
    const int commitTable = policy ? kCommit : kConntrackState;
    const int commitNext = kForward;
    for (const auto& gateway : p.gateways) {
        const auto x = fieldsOf(gateway.family);
        f.add(kConntrack, 100, "in_port={},{} actions={}", p.gw, x.proto, lookup);
        f.add(kConntrack, 100, "in_port={},{} actions={}", p.tun, x.proto, lookup);
        f.add(kConntrack, 90, "{},{}={} actions={}", x.proto, x.dst, gateway.network().str(), lookup);
        if (policy) {
            f.add(kConntrack, 80, "{} actions={}", x.proto, lookup);
            f.add(kCommit, 100, "ct_state=+new+trk,{} actions=ct(commit,zone={}),goto_table:{}", x.proto, FlowTable::kCtZone, commitNext);
        }
        if (serviceReplyPath) {
            f.add(commitTable, 200, "ct_state=+new+trk,in_port={},{} actions=ct(commit,zone={},exec(set_field:0x1/0x1->ct_mark)),goto_table:{}",
                  p.gw, x.proto, FlowTable::kCtZone, commitNext);
            f.add(kConntrackState, 190, "ct_state=+rpl+trk,ct_mark=0x1/0x1,{} actions={}", x.proto, p.toGateway);
        }
    }
    for (const auto& peer : p.peers) {
        for (const auto& cidr : peer.podCIDRs) {
            const auto x = fieldsOf(cidr.family);
            f.add(kConntrack, 90, "{},{}={} actions={}", x.proto, x.dst, cidr.str(), lookup);
        }
    }
    if (policy) {
        // From the tunnel only what table 40 will deliver is committed: a
        // forged inner source must leave no connection behind whose "replies"
        // would pass this node's egress policy unjudged.
        for (const auto& peer : p.peers) {
            const auto outer = fmt::format("{}={}", tunSrc(peer.tunnelIP), peer.tunnelIP.addressString());
            auto bound = [&](const IpPrefix& source) {
                if (!p.gatewayOf(source.family)) return;
                const auto x = fieldsOf(source.family);
                f.add(kCommit, 150, "ct_state=+new+trk,in_port={},{},{},{}={} actions=ct(commit,zone={}),goto_table:{}", p.tun, outer, x.proto,
                      x.src, matchValue(source), FlowTable::kCtZone, commitNext);
            };
            for (const auto& cidr : peer.podCIDRs) bound(cidr);
            for (const auto& ip : peer.nodeIPs) bound(ip.host());
        }
        f.add(kCommit, 140, "ct_state=+new+trk,in_port={} actions=goto_table:{}", p.tun, commitNext);
        // Only a new connection (or a packet conntrack finds invalid) is judged.
        for (const char* state : {"+est+trk", "+rel+trk"}) f.add(kConntrackState, 185, "ct_state={} actions=goto_table:{}", state, kForward);
        f.add(kConntrackState, 0, "actions=goto_table:{}", kEgressPolicy);
        f.add(kCommit, 0, "actions=goto_table:{}", kForward);
        return;
    }
    f.add(kConntrackState, 195, "in_port={} actions=goto_table:{}", p.gw, kForward);
    f.add(kConntrackState, 0, "actions=goto_table:{}", kForward);
}

// Tables 22 and 24.
void policyStage(Flows& f, const Plan& p, const FlowInputs& in) {
    PolicyStageInputs stage{kEgressPolicy, kIngressPolicy, kCommit, p.gw, {}, in.serviceCIDRs};
    for (const auto& g : p.gateways) stage.nodeAddresses.push_back(g.host());
    for (const auto& a : in.nodeAddresses) appendUnique(stage.nodeAddresses, a.host());
    for (const auto& pod : p.pods) {
        for (const auto& ip : pod.ips) stage.podPorts.emplace_back(ip, pod.ofport);
    }
    for (auto& line : renderPolicyStage(in.policy, stage)) f.addLine(std::move(line));
}

// Tables 30 and 31.
void forward(Flows& f, const Plan& p) {
    const auto gwMac = p.gwMac.str();
    f.add(kForward, 150, "in_port={} actions=goto_table:{}", p.tun, kFromTunnel);
    for (const auto& peer : p.peers) {
        for (const auto& cidr : peer.podCIDRs) {
            const auto x = fieldsOf(cidr.family);
            if (cidr.family == AF_INET) {
                // Answer the node kernel's ARP for any address of a peer's pod CIDR
                // with the gateway MAC: swap sender/target and reply out the same port.
                f.add(kForward, 200,
                      "arp,arp_op=1,arp_tpa={} actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:{}->eth_src,"
                      "load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],load:{}->NXM_NX_ARP_SHA[],"
                      "move:NXM_OF_ARP_TPA[]->NXM_NX_REG0[],move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],"
                      "move:NXM_NX_REG0[]->NXM_OF_ARP_SPA[],IN_PORT",
                      cidr.str(), gwMac, macHex(p.gwMac));
            } else {
                // The same for a neighbour solicitation: it becomes a solicited,
                // overriding advertisement from the target. OVS takes nd_tll only
                // in a flow that matches an advertisement, so table 31 sets it
                // after the message type has become one.
                f.add(kForward, 200,
                      "icmp6,icmp_type={},nd_target={} actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:{}->eth_src,"
                      "move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[],move:NXM_NX_ND_TARGET[]->NXM_NX_IPV6_SRC[],"
                      "set_field:{}->icmpv6_type,set_field:0x60000000->nd_reserved,set_field:2->nd_options_type,resubmit(,{})",
                      kNeighbourSolicit, cidr.str(), gwMac, kNeighbourAdvert, kNeighbourReply);
            }
            f.add(kForward, 100, "{},{}={} actions=set_field:{}->{},output:{}", x.proto, x.dst, cidr.str(), peer.tunnelIP.addressString(),
                  tunDst(peer.tunnelIP), p.tun);
        }
    }
    for (const auto& pod : p.pods) {
        auto deliver = [&](const IpPrefix& ip) {
            const auto x = fieldsOf(ip.family);
            f.add(kForward, 100, "{},{}={} actions=set_field:{}->eth_dst,output:{}", x.proto, x.dst, ip.addressString(), pod.mac.str(),
                  pod.ofport);
        };
        for (const auto& ip : pod.ips) deliver(ip);
        if (pod.linkLocal) deliver(*pod.linkLocal);
    }
    for (const auto& gateway : p.gateways)
        f.add(kForward, 50, "{} actions={}", fieldsOf(gateway.family).proto, p.toGateway);  // the node, Services, the world
    if (p.hasIPv6()) {
        for (int type : {kNeighbourSolicit, kNeighbourAdvert}) f.add(kForward, 60, "icmp6,icmp_type={} actions=NORMAL", type);
        f.add(kForward, 55, "ipv6,ipv6_dst=ff00::/8 actions=drop");  // other multicast stays on the link it was sent on
        f.add(kNeighbourReply, 100, "icmp6,icmp_type={} actions=set_field:{}->nd_tll,IN_PORT", kNeighbourAdvert, gwMac);
        f.add(kNeighbourReply, 0, "actions=drop");
    }
    f.add(kForward, 10, "arp actions=NORMAL");
    f.add(kForward, 0, "actions=drop");
}

// Tables 40 and 41.
void fromTunnel(Flows& f, const Plan& p) {
    for (const auto& peer : p.peers) {
        const auto outer = fmt::format("{}={}", tunSrc(peer.tunnelIP), peer.tunnelIP.addressString());
        for (const auto& cidr : peer.podCIDRs) {
            const auto x = fieldsOf(cidr.family);
            f.add(kFromTunnel, 100, "{},{},{}={} actions=goto_table:{}", outer, x.proto, x.src, cidr.str(), kTunnelDelivery);
        }
        for (const auto& ip : peer.nodeIPs) {
            if (!p.gatewayOf(ip.family)) continue;
            const auto x = fieldsOf(ip.family);
            f.add(kFromTunnel, 100, "{},{},{}={} actions={}", outer, x.proto, x.src, ip.addressString(), p.toGateway);
        }
    }
    f.add(kFromTunnel, 0, "cookie={:#x},actions=drop", FlowTable::kCookieTunnelForgedSource);
    for (const auto& pod : p.pods) {
        for (const auto& ip : pod.ips) {
            const auto x = fieldsOf(ip.family);
            f.add(kTunnelDelivery, 100, "{},{}={} actions=set_field:{}->eth_src,set_field:{}->eth_dst,output:{}", x.proto, x.dst,
                  ip.addressString(), p.gwMac.str(), pod.mac.str(), pod.ofport);
        }
    }
    // The gateway's own address (replies to the node), and pods without flows yet.
    for (const auto& gateway : p.gateways) {
        const auto x = fieldsOf(gateway.family);
        f.add(kTunnelDelivery, 90, "{},{}={} actions={}", x.proto, x.dst, gateway.network().str(), p.toGateway);
    }
    f.add(kTunnelDelivery, 0, "actions=drop");
}

}  // namespace

FlowTable::Rendered FlowTable::render(const FlowInputs& in) {
    Rendered out;
    Plan p;
    if (in.tunnelOfport <= 0) throw Error("flow table: tunnel port has no OpenFlow port yet");
    if (in.gateway.ofport <= 0) throw Error("flow table: gateway: no OpenFlow port yet");
    auto gwMac = MacAddress::tryParse(in.gateway.mac);
    if (!gwMac) throw Error("flow table: gateway: not a MAC address: '" + in.gateway.mac + "'");
    if (in.gatewayAddresses.empty()) throw Error("flow table: no gateway address (node.podCIDRs is empty)");
    for (const auto& g : in.gatewayAddresses) {
        if (p.gatewayOf(g.family)) throw Error("flow table: two gateway addresses of one family: " + joinPrefixes(in.gatewayAddresses));
        if (g.prefixLen == 0 || g.prefixLen >= g.maxPrefixLen() - 1)
            throw Error("flow table: gateway address " + g.str() + ": no pod CIDR around it");
        p.gateways.push_back(g);
    }
    for (const auto& peer : in.peers) {
        FlowPeer kept{peer.tunnelIP, {}, peer.nodeIPs};
        for (const auto& cidr : peer.podCIDRs) {
            if (p.gatewayOf(cidr.family)) kept.podCIDRs.push_back(cidr);
        }
        p.peers.push_back(std::move(kept));
    }
    p.gw = in.gateway.ofport;
    p.tun = in.tunnelOfport;
    p.gwMac = *gwMac;
    p.toGateway = fmt::format("set_field:{}->eth_dst,output:{}", p.gwMac.str(), p.gw);
    p.pods = usablePods(in, p, out);

    Flows f;
    ingress(f, p);
    podNeighbour(f, p);
    conntrack(f, p, in.serviceReplyPath, in.policy.active());
    if (in.policy.active()) policyStage(f, p, in);
    forward(f, p);
    fromTunnel(f, p);
    out.flows = f.text();
    return out;
}

std::map<std::string, std::string> FlowTable::holdersIn(const FlowDump& dump, const std::vector<FlowPod>& pods) {
    std::map<int, std::string> portAt;
    for (const auto& p : pods) portAt[p.ofport] = p.port;
    std::map<std::string, std::string> holders;
    std::istringstream lines(dump.flows);
    for (std::string line; std::getline(lines, line);) {
        // "cookie=0x0, table=0, priority=200,ip,in_port=7,dl_src=0a:58:0a:f4:01:05,nw_src=10.244.1.5 actions=goto_table:10"
        // (ipv6 and ipv6_src for IPv6; a pod's link-local comes along, which no pod claims)
        if (auto t = line.find("table="); t != std::string::npos && line.compare(t, 9, "table=0, ") != 0) continue;
        auto match = line.substr(0, line.find(" actions="));
        match = match.substr(match.rfind(", ") + 2);
        std::map<std::string, std::string> field;
        std::istringstream parts(match);
        for (std::string part; std::getline(parts, part, ',');) {
            auto eq = part.find('=');
            field[part.substr(0, eq)] = eq == std::string::npos ? "" : part.substr(eq + 1);
        }
        const char* src = field.count("ip") ? "nw_src" : field.count("ipv6") ? "ipv6_src" : nullptr;
        if (!src || !field.count("in_port") || !field.count("dl_src") || !field.count(src)) continue;
        int ofport = std::atoi(field["in_port"].c_str());
        auto port = portAt.find(ofport);
        if (port == portAt.end()) continue;
        holders[field[src]] = port->second;
        holders[field["dl_src"]] = port->second;
    }
    return holders;
}

const char* FlowTable::stageName(int table) {
    switch (table) {
        case kIngress: return "ingress: port and source check";
        case kPodNeighbour: return "a pod's neighbour discovery";
        case kConntrack: return "conntrack lookup";
        case kConntrackState: return "Services reply path";
        case kEgressPolicy: return "NetworkPolicy egress";
        case kIngressPolicy: return "NetworkPolicy ingress";
        case kCommit: return "conntrack commit";
        case kForward: return "L3 forwarding";
        case kNeighbourReply: return "neighbour reply";
        case kFromTunnel: return "from the tunnel: inner source check";
        case kTunnelDelivery: return "delivery from the tunnel";
    }
    return "";
}

}  // namespace kovs::flows
