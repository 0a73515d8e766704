#pragma once
// The kernel's neighbour table (ARP/NDP) for one interface, over rtnetlink:
// where a peer's underlay MAC comes from before it is handed to OVS.
#include <map>
#include <string>

namespace kovs::tunnel {

class NeighbourTable {
public:
    virtual ~NeighbourTable() = default;
    // ip (canonical text) -> MAC ("aa:bb:cc:dd:ee:ff") for every entry of
    // `ifname` that has a usable link-layer address (not INCOMPLETE/FAILED).
    // Throws kovs::Error when the interface does not exist or the dump fails.
    virtual std::map<std::string, std::string> resolved(const std::string& ifname) = 0;
    // Makes the kernel resolve `ip`. The kernel only starts ARP/NDP for
    // traffic, and there is no netlink request for "resolve this" that works
    // everywhere (NTF_USE needs an existing entry), so this sends one empty
    // UDP datagram to the discard port: the route to the peer goes through
    // the bridge, the datagram waits in the neighbour queue, and the reply
    // fills the entry. The peer drops the datagram.
    virtual void trigger(const std::string& ip) = 0;
};

class KernelNeighbourTable : public NeighbourTable {
public:
    std::map<std::string, std::string> resolved(const std::string& ifname) override;
    void trigger(const std::string& ip) override;
};

}  // namespace kovs::tunnel
