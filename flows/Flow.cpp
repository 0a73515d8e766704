#include "flows/Flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace kovs::flows {

const char* stageName(int table) {
    switch (static_cast<Table>(table)) {
        case Table::Ingress: return "ingress: port and source check";
        case Table::PodNeighbour: return "a pod's neighbour discovery";
        case Table::Conntrack: return "conntrack lookup";
        case Table::ConntrackState: return "Services reply path";
        case Table::PolicySources: return "admin policy address sets: source";
        case Table::PolicyDestinations: return "admin policy address sets: destination";
        case Table::AdminEgress: return "AdminNetworkPolicy egress";
        case Table::EgressPolicy: return "NetworkPolicy egress";
        case Table::BaselineEgress: return "BaselineAdminNetworkPolicy egress";
        case Table::AdminIngress: return "AdminNetworkPolicy ingress";
        case Table::IngressPolicy: return "NetworkPolicy ingress";
        case Table::BaselineIngress: return "BaselineAdminNetworkPolicy ingress";
        case Table::Commit: return "conntrack commit";
        case Table::Forward: return "L3 forwarding";
        case Table::NeighbourReply: return "neighbour reply";
        case Table::FromTunnel: return "from the tunnel: inner source check";
        case Table::TunnelDelivery: return "delivery from the tunnel";
    }
    return "";
}

std::string gotoTable(Table t) { return fmt::format("goto_table:{}", number(t)); }
std::string resubmit(Table t) { return fmt::format("resubmit(,{})", number(t)); }

std::string field(Reg r) { return fmt::format("NXM_NX_REG{}[]", static_cast<int>(r)); }

std::string matchBit(Reg first, int bit) {
    const uint32_t mask = 1u << (bit % 32);
    return fmt::format("reg{}={:#x}/{:#x}", static_cast<int>(first) + bit / 32, mask, mask);
}

std::string loadRegister(Reg first, int index, uint32_t value) {
    return fmt::format("load:{:#x}->NXM_NX_REG{}[]", value, static_cast<int>(first) + index);
}

std::string matchMark(CtMark m) {
    const auto bit = static_cast<uint32_t>(m);
    return fmt::format("ct_mark={:#x}/{:#x}", bit, bit);
}
std::string setMark(CtMark m) {
    const auto bit = static_cast<uint32_t>(m);
    return fmt::format("set_field:{:#x}/{:#x}->ct_mark", bit, bit);
}

std::string Flow::strictKey() const {
    auto key = fmt::format("table={},priority={}", number(table), priority);
    if (!match.empty()) key += "," + match;
    return key;
}

std::string Flow::text() const {
    auto t = fmt::format("table={},priority={}", number(table), priority);
    if (cookie != 0) t += fmt::format(",cookie={:#x}", cookie);
    if (!match.empty()) t += "," + match;
    return t + " actions=" + actions;
}

void normalize(std::vector<Flow>& flows) {
    std::sort(flows.begin(), flows.end(), [](const Flow& a, const Flow& b) {
        return std::tie(a.table, a.priority, a.match, a.cookie, a.actions) < std::tie(b.table, b.priority, b.match, b.cookie, b.actions);
    });
    flows.erase(std::unique(flows.begin(), flows.end()), flows.end());
}

std::string flowText(const std::vector<Flow>& flows) {
    std::string t;
    for (const auto& f : flows) t += f.text() + "\n";
    return t;
}

}  // namespace kovs::flows
