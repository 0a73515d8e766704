#pragma once
// Ethernet frames for the tests of the packet-in path: a TCP SYN, a UDP
// datagram, IPv4 or IPv6 (checksums left zero: nothing on the way checks them).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <string>

namespace kovs::test {

inline void put16(std::string& s, uint16_t v) {
    s.push_back(char(v >> 8));
    s.push_back(char(v & 0xff));
}

// `src`/`dst`: "10.0.0.1" or "fd00::1"; `protocol` IPPROTO_TCP (a SYN) or IPPROTO_UDP.
inline std::string ipFrame(const std::string& src, const std::string& dst, uint8_t protocol, uint16_t sport, uint16_t dport,
                           const std::string& dstMac = std::string("\x02\x00\x00\x00\x00\x02", 6),
                           const std::string& srcMac = std::string("\x02\x00\x00\x00\x00\x01", 6)) {
    const bool v6 = src.find(':') != std::string::npos;
    std::string l4;
    put16(l4, sport);
    put16(l4, dport);
    if (protocol == IPPROTO_TCP) {
        l4 += std::string("\x00\x00\x00\x01\x00\x00\x00\x00", 8);  // seq, ack
        l4 += std::string("\x50\x02\x10\x00\x00\x00\x00\x00", 8);  // offset 5, SYN, window, csum, urg
    } else {
        put16(l4, 8 + 4);
        put16(l4, 0);
        l4 += "ping";
    }
    std::string frame = dstMac + srcMac;
    put16(frame, v6 ? 0x86dd : 0x0800);
    unsigned char a[16], b[16];
    inet_pton(v6 ? AF_INET6 : AF_INET, src.c_str(), a);
    inet_pton(v6 ? AF_INET6 : AF_INET, dst.c_str(), b);
    if (v6) {
        frame += std::string("\x60\x00\x00\x00", 4);
        put16(frame, uint16_t(l4.size()));
        frame.push_back(char(protocol));
        frame.push_back(64);
        frame.append(reinterpret_cast<char*>(a), 16);
        frame.append(reinterpret_cast<char*>(b), 16);
    } else {
        frame.push_back(0x45);
        frame.push_back(0);
        put16(frame, uint16_t(20 + l4.size()));
        frame += std::string("\x00\x01\x40\x00", 4);  // id, DF
        frame.push_back(64);
        frame.push_back(char(protocol));
        put16(frame, 0);
        frame.append(reinterpret_cast<char*>(a), 4);
        frame.append(reinterpret_cast<char*>(b), 4);
    }
    return frame + l4;
}

}  // namespace kovs::test
