#include "flows/FlowTable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/Error.hpp"
#include "base/IpPrefix.hpp"
#include "base/MacAddress.hpp"

namespace kovs::flows {
namespace {

enum Table { kIngress = 0, kConntrack = 10, kConntrackState = 20, kForward = 30, kFromTunnel = 40, kTunnelDelivery = 41 };

// Flow fields are built from these strings: only a plain IPv4 address or
// CIDR may get through (no "," or "actions=" smuggled in from a peer list).
void checkIPv4(const std::string& text, const std::string& what, bool cidr) {
    bool ok = false;
    try {
        ok = IpPrefix::parse(text).family == AF_INET && (text.find('/') != std::string::npos) == cidr;
    } catch (const Error&) {
    }
    if (!ok) throw Error("flow table: " + what + ": not an IPv4 " + (cidr ? "CIDR" : "address") + ": '" + text + "'");
}

void checkMac(const std::string& mac, const std::string& what) {
    if (!isMacAddress(mac)) throw Error("flow table: " + what + ": not a MAC address: '" + mac + "'");
}

void checkEndpoint(const FlowLocalEndpoint& e) {
    checkIPv4(e.ip, "pod", false);
    checkMac(e.mac, "pod");
    if (e.ofport <= 0) throw Error("flow table: pod " + e.ip + ": no OpenFlow port yet");
}

std::string macHex(const std::string& mac) {
    std::string hex = "0x";
    for (char c : mac) {
        if (c != ':') hex += c;
    }
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

}  // namespace

FlowTable::Rendered FlowTable::render(const FlowInputs& in) {
    Rendered out;
    if (in.tunnelOfport <= 0) throw Error("flow table: tunnel port has no OpenFlow port yet");
    checkMac(in.gateway.mac, "gateway");
    if (in.gateway.ofport <= 0) throw Error("flow table: gateway: no OpenFlow port yet");
    checkIPv4(in.localCidr, "local pod CIDR", true);
    for (const auto& r : in.remotes) {
        checkIPv4(r.cidr, "peer pod CIDR", true);
        checkIPv4(r.nodeIP, "peer node IP", false);
    }
    std::vector<FlowLocalEndpoint> pods;
    for (const auto& p : in.pods) {
        try {
            checkEndpoint(p);
            pods.push_back(p);
            if (!p.port.empty()) out.ports.insert(p.port);
        } catch (const Error& e) {
            out.skipped.push_back(e.what());
        }
    }
    const int gw = in.gateway.ofport, tun = in.tunnelOfport;
    const std::string& gwMac = in.gateway.mac;
    const std::string toGateway = fmt::format("set_field:{}->eth_dst,output:{}", gwMac, gw);
    Flows f;

    // Ingress.
    f.add(kIngress, 200, "in_port={} actions=goto_table:{}", gw, kConntrack);
    std::set<std::string> peerNodes;
    for (const auto& r : in.remotes) peerNodes.insert(r.nodeIP);
    for (const auto& ip : peerNodes) f.add(kIngress, 200, "in_port={},tun_src={} actions=goto_table:{}", tun, ip, kConntrack);
    f.add(kIngress, 190, "cookie={:#x},in_port={} actions=drop", kCookieTunnelUnknownSource, tun);
    for (const auto& p : pods) {
        f.add(kIngress, 200, "in_port={},dl_src={},ip,nw_src={} actions=goto_table:{}", p.ofport, p.mac, p.ip, kConntrack);
        f.add(kIngress, 200, "in_port={},dl_src={},arp,arp_spa={},arp_sha={} actions=goto_table:{}", p.ofport, p.mac, p.ip,
              p.mac, kConntrack);
        f.add(kIngress, 190, "cookie={:#x},in_port={} actions=drop", kCookiePodSpoofed, p.ofport);
    }
    f.add(kIngress, 0, "actions=drop");  // ports kovs knows nothing of (yet)

    // Conntrack, only where a reply of a kernel-forwarded connection can be.
    if (in.serviceReplyPath) {
        const auto lookup = fmt::format("ct(table={},zone={})", kConntrackState, kCtZone);
        f.add(kConntrack, 100, "in_port={},ip actions={}", gw, lookup);
        f.add(kConntrack, 100, "in_port={},ip actions={}", tun, lookup);
        f.add(kConntrack, 90, "ip,nw_dst={} actions={}", in.localCidr, lookup);
        for (const auto& r : in.remotes) f.add(kConntrack, 90, "ip,nw_dst={} actions={}", r.cidr, lookup);
        f.add(kConntrackState, 200, "ct_state=+new+trk,in_port={},ip actions=ct(commit,zone={},exec(set_field:0x1/0x1->ct_mark)),goto_table:{}",
              gw, kCtZone, kForward);
        f.add(kConntrackState, 195, "in_port={} actions=goto_table:{}", gw, kForward);
        f.add(kConntrackState, 190, "ct_state=+rpl+trk,ct_mark=0x1/0x1,ip actions={}", toGateway);
        f.add(kConntrackState, 0, "actions=goto_table:{}", kForward);
    }
    f.add(kConntrack, 0, "actions=goto_table:{}", kForward);

    // Forwarding.
    f.add(kForward, 150, "in_port={} actions=goto_table:{}", tun, kFromTunnel);
    for (const auto& r : in.remotes) {
        // Answer the node kernel's ARP for any address of a peer's pod CIDR
        // with the gateway MAC: swap sender/target and reply out the same port.
        f.add(kForward, 200,
              "arp,arp_op=1,arp_tpa={} actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:{}->eth_src,"
              "load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],load:{}->NXM_NX_ARP_SHA[],"
              "move:NXM_OF_ARP_TPA[]->NXM_NX_REG0[],move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],"
              "move:NXM_NX_REG0[]->NXM_OF_ARP_SPA[],IN_PORT",
              r.cidr, gwMac, macHex(gwMac));
        f.add(kForward, 100, "ip,nw_dst={} actions=set_field:{}->tun_dst,output:{}", r.cidr, r.nodeIP, tun);
    }
    for (const auto& p : pods) f.add(kForward, 100, "ip,nw_dst={} actions=set_field:{}->eth_dst,output:{}", p.ip, p.mac, p.ofport);
    f.add(kForward, 50, "ip actions={}", toGateway);  // the node, Services, the world
    f.add(kForward, 10, "arp actions=NORMAL");
    f.add(kForward, 0, "actions=drop");

    // From the tunnel.
    for (const auto& r : in.remotes) f.add(kFromTunnel, 100, "ip,nw_src={} actions=goto_table:{}", r.cidr, kTunnelDelivery);
    f.add(kFromTunnel, 50, "ip actions={}", toGateway);
    f.add(kFromTunnel, 0, "actions=drop");
    for (const auto& p : pods)
        f.add(kTunnelDelivery, 100, "ip,nw_dst={} actions=set_field:{}->eth_src,set_field:{}->eth_dst,output:{}", p.ip, gwMac,
              p.mac, p.ofport);
    // The gateway's own address (replies to the node), and pods without flows yet.
    f.add(kTunnelDelivery, 90, "ip,nw_dst={} actions={}", in.localCidr, toGateway);
    f.add(kTunnelDelivery, 0, "actions=drop");
    out.flows = f.text();
    return out;
}

}  // namespace kovs::flows
