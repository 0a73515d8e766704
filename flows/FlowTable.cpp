#include "flows/FlowTable.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "base/Error.hpp"
#include "base/MacAddress.hpp"
#include "flows/Flow.hpp"
#include "flows/FlowFields.hpp"
#include "flows/PodRows.hpp"
#include "flows/PolicyStage.hpp"

namespace kovs::flows {
namespace {

// ICMPv6 types of neighbour discovery (RFC 4861).
constexpr int kRouterAdvert = 134, kNeighbourSolicit = 135, kNeighbourAdvert = 136, kRedirect = 137;

// The tunnel header's fields of the underlay's family.
const char* tunSrc(const IpPrefix& underlay) { return underlay.family == AF_INET ? "tun_src" : "tun_ipv6_src"; }
const char* tunDst(const IpPrefix& underlay) { return underlay.family == AF_INET ? "tun_dst" : "tun_ipv6_dst"; }

std::string macHex(const MacAddress& mac) {
    std::string hex = "0x";
    for (auto b : mac.bytes) hex += fmt::format("{:02x}", b);
    return hex;
}

// The table as the stages build it.
struct Flows {
    std::vector<Flow> all;
    void add(Table table, int priority, std::string match, std::string actions, uint64_t cookie = 0) {
        all.push_back({table, priority, cookie, std::move(match), std::move(actions)});
    }
};

// What every stage reads: the checked inputs.
struct Plan {
    int gw = -1, tun = -1;
    MacAddress gwMac;
    std::vector<IpPrefix> gateways;  // one per family, with the pod CIDR's length
    std::vector<Pod> pods;
    std::vector<FlowPeer> peers;  // pod CIDRs only of the families in `gateways`
    std::string toGateway;  // the action that hands a packet to the node's kernel

