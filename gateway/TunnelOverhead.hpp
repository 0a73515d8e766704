#pragma once
// How many bytes the tunnel in use adds to each pod packet on the underlay,
// which the gateway's and the pods' MTU must leave free. Counted against the
// underlay's MTU (an IP packet's size), so the outer Ethernet header is not
// in it and the pod's own Ethernet header is:
//
//   outer IP (20, IPv6 40) + UDP 8 + tunnel header + inner Ethernet 14
//   VXLAN   header 8                                  -> 50 (IPv6: 70)
//   Geneve  header 8 + options                        -> 50 + options
//   GRE     header 4, +4 with a key, +4 with checksums (no UDP) -> 38..46
//
// Geneve's options are what the switch's TLV table maps: each mapped option
// costs its 4-byte option header plus its length. OVN maps exactly one,
// class 0x0102 type 0x80 with 4 bytes (the logical ingress and egress port),
// so OVN's Geneve costs 58 bytes on IPv4, which is what was measured on the
// wire here (tcpdump: a 1028-byte pod packet left eth0 as a 1086-byte one).
// The tunnel is read from OVSDB: every Interface of a tunnel type on the
// integration bridge (OVN makes one per remote chassis; Antrea one flow-based
// port); the largest overhead of them counts.
#include <optional>
#include <string>
#include <vector>

namespace kovs::ovs {
class OvsdbReplica;
}

namespace kovs::gateway {

constexpr int kOuterIPv4 = 20, kOuterIPv6 = 40, kUdp = 8, kInnerEthernet = 14;
// kovs's own tunnel (and the one the config's MTUs count): 50, or 70 over IPv6.
constexpr int vxlanOverhead(bool ipv6Underlay) {
    return (ipv6Underlay ? kOuterIPv6 : kOuterIPv4) + kUdp + 8 + kInnerEthernet;
}

struct TunnelInUse {
    std::string port;             // e.g. "ovn-node2-0"
    std::string type;             // vxlan, geneve, gre
    bool ipv6Underlay = false;    // options:remote_ip (or local_ip) is IPv6
    bool greKey = false;          // options:key present (GRE)
    bool greChecksum = false;     // options:csum=true (GRE)
};

// Overhead of one tunnel; `geneveOptionBytes` from geneveOptionBytes(). None
// for a type this does not know (stt, erspan, ...).
std::optional<int> tunnelOverhead(const TunnelInUse& tunnel, int geneveOptionBytes = 0);

// Tunnel interfaces of `bridge` in the replica (Bridge, Port, Interface tables).
std::vector<TunnelInUse> tunnelsOn(const ovs::OvsdbReplica& replica, const std::string& bridge);

// The option space the TLV table maps, from `ovs-ofctl dump-tlv-map BRIDGE`:
// the sum of (4 + length) over its mappings; 0 for an empty table. Throws
// kovs::Error when the text is not a TLV table reply.
int geneveOptionBytes(const std::string& dumpTlvMap);

}  // namespace kovs::gateway
