#include "flows/PodRows.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>

#include "base/Error.hpp"

namespace kovs::flows {
namespace {

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

// One pod row's fields, checked; throws naming the port and the field.
Pod checkPod(const FlowPod& row, const std::vector<IpPrefix>& gateways) {
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
        const auto* gateway = gatewayOf(gateways, ip.family);
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

}  // namespace

std::vector<IpPrefix> Pod::ipv6Sources() const {
    std::vector<IpPrefix> out;
    for (const auto& ip : ips) {
        if (ip.family == AF_INET6) out.push_back(ip);
    }
    if (linkLocal) out.push_back(*linkLocal);
    return out;
}

const IpPrefix* gatewayOf(const std::vector<IpPrefix>& gateways, int family) {
    for (const auto& g : gateways) {
        if (g.family == family) return &g;
    }
    return nullptr;
}

std::vector<Pod> usablePods(const FlowInputs& in, const std::vector<IpPrefix>& gateways, FlowTable::Rendered& out) {
    std::vector<Pod> checked;
    for (const auto& row : in.pods) {
        try {
            checked.push_back(checkPod(row, gateways));
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

}  // namespace kovs::flows
