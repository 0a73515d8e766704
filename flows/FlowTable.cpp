#include "flows/FlowTable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/Error.hpp"
#include "base/IpPrefix.hpp"
#include "base/Process.hpp"

namespace kovs {
namespace {

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
    bool ok = mac.size() == 17;
    for (size_t i = 0; ok && i < mac.size(); ++i) ok = (i % 3 == 2) ? mac[i] == ':' : std::isxdigit(static_cast<unsigned char>(mac[i]));
    if (!ok) throw Error("flow table: " + what + ": not a MAC address: '" + mac + "'");
}

void checkEndpoint(const FlowLocalEndpoint& e, const std::string& what) {
    checkIPv4(e.ip, what, false);
    checkMac(e.mac, what);
    if (e.ofport <= 0) throw Error("flow table: " + what + " " + e.ip + ": no OpenFlow port yet");
}

std::string macHex(const std::string& mac) {
    std::string hex = "0x";
    for (char c : mac) {
        if (c != ':') hex += c;
    }
    return hex;
}

}  // namespace

FlowTable::FlowTable(std::string bridge, std::string rundir)
    : bridge_(std::move(bridge)), target_("unix:" + rundir + "/" + bridge_ + ".mgmt") {}

std::string FlowTable::render(const FlowInputs& in, std::vector<std::string>* skipped) {
    if (in.tunnelOfport <= 0) throw Error("flow table: tunnel port has no OpenFlow port yet");
    checkMac(in.gateway.mac, "gateway");
    if (in.gateway.ofport <= 0) throw Error("flow table: gateway: no OpenFlow port yet");
    checkIPv4(in.localCidr, "local pod CIDR", true);
    std::vector<std::string> flows;
    const auto& gw = in.gateway;
    for (const auto& r : in.remotes) {
        checkIPv4(r.cidr, "peer pod CIDR", true);
        checkIPv4(r.nodeIP, "peer node IP", false);
        // Answer the node kernel's ARP for any address of a peer's pod CIDR
        // with the gateway MAC: swap sender/target and reply out the same port.
        flows.push_back(fmt::format(
            "priority=200,arp,arp_op=1,arp_tpa={} actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:{}->eth_src,"
            "load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],load:{}->NXM_NX_ARP_SHA[],"
            "move:NXM_OF_ARP_TPA[]->NXM_NX_REG0[],move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],"
            "move:NXM_NX_REG0[]->NXM_OF_ARP_SPA[],IN_PORT",
            r.cidr, gw.mac, macHex(gw.mac)));
        flows.push_back(fmt::format("priority=100,ip,nw_dst={} actions=set_field:{}->tun_dst,output:{}", r.cidr, r.nodeIP,
                                    in.tunnelOfport));
    }
    for (const auto& p : in.pods) {
        try {
            checkEndpoint(p, "pod");
        } catch (const Error& e) {
            if (skipped) skipped->push_back(e.what());
            continue;
        }
        flows.push_back(fmt::format("priority=100,in_port={},ip,nw_dst={} actions=set_field:{}->eth_src,set_field:{}->eth_dst,output:{}",
                                    in.tunnelOfport, p.ip, gw.mac, p.mac, p.ofport));
    }
    flows.push_back(fmt::format("priority=95,in_port={},ip,nw_dst={} actions=set_field:{}->eth_dst,output:{}", in.tunnelOfport,
                                in.localCidr, gw.mac, gw.ofport));
    flows.push_back(fmt::format("priority=90,in_port={} actions=drop", in.tunnelOfport));
    flows.push_back("priority=10 actions=NORMAL");
    std::sort(flows.begin(), flows.end());
    flows.erase(std::unique(flows.begin(), flows.end()), flows.end());
    std::string text;
    for (const auto& f : flows) text += f + "\n";
    return text;
}

bool FlowTable::install(const FlowInputs& in, bool force) {
    std::vector<std::string> skipped;
    auto text = render(in, &skipped);
    skipped_ = std::move(skipped);
    if (!force && text == installed_) return false;
    ProcessOptions o;
    o.stdinData = text;
    auto r = runProcess({"ovs-ofctl", "--bundle", "replace-flows", target_, "-"}, o);
    if (!r.ok()) throw Error("replace-flows on " + bridge_ + ": " + (r.err.empty() ? "exit " + std::to_string(r.exitCode) : r.err));
    installed_ = std::move(text);
    ++installs_;
    return true;
}

}  // namespace kovs
