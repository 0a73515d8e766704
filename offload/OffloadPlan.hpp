#pragma once
// The offload job's observe -> plan -> apply, shared by the OffloadGuard and
// kovsctl doctor (whose tx-checksum check is this plan, dry):
//   observeOffload()    reads what each device has: TX checksum offload
//                       (inside the device's netns) and, for a kovs pod
//                       veth's host end, whether it is off the node's IP
//                       stack (base/LinkIsolation.hpp says why it must be);
//   planOffload()       pure: the repairs those observations call for, and
//                       what could not be read;
//   applyOffloadRepair() makes one repair.
// Nothing here throws for one device: an unreadable device is an observation
// like any other, so one broken pod never stops the others being looked after.
#include <optional>
#include <string>
#include <vector>

#include "offload/PodInterfaces.hpp"

namespace kovs::offload {

// One thing the job looks after on one device.
struct OffloadObservation {
    enum class Aspect { TxChecksum, HostVeth };
    Aspect aspect = Aspect::TxChecksum;
    std::string where;   // for people: "gw0", "pod default/web (/run/netns/x:eth0)", a host end's name
    std::string netns;   // the device's netns ("": the caller's own)
    std::string ifname;  // the device in it
    // true: it needs the repair (TX checksum on; the host end on the IP
    // stack); false: as the job wants it; nullopt: unreadable (`error`).
    std::optional<bool> needsRepair;
    std::string error;
};

// The same fields name a repair: what to change, where.
using OffloadRepair = OffloadObservation;

struct OffloadPlan {
    std::vector<OffloadRepair> repairs;
    std::vector<OffloadObservation> unreadable;
    size_t checked = 0;  // observations that could be read
    bool empty() const { return repairs.empty() && unreadable.empty(); }
};

// Host devices live in the caller's netns. A pod's host end is looked after
// only where kovs-cni attached it (another CNI's stays as that CNI made it).
std::vector<OffloadObservation> observeOffload(const std::vector<std::string>& hostDevices,
                                               const std::vector<PodInterface>& pods);
OffloadObservation observeTxChecksum(std::string where, std::string netns, std::string ifname);
std::vector<OffloadObservation> observePod(const PodInterface& pod);

OffloadPlan planOffload(const std::vector<OffloadObservation>& observed);

// "would turn TX checksum off on gw0" (dryRun) or "turned TX checksum off on gw0".
std::string describe(const OffloadRepair& repair, bool dryRun);

// Throws kovs::Error when the device did not take it.
void applyOffloadRepair(const OffloadRepair& repair);

}  // namespace kovs::offload
