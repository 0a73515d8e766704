#pragma once
// The node kernel's view of the underlay, as the tunnel job needs it: how
// each peer is reached (the route's next hop: the peer itself when it is
// on-link, else a gateway), the MACs of those next hops on the bridge, a
// way to make the kernel resolve one, and the bridge's addresses (for the
// cover address planTunnel may ask for). Underlay is the seam for tests and
// benchmarks; KernelUnderlay asks the kernel over rtnetlink.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/RtnetlinkClient.hpp"

namespace kovs::tunnel {

// How the kernel reaches one peer.
struct PeerPath {
    std::string gateway;  // the route's next hop; "" when the peer is on-link
    std::string device;   // the device the route leaves by
    unsigned mtu = 0;     // the route's MTU metric, else the device's; 0 unknown
    // Why there is no usable path ("no route to host: Network is unreachable");
    // "" when there is one.
    std::string problem;

    // The address whose MAC the tunnel needs: the gateway, else the peer.
    const std::string& hop(const std::string& peer) const { return gateway.empty() ? peer : gateway; }
    bool operator==(const PeerPath&) const = default;
};

// The narrowest of the peers' paths whose MTU the kernel knows: what the
// underlay carries to every peer (the agent sizes gw0 and new pods from it).
struct NarrowestPath {
    std::string peer;  // its peer ip; "" with mtu 0 when no path has an MTU
    unsigned mtu = 0;
    bool operator==(const NarrowestPath&) const = default;
};
// Of `paths` (peer ip -> path; a path without an MTU is left out); of equal
// ones, the first peer ip.
NarrowestPath narrowestPath(const std::map<std::string, PeerPath>& paths);

class Underlay {
public:
    virtual ~Underlay() = default;
    // ip (canonical text) -> MAC ("aa:bb:cc:dd:ee:ff") for every entry of
    // `ifname` that has a usable link-layer address (not INCOMPLETE/FAILED).
    // Throws kovs::Error when the interface does not exist or the dump fails.
    virtual std::map<std::string, std::string> resolved(const std::string& ifname) = 0;
    // The kernel's route to `ip` (RTM_GETROUTE). Never throws: a failed
    // lookup is a path with a problem.
    virtual PeerPath pathTo(const std::string& ip) = 0;
    // Makes the kernel resolve the next hop towards `ip`. The kernel only
    // starts ARP/NDP for traffic, and there is no netlink request for
    // "resolve this" that works everywhere (NTF_USE needs an existing entry),
    // so this sends one empty UDP datagram to the discard port: it waits in
    // the next hop's neighbour queue, and the reply fills the entry. The peer
    // drops the datagram.
    virtual void trigger(const std::string& ip) = 0;
    // The interface's addresses; throws kovs::Error when it does not exist.
    virtual std::vector<AddressInfo> addresses(const std::string& ifname) = 0;
    // Adds (present) or removes one address of the interface; throws kovs::Error.
    virtual void setAddress(const std::string& ifname, const AddressInfo& a, bool present) = 0;
};

class KernelUnderlay : public Underlay {
public:
    std::map<std::string, std::string> resolved(const std::string& ifname) override;
    PeerPath pathTo(const std::string& ip) override;
    void trigger(const std::string& ip) override;
    std::vector<AddressInfo> addresses(const std::string& ifname) override;
    void setAddress(const std::string& ifname, const AddressInfo& a, bool present) override;

private:
    // One socket for every lookup of a pass (a pass asks once per peer).
    RtnetlinkClient& rtnl();
    std::optional<RtnetlinkClient> rtnl_;
};

}  // namespace kovs::tunnel
