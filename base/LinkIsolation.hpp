#pragma once
// Links that carry frames for OVS but must stay off the node's IP stack: the
// host ends of pod veths (OVS ports that vswitchd reads through AF_PACKET)
// and the uplink shim's veth ends (kovs-up0, kovs-up1). The node's kernel
// sees every frame on them too, and answers ARP for any local address on any
// interface (arp_ignore=0):
//   - on a pod's host end it answered the pod's ARP for its gateway with the
//     veth's own MAC and then routed the pod's packets itself (nodes forward
//     IP) next to OVS: every packet crossed the tunnel twice and TCP drowned
//     in duplicate segments (measured: 0.4x the throughput);
//   - on the shim's ends it answered for the node IP with their MACs, racing
//     br-phy's reply: peers then tunnelled to a MAC nobody owns (seen: 1 run
//     in 3 black-holed a node pair).
// So such a link gets IFF_NOARP and no IPv6 (disable_ipv6: no link-local,
// no neighbour discovery); where /proc/sys is read-only (the agent's own,
// unprivileged pod on a dual-stack kind node) IPv6 stays on but the link
// gets no address (addrgenmode none), without which the kernel's neighbour
// discovery answers nothing there. Frames still reach OVS (AF_PACKET) and
// the shim's tc redirect, both before the IP layer. kovs-cni isolates a pod's
// host end at ADD, the uplink job the shim's ends, and the offload job
// repairs pods an older kovs-cni attached.
#include <string>

namespace kovs {

// Isolates `name` in the calling thread's netns; before the link first goes
// up, so it never gets an IPv6 link-local address. A node without IPv6 has
// nothing to disable. Returns true when it had to change something; throws
// kovs::Error naming the link.
bool isolateLink(const std::string& name);
// Whether `name` is isolated so (read only); throws kovs::Error.
bool linkIsolated(const std::string& name);

}  // namespace kovs
