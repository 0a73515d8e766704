#pragma once
// What `ovs-ofctl dump-flows` says a bridge holds, read back to tell whether
// the table is still the one kovs installed (a vswitchd restart empties it,
// anyone with the management socket can change it) and to read the packet
// counts of the drop flows kovs exports as metrics. Comparing two dumps needs
// no model of OVS's flow syntax: only the statistics are taken out.
#include <cstdint>
#include <map>
#include <string>

namespace kovs::flows {

struct FlowDump {
    // The flows without their statistics (duration, n_packets, n_bytes,
    // idle_age, hard_age), one per line, sorted.
    std::string flows;
    size_t count = 0;
    std::map<uint64_t, uint64_t> packetsByCookie;  // summed over the flows of each cookie
};

// Parses the output of `ovs-ofctl dump-flows BRIDGE` (any OpenFlow version's
// layout: a reply header line, then one " cookie=..., ... actions=..." line per
// flow). Throws kovs::Error on a flow line it cannot read.
FlowDump parseFlowDump(const std::string& text);

}  // namespace kovs::flows
