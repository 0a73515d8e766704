#include "flows/PolicyStage.hpp"

#include <fmt/format.h>

#include "base/Strings.hpp"
#include "flows/FlowFields.hpp"

#include <array>
#include <map>
#include <tuple>

namespace kovs::flows {
namespace {

using policy::CompiledRule;
using policy::PortMatch;
using policy::Protocol;

std::string transport(Protocol p, int family) {
    const char* name = p == Protocol::TCP ? "tcp" : p == Protocol::UDP ? "udp" : "sctp";
    return family == AF_INET ? name : std::string(name) + "6";
}

// An address match: "ip,nw_dst=10.244.1.5" (a host) or "ip,nw_dst=10.0.0.0/8".
std::string addressMatch(const IpPrefix& p, bool source) {
    const auto x = fieldsOf(p.family);
    return fmt::format("{},{}={}", x.proto, source ? x.src : x.dst, matchValue(p));
}

// Clause flows merged by match: one flow may serve many conjunctions (of one
// priority: OVS completes a conjunction only among flows of the same one).
struct Clauses {
    std::map<std::tuple<Table, int, std::string>, std::vector<std::string>> actions;  // (table, priority, match) -> conjunction(...)
    void add(Table table, int priority, const std::string& match, uint32_t id, int clause, int clauses) {
        actions[{table, priority, match}].push_back(fmt::format("conjunction({},{}/{})", id, clause, clauses));
    }
};

std::vector<int> familiesOf(const std::vector<IpPrefix>& addresses) {
    std::vector<int> out;
    for (int f : {AF_INET, AF_INET6}) {
        for (const auto& a : addresses) {
            if (a.family == f) {
                out.push_back(f);
                break;
            }
        }
    }
    return out;
}

// Clause `n` of `n` of conjunction `id`: the ports, for each family of `applied`.
void portClauses(Clauses& clauses, Table table, int priority, uint32_t id, int n, const std::vector<IpPrefix>& applied,
                 const std::vector<PortMatch>& ports) {
    for (int family : familiesOf(applied)) {
        for (const auto& port : ports) {
            const auto t = transport(port.protocol, family);
            if (port.first == 0) {
                clauses.add(table, priority, t, id, n, n);
                continue;
            }
            const char* field = port.protocol == Protocol::TCP ? "tcp_dst" : port.protocol == Protocol::UDP ? "udp_dst" : "sctp_dst";
            for (const auto& m : portMasks(port.first, port.last)) clauses.add(table, priority, fmt::format("{},{}={}", t, field, m), id, n, n);
        }
    }
}

// The admin tiers' rules take the priorities from kAdminTop down, one each
// (policy::kAdminRulesMax of them); the Service and node flows come first.
constexpr int kFirst = 65000;
constexpr int kAdminTop = 64000;
static_assert(kAdminTop - policy::kAdminRulesMax >= 0 && kAdminTop < kFirst);

// Each admin address set's register bit, by its index (-1: none left on its
// side), in the order the sets were compiled.
std::vector<int> assignBits(const std::vector<policy::AddressSet>& sets, int perSide) {
    std::vector<int> out;
    int used[2] = {0, 0};
    for (const auto& s : sets) out.push_back(used[s.source] < perSide ? used[s.source]++ : -1);
    return out;
}

// One flow per address of the sets with a bit on `source`'s side, loading
// every bit of the sets holding it. An address inside a set's prefix (a pod
// in a `networks` peer) is in that set too: the longest prefix decides,
// with the bits of every prefix around it.
void classify(std::vector<Flow>& flows, const std::vector<policy::AddressSet>& sets, const std::vector<int>& bits, bool source) {
    using Bits = std::array<uint32_t, kSetRegisters>;
    std::map<IpPrefix, Bits, policy::PrefixLess> own;
    for (size_t i = 0; i < sets.size(); ++i) {
        if (sets[i].source != source || bits[i] < 0) continue;
        for (const auto& a : sets[i].addresses) own[a][bits[i] / 32] |= 1u << (bits[i] % 32);
    }
    std::vector<std::pair<IpPrefix, Bits>> prefixes;  // the sets' networks, whose bits the addresses inside them take
    for (const auto& [a, b] : own) {
        if (a.prefixLen < a.maxPrefixLen()) prefixes.emplace_back(a, b);
    }
    const Table table = source ? Table::PolicySources : Table::PolicyDestinations;
    const Reg first = source ? Reg::SourceSets : Reg::DestinationSets;
    const auto next = gotoTable(source ? Table::PolicyDestinations : Table::AdminEgress);
    for (const auto& [a, b] : own) {
        Bits all = b;
        for (const auto& [p, pb] : prefixes) {
            if (p.prefixLen < a.prefixLen && p.contains(a)) {
                for (int r = 0; r < kSetRegisters; ++r) all[r] |= pb[r];
            }
        }
        std::string actions;
        for (int r = 0; r < kSetRegisters; ++r) {
            if (all[r]) actions += loadRegister(first, r, all[r]) + ",";
        }
        flows.push_back({table, 100 + a.prefixLen, 0, addressMatch(a, source), actions + next});
    }
    flows.push_back({table, 0, 0, "", next});
}

}  // namespace

std::vector<std::string> portMasks(int first, int last) {
    std::vector<std::string> out;
    if (first == last) return {std::to_string(first)};
    while (first <= last) {
        // The largest aligned block that starts at `first` and ends by `last`.
        int size = 1;
        while ((first & (size * 2 - 1)) == 0 && first + size * 2 - 1 <= last && size < 65536) size *= 2;
        out.push_back(size == 1 ? std::to_string(first) : fmt::format("{:#x}/{:#x}", first, 0xffff & ~(size - 1)));
        first += size;
    }
    return out;
}

uint64_t policyDropCookie(bool ingress, int ofport) {
    const uint64_t direction = ingress ? kCookiePolicyIngressDrop : kCookiePolicyEgressDrop;
    return ofport > 0 && ofport <= 0xffff ? direction | (uint64_t(ofport) << 48) : direction;
}

std::optional<PolicyDrop> policyDropOf(uint64_t cookie) {
    const uint64_t direction = cookie & kCookieLowBits, port = cookie >> 48;
    if ((direction != kCookiePolicyIngressDrop && direction != kCookiePolicyEgressDrop) || port == 0) return std::nullopt;
    return PolicyDrop{direction == kCookiePolicyIngressDrop, static_cast<int>(port)};
}

std::vector<Flow> renderPolicyStage(const policy::CompiledPolicy& policy, const PolicyStageInputs& in) {
    std::vector<Flow> flows;
    auto add = [&](Table table, int priority, std::string match, std::string actions, uint64_t cookie = 0) {
        flows.push_back({table, priority, cookie, std::move(match), std::move(actions)});
    };
    // Where a decided side goes on: egress allowed -> the ingress side; ingress allowed -> commit.
    const auto egressDone = gotoTable(Table::AdminIngress);
    const auto done = gotoTable(Table::Commit);

    // Egress to a ClusterIP: judged when the kernel hands it back translated.
    // Traffic from the node itself: allowed into its pods before any tier.
    for (const auto& cidr : in.serviceCIDRs) add(Table::AdminEgress, kFirst, addressMatch(cidr, false), egressDone);
    for (const auto& a : in.nodeAddresses)
        add(Table::AdminIngress, kFirst, fmt::format("in_port={},{}", in.gatewayOfport, addressMatch(a.host(), true)), done);

    // A logged decision sends the packet to the agent too (metered), then
    // goes on as it would: "controller(...),goto_table:29", or alone for a drop.
    auto logged = [&](bool log, const std::string& actions) {
        if (!log || !in.logging.on()) return actions;
        return actions == "drop" ? controllerAction(in.logging) : controllerAction(in.logging) + "," + actions;
    };

    Clauses clauses;
    for (const CompiledRule& r : policy.rules) {
        const Table table = r.ingress ? Table::IngressPolicy : Table::EgressPolicy;
        const auto allow = logged(r.log, r.ingress ? done : egressDone);
        const uint64_t cookie = kCookiePolicyRule + r.id;
        const int n = 1 + !r.anyPeer + !r.anyPort;
        if (n == 1) {  // every peer, every port: the pods alone decide
            for (const auto& a : r.appliedTo) add(table, 150, addressMatch(a, !r.ingress), allow, cookie);
            continue;
        }
        for (const auto& a : r.appliedTo) clauses.add(table, 200, addressMatch(a, !r.ingress), r.id, 1, n);
        if (!r.anyPeer) {
            for (const auto& p : r.peers) clauses.add(table, 200, addressMatch(p, r.ingress), r.id, 2, n);
        }
        if (!r.anyPort) portClauses(clauses, table, 200, r.id, n, r.appliedTo, r.ports);
        add(table, 200, fmt::format("conj_id={}", r.id), allow, cookie);
    }
    // The admin tiers: a conjunction a rule, each at its own priority in the
    // order the rules decide, its subjects and peers by their sets' bits.
    // Allow ends the side, Deny drops, Pass goes on to NetworkPolicy (ANPs
    // only: the baseline has none).
    const auto bits = assignBits(policy.adminSets, in.adminSetBits);
    classify(flows, policy.adminSets, bits, true);
    classify(flows, policy.adminSets, bits, false);
    auto sideClause = [&](Table table, int priority, int set, uint32_t id, int clause, int n) {
        const auto& s = policy.adminSets[set];
        if (bits[set] >= 0) {
            clauses.add(table, priority, matchBit(s.source ? Reg::SourceSets : Reg::DestinationSets, bits[set]), id, clause, n);
            return;
        }
        for (const auto& a : s.addresses) clauses.add(table, priority, addressMatch(a, s.source), id, clause, n);
    };
    for (const auto& r : policy.admin) {
        const bool baseline = r.tier == policy::Tier::Baseline;
        const Table table = r.ingress ? (baseline ? Table::BaselineIngress : Table::AdminIngress)
                                      : (baseline ? Table::BaselineEgress : Table::AdminEgress);
        const int priority = kAdminTop - r.precedence;
        const int n = 2 + !r.anyPort;
        sideClause(table, priority, r.subjects, r.id, 1, n);
        sideClause(table, priority, r.peers, r.id, 2, n);
        if (!r.anyPort) portClauses(clauses, table, priority, r.id, n, policy.adminSets[r.subjects].addresses, r.ports);
        const auto action = r.action == policy::AdminAction::Deny ? std::string("drop")
                            : r.action == policy::AdminAction::Allow ? (r.ingress ? done : egressDone)
                                                                     : gotoTable(r.ingress ? Table::IngressPolicy : Table::EgressPolicy);
        add(table, priority, fmt::format("conj_id={}", r.id), logged(r.log, action), kCookiePolicyRule + r.id);
    }
    for (auto& [key, actions] : clauses.actions) add(std::get<0>(key), std::get<1>(key), std::get<2>(key), join(actions, ","));
    std::map<std::string, int> ports;
    for (const auto& [address, ofport] : in.podPorts) ports[address.str()] = ofport;
    auto portOf = [&](const IpPrefix& a) {
        auto it = ports.find(a.str());
        return it == ports.end() ? 0 : it->second;
    };
    for (const auto& i : policy.isolatedEgress)
        add(Table::EgressPolicy, 100, addressMatch(i.address, true), logged(i.log, "drop"), policyDropCookie(false, portOf(i.address)));
    for (const auto& i : policy.isolatedIngress)
        add(Table::IngressPolicy, 100, addressMatch(i.address, false), logged(i.log, "drop"), policyDropCookie(true, portOf(i.address)));
    // What no rule of a tier decided goes on to the next tier.
    add(Table::AdminEgress, 0, "", gotoTable(Table::EgressPolicy));
    add(Table::EgressPolicy, 0, "", gotoTable(Table::BaselineEgress));
    add(Table::BaselineEgress, 0, "", egressDone);
    add(Table::AdminIngress, 0, "", gotoTable(Table::IngressPolicy));
    add(Table::IngressPolicy, 0, "", gotoTable(Table::BaselineIngress));
    add(Table::BaselineIngress, 0, "", done);
    return flows;
}

}  // namespace kovs::flows
