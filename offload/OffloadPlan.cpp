#include "offload/OffloadPlan.hpp"

#include <optional>

#include "base/Error.hpp"
#include "base/Ethtool.hpp"
#include "base/LinkIsolation.hpp"
#include "base/Netns.hpp"

namespace kovs::offload {
namespace {

using Aspect = OffloadObservation::Aspect;

// Runs `read` inside `netns` (the caller's own when empty): an Error becomes
// the observation's error, never a throw.
template <typename Read>
OffloadObservation observe(Aspect aspect, std::string where, std::string netns, std::string ifname, Read read) {
    OffloadObservation o{aspect, std::move(where), std::move(netns), std::move(ifname), std::nullopt, ""};
    try {
        std::optional<Netns> in;
        if (!o.netns.empty()) in.emplace(o.netns);
        o.needsRepair = read(o.ifname);
    } catch (const Error& e) {
        o.error = e.what();
    }
    return o;
}

}  // namespace

OffloadObservation observeTxChecksum(std::string where, std::string netns, std::string ifname) {
    return observe(Aspect::TxChecksum, std::move(where), std::move(netns), std::move(ifname),
                   [](const std::string& dev) { return Ethtool().txChecksum(dev); });
}

std::vector<OffloadObservation> observePod(const PodInterface& pod) {
    std::vector<OffloadObservation> out;
    out.push_back(observeTxChecksum((pod.pod.empty() ? "" : "pod " + pod.pod + " ") + "(" + pod.netns + ":" + pod.ifname + ")",
                                    pod.netns, pod.ifname));
    // A foreign pod's host end is its CNI's: hostIfname is empty for those.
    if (!pod.hostIfname.empty()) {
        out.push_back(observe(Aspect::HostVeth, pod.hostIfname, "", pod.hostIfname,
                              [](const std::string& dev) { return !linkIsolated(dev); }));
    }
    return out;
}

std::vector<OffloadObservation> observeOffload(const std::vector<std::string>& hostDevices,
                                               const std::vector<PodInterface>& pods) {
    std::vector<OffloadObservation> out;
    for (const auto& dev : hostDevices) out.push_back(observeTxChecksum(dev, "", dev));
    for (const auto& pod : pods) {
        for (auto& o : observePod(pod)) out.push_back(std::move(o));
    }
    return out;
}

OffloadPlan planOffload(const std::vector<OffloadObservation>& observed) {
    OffloadPlan plan;
    for (const auto& o : observed) {
        if (!o.needsRepair) {
            plan.unreadable.push_back(o);
            continue;
        }
        ++plan.checked;
        if (*o.needsRepair) plan.repairs.push_back(o);
    }
    return plan;
}

std::string describe(const OffloadRepair& r, bool dryRun) {
    if (r.aspect == Aspect::HostVeth)
        return (dryRun ? "would take " : "took ") + r.where + " (a pod veth's host end) off the node's IP stack";
    return (dryRun ? "would turn TX checksum off on " : "turned TX checksum off on ") + r.where;
}

void applyOffloadRepair(const OffloadRepair& r) {
    if (r.aspect == Aspect::HostVeth) {
        isolateLink(r.ifname);
        return;
    }
    std::optional<Netns> in;
    if (!r.netns.empty()) in.emplace(r.netns);
    Ethtool().setTxChecksum(r.ifname, false);
}

}  // namespace kovs::offload
