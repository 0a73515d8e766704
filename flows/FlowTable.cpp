#include "flows/FlowTable.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "base/Error.hpp"
#include "base/MacAddress.hpp"

namespace kovs::flows {
namespace {

enum Table { kIngress = 0, kConntrack = 10, kConntrackState = 20, kForward = 30, kFromTunnel = 40, kTunnelDelivery = 41 };

// A pod whose row passed every check: the only shape a stage builds pod flows from.
struct Pod {
    std::string port;
    MacAddress mac;
    std::vector<IpPrefix> ips;  // host prefixes (/32)
    int ofport = -1;
    std::vector<std::string> claims;  // its MAC and addresses as text: what no other pod may have
};

std::string macHex(const MacAddress& mac) {
    std::string hex = "0x";
    for (auto b : mac.bytes) hex += fmt::format("{:02x}", b);
    return hex;
}

class Flows {
public:
    template <typename... Args>
    void add(int table, int priority, fmt::format_string<Args...> rest, Args&&... args) {
        lines_.push_back(fmt::format("table={},priority={},", table, priority) + fmt::format(rest, std::forward<Args>(args)...));
    }
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
    IpPrefix localCidr;
    std::vector<Pod> pods;
    const std::vector<FlowRemoteSubnet>* remotes = nullptr;
    std::string toGateway;  // the action that hands a packet to the node's kernel
};

void checkIPv4(const IpPrefix& p, const std::string& what) {
    if (p.family != AF_INET) throw Error("flow table: " + what + ": not IPv4: " + p.str());
}

// One pod row's fields, checked; throws naming the port and the field.
Pod checkPod(const FlowPod& row, const FlowInputs& in, const IpPrefix& local) {
    const std::string name = "flow table: pod " + (row.port.empty() ? std::string("(no port name)") : row.port);
    Pod pod{row.port, {}, {}, row.ofport};
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
        if (ip.family != AF_INET) throw Error(name + ": not an IPv4 address: " + ip.addressString());
        if (!local.contains(ip)) throw Error(name + ": " + ip.addressString() + " is outside this node's pod CIDR " + local.str());
        if (ip == local.host() || ip == in.gatewayAddress.host())
            throw Error(name + ": " + ip.addressString() + " is the pod CIDR's " + (ip == local.host() ? "network" : "gateway") + " address");
        if (std::find(pod.ips.begin(), pod.ips.end(), ip) == pod.ips.end()) pod.ips.push_back(ip);
    }
    if (pod.ips.empty()) throw Error(name + ": no IPv4 address");
    pod.claims.push_back(pod.mac.str());
    for (const auto& ip : pod.ips) pod.claims.push_back(ip.addressString());
    return pod;
}

// The pods whose rows pass checkPod and claim no address or MAC that another
// row holds, or claims as well while nobody holds it.
std::vector<Pod> usablePods(const FlowInputs& in, const IpPrefix& local, FlowTable::Rendered& out) {
    std::vector<Pod> checked;
    for (const auto& row : in.pods) {
        try {
            checked.push_back(checkPod(row, in, local));
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
    std::set<std::string> peerNodes;
    for (const auto& r : *p.remotes) peerNodes.insert(r.nodeIP.addressString());
    for (const auto& ip : peerNodes) f.add(kIngress, 200, "in_port={},tun_src={} actions=goto_table:{}", p.tun, ip, kConntrack);
    f.add(kIngress, 190, "cookie={:#x},in_port={} actions=drop", FlowTable::kCookieTunnelUnknownSource, p.tun);
    for (const auto& pod : p.pods) {
        const auto mac = pod.mac.str();
        for (const auto& ip : pod.ips) {
            const auto a = ip.addressString();
            f.add(kIngress, 200, "in_port={},dl_src={},ip,nw_src={} actions=goto_table:{}", pod.ofport, mac, a, kConntrack);
            f.add(kIngress, 200, "in_port={},dl_src={},arp,arp_spa={},arp_sha={} actions=goto_table:{}", pod.ofport, mac, a, mac,
                  kConntrack);
        }
        f.add(kIngress, 190, "cookie={:#x},in_port={} actions=drop", FlowTable::kCookiePodSpoofed, pod.ofport);
    }
    f.add(kIngress, 0, "actions=drop");  // ports kovs knows nothing of (yet)
}

// Tables 10 and 20, only where a reply of a kernel-forwarded connection can be.
void conntrack(Flows& f, const Plan& p, bool serviceReplyPath) {
    f.add(kConntrack, 0, "actions=goto_table:{}", kForward);
    if (!serviceReplyPath) return;
    const auto lookup = fmt::format("ct(table={},zone={})", kConntrackState, FlowTable::kCtZone);
    f.add(kConntrack, 100, "in_port={},ip actions={}", p.gw, lookup);
    f.add(kConntrack, 100, "in_port={},ip actions={}", p.tun, lookup);
    f.add(kConntrack, 90, "ip,nw_dst={} actions={}", p.localCidr.str(), lookup);
    for (const auto& r : *p.remotes) f.add(kConntrack, 90, "ip,nw_dst={} actions={}", r.cidr.str(), lookup);
    f.add(kConntrackState, 200, "ct_state=+new+trk,in_port={},ip actions=ct(commit,zone={},exec(set_field:0x1/0x1->ct_mark)),goto_table:{}",
          p.gw, FlowTable::kCtZone, kForward);
    f.add(kConntrackState, 195, "in_port={} actions=goto_table:{}", p.gw, kForward);
    f.add(kConntrackState, 190, "ct_state=+rpl+trk,ct_mark=0x1/0x1,ip actions={}", p.toGateway);
    f.add(kConntrackState, 0, "actions=goto_table:{}", kForward);
}

// Table 30.
void forward(Flows& f, const Plan& p) {
    const auto gwMac = p.gwMac.str();
    f.add(kForward, 150, "in_port={} actions=goto_table:{}", p.tun, kFromTunnel);
    for (const auto& r : *p.remotes) {
        // Answer the node kernel's ARP for any address of a peer's pod CIDR
        // with the gateway MAC: swap sender/target and reply out the same port.
        f.add(kForward, 200,
              "arp,arp_op=1,arp_tpa={} actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:{}->eth_src,"
              "load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],load:{}->NXM_NX_ARP_SHA[],"
              "move:NXM_OF_ARP_TPA[]->NXM_NX_REG0[],move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],"
              "move:NXM_NX_REG0[]->NXM_OF_ARP_SPA[],IN_PORT",
              r.cidr.str(), gwMac, macHex(p.gwMac));
        f.add(kForward, 100, "ip,nw_dst={} actions=set_field:{}->tun_dst,output:{}", r.cidr.str(), r.nodeIP.addressString(), p.tun);
    }
    for (const auto& pod : p.pods) {
        for (const auto& ip : pod.ips)
            f.add(kForward, 100, "ip,nw_dst={} actions=set_field:{}->eth_dst,output:{}", ip.addressString(), pod.mac.str(), pod.ofport);
    }
    f.add(kForward, 50, "ip actions={}", p.toGateway);  // the node, Services, the world
    f.add(kForward, 10, "arp actions=NORMAL");
    f.add(kForward, 0, "actions=drop");
}

// Tables 40 and 41.
void fromTunnel(Flows& f, const Plan& p) {
    for (const auto& r : *p.remotes) f.add(kFromTunnel, 100, "ip,nw_src={} actions=goto_table:{}", r.cidr.str(), kTunnelDelivery);
    f.add(kFromTunnel, 50, "ip actions={}", p.toGateway);
    f.add(kFromTunnel, 0, "actions=drop");
    for (const auto& pod : p.pods) {
        for (const auto& ip : pod.ips)
            f.add(kTunnelDelivery, 100, "ip,nw_dst={} actions=set_field:{}->eth_src,set_field:{}->eth_dst,output:{}", ip.addressString(),
                  p.gwMac.str(), pod.mac.str(), pod.ofport);
    }
    // The gateway's own address (replies to the node), and pods without flows yet.
    f.add(kTunnelDelivery, 90, "ip,nw_dst={} actions={}", p.localCidr.str(), p.toGateway);
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
    if (in.gatewayAddress == IpPrefix{}) throw Error("flow table: no IPv4 gateway address (node.podCIDRs has no IPv4 CIDR)");
    checkIPv4(in.gatewayAddress, "gateway address");
    if (in.gatewayAddress.prefixLen == 0 || in.gatewayAddress.prefixLen >= 31)
        throw Error("flow table: gateway address " + in.gatewayAddress.str() + ": no pod CIDR around it");
    for (const auto& r : in.remotes) {
        checkIPv4(r.cidr, "peer pod CIDR");
        checkIPv4(r.nodeIP, "peer node IP");
    }
    p.gw = in.gateway.ofport;
    p.tun = in.tunnelOfport;
    p.gwMac = *gwMac;
    p.localCidr = in.gatewayAddress.network();
    p.remotes = &in.remotes;
    p.toGateway = fmt::format("set_field:{}->eth_dst,output:{}", p.gwMac.str(), p.gw);
    p.pods = usablePods(in, p.localCidr, out);

    Flows f;
    ingress(f, p);
    conntrack(f, p, in.serviceReplyPath);
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
        if (auto t = line.find("table="); t != std::string::npos && line.compare(t, 9, "table=0, ") != 0) continue;
        auto match = line.substr(0, line.find(" actions="));
        match = match.substr(match.rfind(", ") + 2);
        std::map<std::string, std::string> field;
        std::istringstream parts(match);
        for (std::string part; std::getline(parts, part, ',');) {
            auto eq = part.find('=');
            field[part.substr(0, eq)] = eq == std::string::npos ? "" : part.substr(eq + 1);
        }
        if (!field.count("ip") || !field.count("in_port") || !field.count("dl_src") || !field.count("nw_src")) continue;
        int ofport = std::atoi(field["in_port"].c_str());
        auto port = portAt.find(ofport);
        if (port == portAt.end()) continue;
        holders[field["nw_src"]] = port->second;
        holders[field["dl_src"]] = port->second;
    }
    return holders;
}

}  // namespace kovs::flows
