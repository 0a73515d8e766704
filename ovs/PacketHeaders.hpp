#pragma once
// What a log line says of a packet, read from its bytes as a packet-in
// carries them (from the Ethernet header, maybe cut short by the controller
// action's max_len): the addresses, the transport protocol and its ports.
// Ethernet with up to two VLAN tags; IPv4 (options skipped, a later fragment
// has no ports); IPv6 with its extension headers skipped (hop-by-hop,
// routing, fragment, destination options); TCP, UDP and SCTP ports, ICMP
// and ICMPv6 type and code. Bytes from the datapath are untrusted: every
// read is bounds-checked, a truncated or odd packet gives what could be read.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/IpPrefix.hpp"

namespace kovs::ovs {

struct PacketHeaders {
    IpPrefix source, destination;  // host prefixes; their family is the packet's
    uint8_t protocol = 0;          // IPPROTO_TCP, _UDP, _SCTP, _ICMP, _ICMPV6, or another
    bool hasPorts = false;         // sourcePort/destinationPort were read
    uint16_t sourcePort = 0, destinationPort = 0;  // ICMP: type and code
    uint8_t tcpFlags = 0;                          // TCP only (0x02 SYN, 0x10 ACK)
    // "TCP", "UDP", "SCTP", "ICMP", "ICMPv6" or "IP protocol N".
    std::string protocolName() const;
    // "10.244.1.5:33333", "[fd00::5]:80"; the address alone without ports.
    std::string sourceText() const;
    std::string destinationText() const;
};

// nullopt for a frame that is not IPv4 or IPv6, or too short to hold both addresses.
std::optional<PacketHeaders> parsePacketHeaders(std::string_view frame);

}  // namespace kovs::ovs
