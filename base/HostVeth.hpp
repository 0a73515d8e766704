#pragma once
// The host end of a pod veth is an OVS port that ovs-vswitchd reads through
// AF_PACKET, and the node's kernel sees every frame on it too. With an IP
// stack on that end, the kernel answered the pod's ARP for its gateway with
// the veth's own MAC (arp_ignore=0 answers for any local address) and then
// routed the pod's packets itself (nodes forward IP) next to OVS: every packet
// crossed the tunnel twice and TCP drowned in duplicate segments (measured:
// 0.4x the throughput). So the kernel gets no ARP (IFF_NOARP) and no IPv6 on
// it. kovs-cni does this at ADD; the agent's offload guard repairs pods that
// an older kovs-cni attached.
#include <string>

namespace kovs {

// Sets IFF_NOARP and disable_ipv6 on `name` in the calling thread's netns.
// Returns true when it had to change something; throws kovs::Error.
bool isolateHostVeth(const std::string& name);

}  // namespace kovs
