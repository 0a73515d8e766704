// parsePacketHeaders: what a policy log line says of a packet-in's bytes.
#include "ovs/PacketHeaders.hpp"

#include <gtest/gtest.h>

#include "tests/unit/ovs/TestFrames.hpp"

using kovs::ovs::parsePacketHeaders;
using kovs::test::ipFrame;

TEST(PacketHeaders, Ipv4TcpSyn) {
    auto h = parsePacketHeaders(ipFrame("10.244.1.5", "10.244.2.7", IPPROTO_TCP, 33333, 80));
    ASSERT_TRUE(h);
    EXPECT_EQ(h->source.str(), "10.244.1.5/32");
    EXPECT_EQ(h->destination.str(), "10.244.2.7/32");
    EXPECT_EQ(h->protocolName(), "TCP");
    EXPECT_EQ(h->sourceText(), "10.244.1.5:33333");
    EXPECT_EQ(h->destinationText(), "10.244.2.7:80");
    EXPECT_EQ(h->tcpFlags, 0x02);
}

TEST(PacketHeaders, Ipv6UdpAndVlan) {
    auto frame = ipFrame("fd00:10:244:1::5", "fd00:10:244:2::7", IPPROTO_UDP, 5353, 53);
    auto h = parsePacketHeaders(frame);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->protocolName(), "UDP");
    EXPECT_EQ(h->sourceText(), "[fd00:10:244:1::5]:5353");
    EXPECT_EQ(h->destinationText(), "[fd00:10:244:2::7]:53");
    // The same frame with an 802.1Q tag.
    std::string tagged = frame.substr(0, 12) + std::string("\x81\x00\x00\x05", 4) + frame.substr(12);
    auto t = parsePacketHeaders(tagged);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->destinationText(), "[fd00:10:244:2::7]:53");
}

TEST(PacketHeaders, Ipv6ExtensionHeadersAreSkipped) {
    auto frame = ipFrame("fd00::1", "fd00::2", IPPROTO_TCP, 1000, 443);
    // A hop-by-hop header (8 bytes) between IPv6 and TCP.
    std::string ext = std::string(1, char(IPPROTO_TCP)) + std::string(7, '\0');
    std::string withExt = frame.substr(0, 14 + 6) + std::string(1, char(IPPROTO_HOPOPTS)) + frame.substr(14 + 7, 33) + ext + frame.substr(14 + 40);
    auto h = parsePacketHeaders(withExt);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->protocolName(), "TCP");
    EXPECT_EQ(h->destinationText(), "[fd00::2]:443");
}

TEST(PacketHeaders, TruncatedAndForeignFrames) {
    auto frame = ipFrame("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 1, 2);
    EXPECT_FALSE(parsePacketHeaders(frame.substr(0, 13)));  // no ethertype
    EXPECT_FALSE(parsePacketHeaders(frame.substr(0, 14 + 19)));  // no whole IPv4 header
    auto noPorts = parsePacketHeaders(frame.substr(0, 14 + 20 + 3));
    ASSERT_TRUE(noPorts);  // the addresses without ports
    EXPECT_FALSE(noPorts->hasPorts);
    EXPECT_EQ(noPorts->sourceText(), "10.0.0.1");
    std::string arp = frame.substr(0, 12) + std::string("\x08\x06", 2) + std::string(28, '\0');
    EXPECT_FALSE(parsePacketHeaders(arp));
    // A later fragment carries no ports.
    std::string later = frame;
    later[14 + 6] = 0x00;
    later[14 + 7] = 0x10;
    auto frag = parsePacketHeaders(later);
    ASSERT_TRUE(frag);
    EXPECT_FALSE(frag->hasPorts);
}
