#include "ovs/PacketHeaders.hpp"

#include <netinet/in.h>

#include <cstring>

namespace kovs::ovs {
namespace {

struct Bytes {
    std::string_view b;
    bool has(size_t at, size_t n) const { return at <= b.size() && n <= b.size() - at; }
    uint8_t u8(size_t at) const { return static_cast<uint8_t>(b[at]); }
    uint16_t u16(size_t at) const { return uint16_t(u8(at) << 8 | u8(at + 1)); }
};

IpPrefix address(const Bytes& p, size_t at, int family) {
    IpPrefix a;
    a.family = family;
    a.prefixLen = family == AF_INET ? 32 : 128;
    std::memcpy(a.bytes.data(), p.b.data() + at, a.size());
    return a;
}

constexpr uint16_t kEtherIpv4 = 0x0800, kEtherIpv6 = 0x86dd, kEtherVlan = 0x8100, kEtherQinq = 0x88a8;

void readTransport(const Bytes& p, size_t at, PacketHeaders& h) {
    switch (h.protocol) {
        case IPPROTO_TCP:
        case IPPROTO_UDP:
        case IPPROTO_SCTP:
            if (!p.has(at, 4)) return;
            h.sourcePort = p.u16(at);
            h.destinationPort = p.u16(at + 2);
            h.hasPorts = true;
            if (h.protocol == IPPROTO_TCP && p.has(at + 13, 1)) h.tcpFlags = p.u8(at + 13);
            return;
        case IPPROTO_ICMP:
        case IPPROTO_ICMPV6:
            if (!p.has(at, 2)) return;
            h.sourcePort = p.u8(at);
            h.destinationPort = p.u8(at + 1);
            h.hasPorts = true;
            return;
        default: return;
    }
}

std::string endpoint(const IpPrefix& a, bool ports, uint16_t port) {
    if (!ports) return a.addressString();
    return a.family == AF_INET6 ? "[" + a.addressString() + "]:" + std::to_string(port) : a.addressString() + ":" + std::to_string(port);
}

}  // namespace

std::string PacketHeaders::protocolName() const {
    switch (protocol) {
        case IPPROTO_TCP: return "TCP";
        case IPPROTO_UDP: return "UDP";
        case IPPROTO_SCTP: return "SCTP";
        case IPPROTO_ICMP: return "ICMP";
        case IPPROTO_ICMPV6: return "ICMPv6";
        default: return "IP protocol " + std::to_string(protocol);
    }
}

// ICMP's type and code are no ports: shown as the address alone.
std::string PacketHeaders::sourceText() const { return endpoint(source, hasPorts && protocol != IPPROTO_ICMP && protocol != IPPROTO_ICMPV6, sourcePort); }
std::string PacketHeaders::destinationText() const {
    return endpoint(destination, hasPorts && protocol != IPPROTO_ICMP && protocol != IPPROTO_ICMPV6, destinationPort);
}

std::optional<PacketHeaders> parsePacketHeaders(std::string_view frame) {
    const Bytes p{frame};
    if (!p.has(0, 14)) return std::nullopt;
    size_t at = 12;
    uint16_t ethertype = p.u16(at);
    for (int tags = 0; (ethertype == kEtherVlan || ethertype == kEtherQinq) && tags < 2; ++tags) {
        at += 4;
        if (!p.has(at, 2)) return std::nullopt;
        ethertype = p.u16(at);
    }
    at += 2;
    PacketHeaders h;
    if (ethertype == kEtherIpv4) {
        if (!p.has(at, 20) || p.u8(at) >> 4 != 4) return std::nullopt;
        const size_t ihl = size_t(p.u8(at) & 0x0f) * 4;
        h.protocol = p.u8(at + 9);
        h.source = address(p, at + 12, AF_INET);
        h.destination = address(p, at + 16, AF_INET);
        const bool laterFragment = (p.u16(at + 6) & 0x1fff) != 0;
        if (ihl >= 20 && !laterFragment) readTransport(p, at + ihl, h);
        return h;
    }
    if (ethertype != kEtherIpv6) return std::nullopt;
    if (!p.has(at, 40) || p.u8(at) >> 4 != 6) return std::nullopt;
    h.source = address(p, at + 8, AF_INET6);
    h.destination = address(p, at + 24, AF_INET6);
    uint8_t next = p.u8(at + 6);
    at += 40;
    // At most a few extension headers: a packet that chains more is logged without ports.
    for (int n = 0; n < 8; ++n) {
        if (next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS) {
            if (!p.has(at, 2)) {
                h.protocol = next;
                return h;
            }
            next = p.u8(at);
            at += (size_t(p.u8(at + 1)) + 1) * 8;
        } else if (next == IPPROTO_FRAGMENT) {
            if (!p.has(at, 8)) {
                h.protocol = next;
                return h;
            }
            const bool laterFragment = (p.u16(at + 2) & 0xfff8) != 0;
            next = p.u8(at);
            at += 8;
            if (laterFragment) {
                h.protocol = next;
                return h;
            }
        } else {
            break;
        }
    }
    h.protocol = next;
    readTransport(p, at, h);
    return h;
}

}  // namespace kovs::ovs
