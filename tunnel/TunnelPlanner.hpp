#pragma once
// The tunnel job's plan, pure: from the peers kovs wants, what vswitchd and
// the kernel hold, and what the job remembers of earlier passes, the ordered
// unixctl commands that bring vswitchd to the desired state, and what it
// holds once they succeeded. TunnelReconciler applies it; kovsctl doctor
// runs it as a dry run (a non-empty plan is a failing check).
//
// For each peer, following the node kernel's route to it: a host route
// `ovs/route/add <ip>/32 <bridge> [<gateway>]` (/128 for IPv6; the gateway
// when the kernel's route has one) and a neighbour `tnl/neigh/set <bridge>
// <hop> <mac>` for its next hop (the peer when on-link, else the gateway,
// one entry shared by every peer behind it) with the MAC the kernel
// resolved, so the first packet to a new peer is not lost to OVS's own ARP.
// A peer the kernel has no route to is reported and left as vswitchd has it;
// the other peers go on. Every unmarked user host route on the bridge is
// treated as ours (the agent owns br-phy): those of IPs that are no peer are
// deleted, also ones left from before an agent restart.
//
// OVS 3.1 has no per-entry tnl/neigh delete (list-commands: aging, flush,
// set, show): when a neighbour of a peer that left is still there, whether
// kovs set it or OVS learned it by snooping ARP, the plan flushes and then
// re-sets every remaining peer in the same batch, so the window without
// entries is one round trip. Neighbours are also re-set when a refresh is
// due, well before OVS ages them out (tnl/neigh/aging, 900 s).
#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ovs/UnixctlClient.hpp"
#include "tunnel/OvsTunnelState.hpp"
#include "tunnel/Underlay.hpp"

namespace kovs::tunnel {

struct TunnelDesired {
    std::string bridge = "br-phy";
    std::set<std::string> peerIPs;  // canonical text, as vswitchd prints them
};

// What the job knows of vswitchd and the kernel at the start of a pass.
struct TunnelObserved {
    pid_t vswitchdPid = -1;                         // the daemon that answered the read-back
    OvsTunnelState ovs;                             // ovs/route/show + tnl/neigh/show
    std::map<std::string, std::string> kernelMacs;  // ip -> MAC, the kernel's neighbours on the bridge
    // Peer ip -> how the kernel reaches it (observeKernel). A peer missing
    // here is taken as on-link with no problem (unit tests of other cases).
    std::map<std::string, PeerPath> paths;
    std::vector<AddressInfo> bridgeAddresses;       // the kernel's addresses on the bridge (none: unknown)
    bool refreshDue = false;                        // neighRefresh elapsed since the last full refresh
};

// What the job remembers between passes (all empty on a dry run).
struct TunnelMemory {
    pid_t vswitchdPid = -1;                   // the vswitchd the rest of this is about
    std::map<std::string, std::string> macs;  // next hop ip -> last MAC the kernel had for it
    std::set<std::string> ownedNeighbours;    // next hop ips kovs tnl/neigh/set in that vswitchd
    std::set<std::string> formerPeers;        // peers that left and whose neighbour may still be there
};

struct TunnelStep {
    enum class Kind { DeleteRoute, AddRoute, FlushNeighbours, SetNeighbour };
    Kind kind;
    std::string ip;   // the peer (a route), the next hop (a neighbour), "" for a flush
    std::string why;  // "no OVS route", "tunnel neighbour has MAC x, the kernel y", ...
    ovs::UnixctlCommand command;
};

struct TunnelPlan {
    std::vector<TunnelStep> steps;  // in the order they must run, as one pipeline
    // What vswitchd holds once every step succeeded: peer ips with the user
    // route the kernel's path asks for, and next hop ips with a tunnel
    // neighbour on the bridge.
    std::set<std::string> routed;
    std::set<std::string> neighboured;
    std::map<std::string, std::string> hops;    // peer ip -> its next hop, for every peer with a path
    std::set<std::string> resolve;              // peers whose next hop the kernel has no MAC for: make it resolve them
    std::set<std::string> unresolved;           // of those, the ones with no MAC at all: no neighbour for them yet
    std::map<std::string, std::string> noPath;  // peer ip -> why the kernel cannot reach it (PeerPath::problem)
    // The bridge's cover address (isCoverAddress) when one is needed; to add
    // before the steps run when it is not there yet; stale ones to remove.
    std::optional<AddressInfo> cover;
    std::optional<AddressInfo> coverAdd;
    std::vector<AddressInfo> coverDelete;
    std::set<std::string> coverHolds;  // the next hops only the cover address holds
    bool vswitchdRestarted = false;    // a different vswitchd than the memory's (not the first one seen)
    bool refresh = false;              // every known neighbour is set again
    TunnelMemory memory;               // to remember if nothing is sent (settleTunnel otherwise)

    std::vector<ovs::UnixctlCommand> commands() const;
    bool empty() const { return steps.empty() && unresolved.empty() && noPath.empty() && !coverAdd && coverDelete.empty(); }
    // Every peer's next hop, once each.
    std::set<std::string> nextHops() const;
    // Whether vswitchd holds this peer's route / its next hop's neighbour.
    bool hasRoute(const std::string& peer) const { return routed.count(peer) > 0; }
    bool hasNeighbour(const std::string& peer) const;
};

TunnelPlan planTunnel(const TunnelDesired& desired, const TunnelObserved& observed, const TunnelMemory& memory);

// What one applied plan leaves: the memory for the next pass, what vswitchd
// holds (the plan's expectation minus the steps that failed), and the errors.
struct TunnelOutcome {
    TunnelMemory memory;
    std::set<std::string> routed;
    std::set<std::string> neighboured;
    size_t failures = 0;
    std::string error;  // "2 of 5 unixctl commands failed, first: tnl/neigh/set ...: ..."; "" when none did
    bool refreshed = false;  // a due refresh went through: restart its clock
};

// `replies` are the pipeline's, one per plan step and in order.
TunnelOutcome settleTunnel(const TunnelPlan& plan, const std::vector<ovs::UnixctlReply>& replies);

// A dry run's findings (kovsctl doctor), by IP: why vswitchd is not as
// desired and what fixes it ("ovs-appctl tnl/neigh/set br-phy ..."). Peers
// the kernel has no MAC for or no route to are reported too, though no step
// is planned for them.
struct TunnelGap {
    std::vector<std::string> why;
    std::vector<std::string> fixes;
};
std::map<std::string, TunnelGap> gapsOf(const TunnelDesired& desired, const TunnelPlan& plan);

// The kernel's half of TunnelObserved: each peer's path and the MACs of the
// next hops on `bridge` (none while the bridge is missing: vswitchd restarts).
void observeKernel(Underlay& underlay, const std::string& bridge, const std::set<std::string>& peerIPs,
                   TunnelObserved& observed);

// ip/32, or ip/128 for IPv6.
std::string hostRoute(const std::string& ip);

// OVS 3.1 routes a tunnel only out of a bridge with an address whose prefix
// holds the next hop (it is the tunnel's source; `ovs/route/add` answers
// "Error while inserting route." otherwise, and 3.1 has no `src=`). A node
// with a /32 address and an on-link gateway (a cloud VM's shape) has none.
// For IPv4 kovs then adds the node's own address once more, as /0 with scope
// host and noprefixroute: the kernel makes no route and no broadcast address
// of it, so its routing and source selection stay as they were, and the
// uplink job never moves a host-scope address. An IPv6 address can have one
// prefix only: a peer whose IPv6 next hop no address holds is reported.
bool isCoverAddress(const AddressInfo& a);

}  // namespace kovs::tunnel