    const IpPrefix* gatewayOf(int family) const { return flows::gatewayOf(gateways, family); }
    bool hasIPv6() const { return gatewayOf(AF_INET6) != nullptr; }
};

// Table 0.
void ingress(Flows& f, const Plan& p) {
    const auto next = gotoTable(Table::Conntrack);
    f.add(Table::Ingress, 200, fmt::format("in_port={}", p.gw), next);
    for (const auto& peer : p.peers)
        f.add(Table::Ingress, 200, fmt::format("in_port={},{}={}", p.tun, tunSrc(peer.tunnelIP), peer.tunnelIP.addressString()), next);
    f.add(Table::Ingress, 190, fmt::format("in_port={}", p.tun), "drop", FlowTable::kCookieTunnelUnknownSource);
    for (const auto& pod : p.pods) {
        const auto mac = pod.mac.str();
        for (const auto& ip : pod.ips) {
            if (ip.family != AF_INET) continue;
            const auto a = ip.addressString();
            f.add(Table::Ingress, 200, fmt::format("in_port={},dl_src={},ip,nw_src={}", pod.ofport, mac, a), next);
            f.add(Table::Ingress, 200, fmt::format("in_port={},dl_src={},arp,arp_spa={},arp_sha={}", pod.ofport, mac, a, mac), next);
        }
        for (const auto& ip : pod.ipv6Sources())
            f.add(Table::Ingress, 200, fmt::format("in_port={},dl_src={},ipv6,ipv6_src={}", pod.ofport, mac, ip.addressString()),
                  gotoTable(Table::PodNeighbour));
        // Duplicate address detection of its link-local (the kernel's, from ::).
        if (pod.linkLocal)
            f.add(Table::Ingress, 200, fmt::format("in_port={},dl_src={},icmp6,icmp_type={},ipv6_src=::", pod.ofport, mac, kNeighbourSolicit),
                  gotoTable(Table::PodNeighbour));
        f.add(Table::Ingress, 190, fmt::format("in_port={}", pod.ofport), "drop", FlowTable::kCookiePodSpoofed);
    }
    f.add(Table::Ingress, 0, "", "drop");  // ports kovs knows nothing of (yet)
}

// Table 5: what a pod's IPv6 packets say about neighbours (addresses and MACs
// that other hosts' caches take from them) must be its own.
void podNeighbour(Flows& f, const Plan& p) {
    if (!p.hasIPv6()) return;
    constexpr const char* kNone = "00:00:00:00:00:00";  // no link-layer address option
    const auto next = gotoTable(Table::Conntrack);
    for (const auto& pod : p.pods) {
        const auto mac = pod.mac.str();
        for (const auto& ip : pod.ipv6Sources()) {
            const auto a = ip.addressString();
            for (const auto* lla : {mac.c_str(), kNone})
                f.add(Table::PodNeighbour, 200,
                      fmt::format("in_port={},icmp6,icmp_type={},nd_target={},nd_tll={}", pod.ofport, kNeighbourAdvert, a, lla), next);
            f.add(Table::PodNeighbour, 210,
                  fmt::format("in_port={},icmp6,icmp_type={},ipv6_src=::,nd_target={},nd_sll={}", pod.ofport, kNeighbourSolicit, a, kNone),
                  next);
        }
        if (!pod.linkLocal) continue;
        f.add(Table::PodNeighbour, 205, fmt::format("in_port={},icmp6,icmp_type={},ipv6_src=::", pod.ofport, kNeighbourSolicit), "drop",
              FlowTable::kCookiePodSpoofed);
        for (const auto* lla : {mac.c_str(), kNone})
            f.add(Table::PodNeighbour, 200, fmt::format("in_port={},icmp6,icmp_type={},nd_sll={}", pod.ofport, kNeighbourSolicit, lla), next);
    }
    for (int type : {kNeighbourSolicit, kNeighbourAdvert})
        f.add(Table::PodNeighbour, 190, fmt::format("icmp6,icmp_type={}", type), "drop", FlowTable::kCookiePodSpoofed);
    for (int type : {kRouterAdvert, kRedirect})
        f.add(Table::PodNeighbour, 190, fmt::format("icmp6,icmp_type={}", type), "drop", FlowTable::kCookiePodRouterMessage);
    f.add(Table::PodNeighbour, 0, "", next);
}

// Tables 10 and 20 (and 28), only where a reply of a kernel-forwarded
// connection can be, or a policy needs to know a new connection from a reply.
void conntrack(Flows& f, const Plan& p, bool serviceReplyPath, bool policy) {
    const auto forward = gotoTable(Table::Forward);
    f.add(Table::Conntrack, 0, "", forward);
    if (!serviceReplyPath && !policy) return;
    const auto lookup = fmt::format("ct(table={},zone={})", number(Table::ConntrackState), FlowTable::kCtZone);
    const auto commit = fmt::format("ct(commit,zone={}),{}", FlowTable::kCtZone, forward);
    // Neighbour discovery is no connection: straight on.
    if (p.hasIPv6()) {
        for (int type : {kNeighbourSolicit, kNeighbourAdvert})
            f.add(Table::Conntrack, 110, fmt::format("icmp6,icmp_type={}", type), forward);
    }
    // A new connection from the node's kernel is committed with a mark; with
    // a policy stage, after it (Table::Commit), with every other new connection.
    const Table commitTable = policy ? Table::Commit : Table::ConntrackState;
    for (const auto& gateway : p.gateways) {
        const auto x = fieldsOf(gateway.family);
        f.add(Table::Conntrack, 100, fmt::format("in_port={},{}", p.gw, x.proto), lookup);
        f.add(Table::Conntrack, 100, fmt::format("in_port={},{}", p.tun, x.proto), lookup);
        f.add(Table::Conntrack, 90, fmt::format("{},{}={}", x.proto, x.dst, gateway.network().str()), lookup);
        if (policy) {
            f.add(Table::Conntrack, 80, x.proto, lookup);
            f.add(Table::Commit, 100, fmt::format("ct_state=+new+trk,{}", x.proto), commit);
        }
        if (serviceReplyPath) {
            f.add(commitTable, 200, fmt::format("ct_state=+new+trk,in_port={},{}", p.gw, x.proto),
                  fmt::format("ct(commit,zone={},exec({})),{}", FlowTable::kCtZone, setMark(CtMark::FromGateway), forward));
            f.add(Table::ConntrackState, 190, fmt::format("ct_state=+rpl+trk,{},{}", matchMark(CtMark::FromGateway), x.proto), p.toGateway);
        }
    }
    for (const auto& peer : p.peers) {
        for (const auto& cidr : peer.podCIDRs) {
            const auto x = fieldsOf(cidr.family);
            f.add(Table::Conntrack, 90, fmt::format("{},{}={}", x.proto, x.dst, cidr.str()), lookup);
        }
    }
    if (policy) {
        // From the tunnel only what Table::FromTunnel will deliver is committed: a
        // forged inner source must leave no connection behind whose "replies"
        // would pass this node's egress policy unjudged.
        for (const auto& peer : p.peers) {
            const auto outer = fmt::format("{}={}", tunSrc(peer.tunnelIP), peer.tunnelIP.addressString());
            auto bound = [&](const IpPrefix& source) {
                if (!p.gatewayOf(source.family)) return;
                const auto x = fieldsOf(source.family);
                f.add(Table::Commit, 150, fmt::format("ct_state=+new+trk,in_port={},{},{},{}={}", p.tun, outer, x.proto, x.src, matchValue(source)),
                      commit);
            };
            for (const auto& cidr : peer.podCIDRs) bound(cidr);
            for (const auto& ip : peer.nodeIPs) bound(ip.host());
        }
        f.add(Table::Commit, 140, fmt::format("ct_state=+new+trk,in_port={}", p.tun), forward);
        // Only a new connection (or a packet conntrack finds invalid) is judged.
        for (const char* state : {"+est+trk", "+rel+trk"}) f.add(Table::ConntrackState, 185, fmt::format("ct_state={}", state), forward);
        f.add(Table::ConntrackState, 0, "", gotoTable(Table::PolicySources));
        f.add(Table::Commit, 0, "", forward);
        return;
    }
    f.add(Table::ConntrackState, 195, fmt::format("in_port={}", p.gw), forward);
    f.add(Table::ConntrackState, 0, "", forward);
}

// Tables 21 to 28.
void policyStage(Flows& f, const Plan& p, const FlowInputs& in) {
    PolicyStageInputs stage{p.gw, {}, in.serviceCIDRs, {}, in.adminSetBits, in.policyLogging};
    for (const auto& g : p.gateways) stage.nodeAddresses.push_back(g.host());
    for (const auto& a : in.nodeAddresses) appendUnique(stage.nodeAddresses, a.host());
    for (const auto& pod : p.pods) {
        for (const auto& ip : pod.ips) stage.podPorts.emplace_back(ip, pod.ofport);
    }
    for (auto& flow : renderPolicyStage(in.policy, stage)) f.all.push_back(std::move(flow));
}

// The node kernel's ARP for an address of a peer's pod CIDR, answered with
// the gateway MAC: sender and target swapped, out the port it came in on.
std::string arpReply(const MacAddress& gwMac) {
    const auto scratch = field(Reg::Scratch);
    return fmt::format("move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:{}->eth_src,load:0x2->NXM_OF_ARP_OP[],"
                       "move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],load:{}->NXM_NX_ARP_SHA[],move:NXM_OF_ARP_TPA[]->{},"
                       "move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],move:{}->NXM_OF_ARP_SPA[],IN_PORT",
                       gwMac.str(), macHex(gwMac), scratch, scratch);
}

// The same for a neighbour solicitation: it becomes a solicited, overriding
// advertisement from the target. OVS takes nd_tll only in a flow that
// matches an advertisement, so table 31 sets it after the message type has
// become one.
std::string neighbourReply(const MacAddress& gwMac) {
    return fmt::format("move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:{}->eth_src,move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[],"
                       "move:NXM_NX_ND_TARGET[]->NXM_NX_IPV6_SRC[],set_field:{}->icmpv6_type,set_field:0x60000000->nd_reserved,"
                       "set_field:2->nd_options_type,{}",
                       gwMac.str(), kNeighbourAdvert, resubmit(Table::NeighbourReply));
}

// Tables 30 and 31.
void forward(Flows& f, const Plan& p) {
    f.add(Table::Forward, 150, fmt::format("in_port={}", p.tun), gotoTable(Table::FromTunnel));
    for (const auto& peer : p.peers) {
        for (const auto& cidr : peer.podCIDRs) {
            const auto x = fieldsOf(cidr.family);
            if (cidr.family == AF_INET) {
                f.add(Table::Forward, 200, fmt::format("arp,arp_op=1,arp_tpa={}", cidr.str()), arpReply(p.gwMac));
            } else {
                f.add(Table::Forward, 200, fmt::format("icmp6,icmp_type={},nd_target={}", kNeighbourSolicit, cidr.str()), neighbourReply(p.gwMac));
            }
            f.add(Table::Forward, 100, fmt::format("{},{}={}", x.proto, x.dst, cidr.str()),
                  fmt::format("set_field:{}->{},output:{}", peer.tunnelIP.addressString(), tunDst(peer.tunnelIP), p.tun));
        }
    }
    for (const auto& pod : p.pods) {
        auto deliver = [&](const IpPrefix& ip) {
            const auto x = fieldsOf(ip.family);
            f.add(Table::Forward, 100, fmt::format("{},{}={}", x.proto, x.dst, ip.addressString()),
                  fmt::format("set_field:{}->eth_dst,output:{}", pod.mac.str(), pod.ofport));
        };
        for (const auto& ip : pod.ips) deliver(ip);
        if (pod.linkLocal) deliver(*pod.linkLocal);
    }
    for (const auto& gateway : p.gateways)
        f.add(Table::Forward, 50, fieldsOf(gateway.family).proto, p.toGateway);  // the node, Services, the world
    if (p.hasIPv6()) {
        for (int type : {kNeighbourSolicit, kNeighbourAdvert}) f.add(Table::Forward, 60, fmt::format("icmp6,icmp_type={}", type), "NORMAL");
        f.add(Table::Forward, 55, "ipv6,ipv6_dst=ff00::/8", "drop");  // other multicast stays on the link it was sent on
        f.add(Table::NeighbourReply, 100, fmt::format("icmp6,icmp_type={}", kNeighbourAdvert),
              fmt::format("set_field:{}->nd_tll,IN_PORT", p.gwMac.str()));
        f.add(Table::NeighbourReply, 0, "", "drop");
    }
    f.add(Table::Forward, 10, "arp", "NORMAL");
    f.add(Table::Forward, 0, "", "drop");
}

// Tables 40 and 41.
void fromTunnel(Flows& f, const Plan& p) {
    for (const auto& peer : p.peers) {
        const auto outer = fmt::format("{}={}", tunSrc(peer.tunnelIP), peer.tunnelIP.addressString());
        for (const auto& cidr : peer.podCIDRs) {
            const auto x = fieldsOf(cidr.family);
            f.add(Table::FromTunnel, 100, fmt::format("{},{},{}={}", outer, x.proto, x.src, cidr.str()), gotoTable(Table::TunnelDelivery));
        }
        for (const auto& ip : peer.nodeIPs) {
            if (!p.gatewayOf(ip.family)) continue;
            const auto x = fieldsOf(ip.family);
            f.add(Table::FromTunnel, 100, fmt::format("{},{},{}={}", outer, x.proto, x.src, ip.addressString()), p.toGateway);
        }
    }
    f.add(Table::FromTunnel, 0, "", "drop", FlowTable::kCookieTunnelForgedSource);
    for (const auto& pod : p.pods) {
        for (const auto& ip : pod.ips) {
            const auto x = fieldsOf(ip.family);
            f.add(Table::TunnelDelivery, 100, fmt::format("{},{}={}", x.proto, x.dst, ip.addressString()),
                  fmt::format("set_field:{}->eth_src,set_field:{}->eth_dst,output:{}", p.gwMac.str(), pod.mac.str(), pod.ofport));
        }
    }
    // The gateway's own address (replies to the node), and pods without flows yet.
    for (const auto& gateway : p.gateways) {
        const auto x = fieldsOf(gateway.family);
        f.add(Table::TunnelDelivery, 90, fmt::format("{},{}={}", x.proto, x.dst, gateway.network().str()), p.toGateway);
    }
    f.add(Table::TunnelDelivery, 0, "", "drop");
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
    p.pods = usablePods(in, p.gateways, out);

    Flows f;
    ingress(f, p);
    podNeighbour(f, p);
    conntrack(f, p, in.serviceReplyPath, in.policy.active());
    if (in.policy.active()) policyStage(f, p, in);
    forward(f, p);
    fromTunnel(f, p);
    normalize(f.all);
    out.flows = std::move(f.all);
    return out;
}

std::map<std::string, std::string> FlowTable::holdersIn(const FlowDump& dump, const std::vector<FlowPod>& pods) {
    std::map<int, std::string> portAt;
    for (const auto& p : pods) portAt[p.ofport] = p.port;
    std::map<std::string, std::string> holders;
    const auto inIngress = fmt::format("table={}, ", number(Table::Ingress));
    std::istringstream lines(dump.flows);
    for (std::string line; std::getline(lines, line);) {
        // "cookie=0x0, table=0, priority=200,ip,in_port=7,dl_src=0a:58:0a:f4:01:05,nw_src=10.244.1.5 actions=goto_table:10"
        // (ipv6 and ipv6_src for IPv6; a pod's link-local comes along, which no pod claims)
        if (auto t = line.find("table="); t != std::string::npos && line.compare(t, inIngress.size(), inIngress) != 0) continue;
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

}  // namespace kovs::flows
