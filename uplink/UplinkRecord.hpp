#pragma once
// eth0's addressing as it was before kovs moved it: written before the first
// change, read by later starts and by --cleanup, which restores it exactly
// (flags, order, routes). It is a record, not the source of truth: the
// planner falls back to what the interfaces hold when it is missing (a
// reboot emptied its tmpfs) or stale (it names addresses nobody holds).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/RtnetlinkClient.hpp"

namespace kovs::uplink {

struct UplinkRecord {
    std::string mode;                    // "shim" / "direct"
    std::string device;                  // "eth0"
    std::string mac;                     // eth0's MAC, which br-phy takes
    unsigned mtu = 0;
    std::vector<AddressInfo> addresses;  // in eth0's order
    std::vector<RouteInfo> routes;

    bool operator==(const UplinkRecord&) const = default;
};

nlohmann::json toJson(const UplinkRecord& r);
// Throws kovs::Error naming the field on anything it cannot read.
UplinkRecord recordFromJson(const nlohmann::json& j);

// nullopt when the file does not exist; a file that is not a record of this
// format (an older kovs wrote `ip -j` output there) is logged and treated as
// missing, since the interfaces themselves say where the addresses are.
std::optional<UplinkRecord> loadRecord(const std::string& path);
// Atomically (write + rename); creates the directory. Throws kovs::Error.
void saveRecord(const std::string& path, const UplinkRecord& r);
void removeRecord(const std::string& path);

}  // namespace kovs::uplink
