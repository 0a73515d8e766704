#include "policy/PolicyCompiler.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace kovs::policy {
namespace {

void sortUnique(std::vector<IpPrefix>& v) {
    std::sort(v.begin(), v.end(), PrefixLess{});
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Admin address sets by what they hold.
struct SetLess {
    bool operator()(const AddressSet& a, const AddressSet& b) const {
        if (a.source != b.source) return a.source < b.source;
        return std::lexicographical_compare(a.addresses.begin(), a.addresses.end(), b.addresses.begin(), b.addresses.end(), PrefixLess{});
    }
};

// One entry per address, with every policy that isolates it.
void mergeIsolations(std::vector<Isolation>& v) {
    std::sort(v.begin(), v.end(), [](const Isolation& a, const Isolation& b) {
        return std::tie(a.address.family, a.address.bytes, a.policies) < std::tie(b.address.family, b.address.bytes, b.policies);
    });
    std::vector<Isolation> merged;
    for (auto& i : v) {
        if (merged.empty() || merged.back().address != i.address) merged.push_back({i.address, {}, false});
        merged.back().log = merged.back().log || i.log;
        auto& policies = merged.back().policies;
        if (policies.empty() || policies.back() != i.policies.front()) policies.push_back(i.policies.front());
    }
    v = std::move(merged);
}

bool inNamespaceOf(const ClusterView& c, const NetworkPolicy& np, const PolicyPeer& peer, const PolicyPod& pod) {
    if (!peer.namespaces) return pod.namespaceName == np.namespaceName;
    auto ns = c.namespaces.find(pod.namespaceName);
    static const Labels kNone;
    return peer.namespaces->matches(ns == c.namespaces.end() ? kNone : ns->second.labels);
}

// The ports of `r` on `target` (named ones resolved there; nullptr: none resolve).
std::vector<PortMatch> resolvePorts(const PolicyRule& r, const PolicyPod* target) {
    std::vector<PortMatch> out;
    for (const auto& p : r.ports) {
        if (p.named.empty()) {
            out.push_back({p.protocol, p.port, p.port ? (p.endPort ? p.endPort : p.port) : 0});
            continue;
        }
        if (!target) continue;
        for (const auto& cp : target->ports) {
            if (cp.name == p.named && cp.protocol == p.protocol) out.push_back({p.protocol, cp.port, cp.port});
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

bool hasNamedPort(const PolicyRule& r) {
    return std::any_of(r.ports.begin(), r.ports.end(), [](const PolicyPort& p) { return !p.named.empty(); });
}

bool podsMatch(const ClusterView& c, const NamespacedPods& s, const PolicyPod& pod) {
    static const Labels kNone;
    auto ns = c.namespaces.find(pod.namespaceName);
    return s.namespaces.matches(ns == c.namespaces.end() ? kNone : ns->second.labels) && (!s.pods || s.pods->matches(pod.labels));
}

// An admin rule's ports on `target` (a named port is a container port of
// the destination pod, whatever its protocol; nullptr: none resolve).
std::vector<PortMatch> resolvePorts(const AdminRule& r, const PolicyPod* target) {
    std::vector<PortMatch> out;
    for (const auto& p : r.ports) {
        if (p.named.empty()) {
            out.push_back({p.protocol, p.first, p.last});
            continue;
        }
        if (!target) continue;
        for (const auto& cp : target->ports) {
            if (cp.name == p.named) out.push_back({cp.protocol, cp.port, cp.port});
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

struct Compiler {
    ClusterView c;
    std::vector<const PolicyPod*> local;              // this node's pods
    std::vector<std::pair<IpPrefix, const PolicyPod*>> podAddresses;  // every pod's address, with its pod
    CompiledPolicy out;
    std::map<AddressSet, int, SetLess> setIndex;  // adminSets' indices

    int addressSet(bool source, std::vector<IpPrefix> addresses) {
        sortUnique(addresses);
        AddressSet set{source, std::move(addresses)};
        auto [it, added] = setIndex.try_emplace(set, static_cast<int>(out.adminSets.size()));
        if (added) out.adminSets.push_back(std::move(set));
        return it->second;
    }

    // The peers of `r` as (address set, the pod they belong to or nullptr).
    // With `podsInBlocks` (named ports, resolved per destination pod) an
    // ipBlock also gives each pod address inside it, with its pod.
    std::vector<std::pair<IpPrefix, const PolicyPod*>> peersOf(const NetworkPolicy& np, const PolicyRule& r, bool podsInBlocks = false) {
        std::vector<std::pair<IpPrefix, const PolicyPod*>> peers;
        for (const auto& peer : r.peers) {
            if (peer.ipBlock) {
                const auto blocks = subtractPrefixes(peer.ipBlock->cidr, peer.ipBlock->except);
                for (const auto& p : blocks) peers.emplace_back(p, nullptr);
                if (!podsInBlocks) continue;
                for (const auto& pa : podAddresses) {
                    if (std::any_of(blocks.begin(), blocks.end(), [&](const IpPrefix& b) { return b.contains(pa.first); }))
                        peers.push_back(pa);
                }
                continue;
            }
            for (const auto& [_, pod] : c.pods) {
                if (pod.hostNetwork || !inNamespaceOf(c, np, peer, pod)) continue;
                if (peer.pods && !peer.pods->matches(pod.labels)) continue;
                for (const auto& ip : pod.ips) peers.emplace_back(ip, &pod);
            }
        }
        return peers;
    }

    // The addresses of peersOf alone (none where the rule allows every peer).
    std::vector<IpPrefix> peerAddresses(const NetworkPolicy& np, const PolicyRule& r) {
        std::vector<IpPrefix> out;
        if (r.anyPeer) return out;
        for (const auto& [ip, _] : peersOf(np, r)) out.push_back(ip);
        return out;
    }

    void add(const NetworkPolicy& np, bool ingress, int index, std::vector<IpPrefix> appliedTo, bool anyPeer,
             std::vector<IpPrefix> peers, const PolicyRule& r, std::vector<PortMatch> ports) {
        if (appliedTo.empty() || (!anyPeer && peers.empty()) || (!r.anyPort && ports.empty())) return;  // allows nothing here
        sortUnique(appliedTo);
        sortUnique(peers);
        out.rules.push_back({0, ingress, np.key(), index, std::move(appliedTo), anyPeer, std::move(peers), r.anyPort, std::move(ports),
                             logs(np.log, true)});
    }

    void ingressRule(const NetworkPolicy& np, int index, const PolicyRule& r, const std::vector<const PolicyPod*>& selected) {
        const auto peers = peerAddresses(np, r);
        // The pods this rule applies to, grouped by what its ports resolve to on them.
        std::map<std::vector<PortMatch>, std::vector<IpPrefix>> groups;
        for (const auto* pod : selected) {
            auto& g = groups[resolvePorts(r, pod)];
            g.insert(g.end(), pod->ips.begin(), pod->ips.end());
        }
        for (auto& [ports, applied] : groups) add(np, true, index, std::move(applied), r.anyPeer, peers, r, ports);
    }

    void egressRule(const NetworkPolicy& np, int index, const PolicyRule& r, const std::vector<const PolicyPod*>& selected) {
        std::vector<IpPrefix> applied;
        for (const auto* pod : selected) applied.insert(applied.end(), pod->ips.begin(), pod->ips.end());
        if (!hasNamedPort(r)) {
            add(np, false, index, applied, r.anyPeer, peerAddresses(np, r), r, resolvePorts(r, nullptr));
            return;
        }
        // Named ports are the destination's: group the peers by what they resolve to.
        std::vector<std::pair<IpPrefix, const PolicyPod*>> peers;
        if (r.anyPeer) {
            for (const auto& [_, pod] : c.pods) {
                if (pod.hostNetwork) continue;
                for (const auto& ip : pod.ips) peers.emplace_back(ip, &pod);
            }
            for (const char* all : {"0.0.0.0/0", "::/0"}) peers.emplace_back(IpPrefix::parse(all), nullptr);
        } else {
            peers = peersOf(np, r, true);
        }
        std::map<std::vector<PortMatch>, std::vector<IpPrefix>> groups;
        for (const auto& [ip, pod] : peers) groups[resolvePorts(r, pod)].push_back(ip);
        for (auto& [ports, group] : groups) add(np, false, index, applied, false, std::move(group), r, ports);
    }

    // --- AdminNetworkPolicy and BaselineAdminNetworkPolicy ---

    // The peers of an admin rule, with the pod each address is (nullptr for
    // a node's or a network's). With `podsInNetworks` (named ports, resolved
    // per destination) a network also gives each pod address inside it.
    std::vector<std::pair<IpPrefix, const PolicyPod*>> peersOf(const AdminTiersView& t, const AdminRule& r, bool podsInNetworks) {
        std::vector<std::pair<IpPrefix, const PolicyPod*>> peers;
        for (const auto& peer : r.peers) {
            switch (peer.kind) {
                case AdminPeer::Kind::Namespaces:
                case AdminPeer::Kind::Pods:
                    for (const auto& [_, pod] : c.pods) {
                        if (pod.hostNetwork || !podsMatch(c, peer.pods, pod)) continue;
                        for (const auto& ip : pod.ips) peers.emplace_back(ip, &pod);
                    }
                    break;
                case AdminPeer::Kind::Nodes:
                    for (const auto& [_, node] : t.nodes) {
                        if (!peer.nodes.matches(node.labels)) continue;
                        for (const auto& ip : node.addresses) peers.emplace_back(ip, nullptr);
                    }
                    break;
                case AdminPeer::Kind::Networks:
                    for (const auto& n : peer.networks) {
                        peers.emplace_back(n, nullptr);
                        if (!podsInNetworks) continue;
                        for (const auto& pa : podAddresses) {
                            if (n.contains(pa.first)) peers.push_back(pa);
                        }
                    }
                    break;
            }
        }
        return peers;
    }

    void adminRule(const AdminTiersView& t, const AdminPolicy& p, Tier tier, bool ingress, const AdminRule& r, int precedence,
                   const std::vector<const PolicyPod*>& subjects) {
        int group = 0;
        auto emit = [&](std::vector<IpPrefix> applied, std::vector<IpPrefix> peers, std::vector<PortMatch> ports) {
            if (applied.empty() || peers.empty() || (!r.ports.empty() && ports.empty())) return;  // matches nothing here
            if (group == kAdminGroupsMax) {
                ++out.adminLeftOut;
                return;
            }
            const bool log = r.action != AdminAction::Pass && logs(p.log, r.action == AdminAction::Allow);
            const int subjects = addressSet(!ingress, std::move(applied)), peerSet = addressSet(ingress, std::move(peers));
            out.admin.push_back({adminRuleId(tier, ingress, precedence, group++), tier, ingress, r.action, precedence, p.name, r.name,
                                 subjects, peerSet, r.ports.empty(), std::move(ports), log});
        };
        const bool named = std::any_of(r.ports.begin(), r.ports.end(), [](const AdminPort& x) { return !x.named.empty(); });
        const auto peers = peersOf(t, r, named && !ingress);
        if (named && !ingress) {  // the destinations' named ports: peers grouped by what they resolve to
            std::vector<IpPrefix> applied;
            for (const auto* pod : subjects) applied.insert(applied.end(), pod->ips.begin(), pod->ips.end());
            std::map<std::vector<PortMatch>, std::vector<IpPrefix>> groups;
            for (const auto& [ip, pod] : peers) groups[resolvePorts(r, pod)].push_back(ip);
            for (auto& [ports, group] : groups) emit(applied, std::move(group), ports);
            return;
        }
        std::vector<IpPrefix> peerIps;
        for (const auto& [ip, _] : peers) peerIps.push_back(ip);
        // The subjects grouped by what the ports resolve to on them (ingress: they are the destination).
        std::map<std::vector<PortMatch>, std::vector<IpPrefix>> groups;
        for (const auto* pod : subjects) {
            auto& g = groups[resolvePorts(r, ingress ? pod : nullptr)];
            g.insert(g.end(), pod->ips.begin(), pod->ips.end());
        }
        for (auto& [ports, applied] : groups) emit(std::move(applied), peerIps, ports);
    }

    // One tier's policies, in the order they decide (ANPs: by priority, then
    // name; each from its priority's band).
    void adminTier(const AdminTiersView& t, Tier tier, std::vector<const AdminPolicy*> policies) {
        std::stable_sort(policies.begin(), policies.end(), [](const AdminPolicy* a, const AdminPolicy* b) { return a->priority < b->priority; });
        for (bool ingress : {true, false}) {
            int precedence = 0;
            for (const auto* p : policies) {
                std::vector<const PolicyPod*> subjects;
                for (const auto* pod : local) {
                    if (podsMatch(c, p->subject, *pod)) subjects.push_back(pod);
                }
                if (subjects.empty()) continue;
                if (tier == Tier::Admin) precedence = std::max(precedence, p->priority * kAdminBand);
                for (const auto& r : ingress ? p->ingress : p->egress) {
                    if (precedence >= kAdminRulesMax) ++out.adminLeftOut;
                    else adminRule(t, *p, tier, ingress, r, precedence++, subjects);
                }
            }
        }
    }
};

}  // namespace

std::set<std::string> isolatingPolicies(const CompiledPolicy& policy, bool ingress, const std::vector<IpPrefix>& podAddresses) {
    std::set<std::string> out;
    for (const auto& i : ingress ? policy.isolatedIngress : policy.isolatedEgress) {
        if (std::find(podAddresses.begin(), podAddresses.end(), i.address) != podAddresses.end())
            out.insert(i.policies.begin(), i.policies.end());
    }
    return out;
}

CompiledPolicy compilePolicy(const ClusterView& cluster, const std::string& nodeName, const AdminTiersView& tiers) {
    Compiler k{cluster, {}, {}, {}};
    for (const auto& [_, pod] : cluster.pods) {
        if (pod.hostNetwork) continue;
        for (const auto& ip : pod.ips) k.podAddresses.emplace_back(ip, &pod);
        if (pod.nodeName == nodeName && !pod.ips.empty()) k.local.push_back(&pod);
    }
    for (const auto& [_, np] : cluster.policies) {
        std::vector<const PolicyPod*> selected;
        for (const auto* pod : k.local) {
            if (pod->namespaceName == np.namespaceName && np.podSelector.matches(pod->labels)) selected.push_back(pod);
        }
        if (selected.empty()) continue;
        for (const auto* pod : selected) {
            for (const auto& ip : pod->ips) {
                if (np.ingress) k.out.isolatedIngress.push_back({ip, {np.key()}, logs(np.log, false)});
                if (np.egress) k.out.isolatedEgress.push_back({ip, {np.key()}, logs(np.log, false)});
            }
        }
        if (np.ingress) {
            for (size_t i = 0; i < np.ingressRules.size(); ++i) k.ingressRule(np, static_cast<int>(i), np.ingressRules[i], selected);
        }
        if (np.egress) {
            for (size_t i = 0; i < np.egressRules.size(); ++i) k.egressRule(np, static_cast<int>(i), np.egressRules[i], selected);
        }
    }
    mergeIsolations(k.out.isolatedIngress);
    mergeIsolations(k.out.isolatedEgress);
    std::vector<const AdminPolicy*> anps;
    for (const auto& [_, p] : tiers.admin) anps.push_back(&p);
    k.adminTier(tiers, Tier::Admin, std::move(anps));
    if (tiers.baseline) k.adminTier(tiers, Tier::Baseline, {tiers.baseline});
    uint32_t id = 0;
    for (auto& r : k.out.rules) r.id = ++id;
    return std::move(k.out);
}

bool PrefixLess::operator()(const IpPrefix& a, const IpPrefix& b) const {
    return std::tie(a.family, a.bytes, a.prefixLen) < std::tie(b.family, b.bytes, b.prefixLen);
}

static_assert(kAdminRulesMax <= 0x10000 && kAdminGroupsMax <= 0x1000, "adminRuleId's fields");

uint32_t adminRuleId(Tier tier, bool ingress, int precedence, int group) {
    return 0x80000000u | (tier == Tier::Baseline ? 0x20000000u : 0u) | (ingress ? 0x10000000u : 0u) | static_cast<uint32_t>(precedence) << 12 |
           static_cast<uint32_t>(group);
}

}  // namespace kovs::policy
