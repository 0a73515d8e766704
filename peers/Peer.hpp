#pragma once
// A peer node of the tunnel: where its VXLAN endpoint is (the underlay node
// IP) and which pod networks live behind it.
#include <map>
#include <string>
#include <vector>

namespace kovs::peers {

struct Peer {
    std::string name;                   // Kubernetes Node name, or the file's `name`
    std::string nodeIP;                 // underlay IPv4 or IPv6 address, canonical text form
    std::vector<std::string> podCIDRs;  // canonical "addr/plen", sorted

    bool operator==(const Peer&) const = default;
};

// The full desired set, keyed by name: every PeerSource reports the whole set,
// never deltas, so a consumer can simply reconcile against it.
using PeerSet = std::map<std::string, Peer>;

// Canonicalises and validates an IP address ("fd00::01" -> "fd00::1");
// throws kovs::Error naming `what` when it is not an IPv4/IPv6 address.
std::string canonicalIP(const std::string& text, const std::string& what);
// Same for a CIDR; host bits must be zero ("10.244.1.0/24").
std::string canonicalCIDR(const std::string& text, const std::string& what);

}  // namespace kovs::peers
