// The OpenFlow 1.3 messages of the packet-in listener: framing at every
// split, the packet-in as vswitchd sends it, what is sent, and bad lengths.
#include "ovs/OpenFlowMessages.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "tests/unit/ovs/TestFrames.hpp"

using namespace kovs::ovs::openflow;
using kovs::test::put16;

namespace {

void put32(std::string& s, uint32_t v) {
    put16(s, uint16_t(v >> 16));
    put16(s, uint16_t(v));
}
void put64(std::string& s, uint64_t v) {
    put32(s, uint32_t(v >> 32));
    put32(s, uint32_t(v));
}
void setLength(std::string& s) {
    s[2] = char(s.size() >> 8);
    s[3] = char(s.size() & 0xff);
}

// OFPT_PACKET_IN as OpenFlow 1.3 lays it out, with an OXM in_port match.
std::string packetIn(uint64_t cookie, uint32_t inPort, const std::string& data, uint8_t table = 25) {
    std::string m("\x04\x0a\x00\x00\x00\x00\x00\x00", 8);
    put32(m, 0xffffffff);  // OFP_NO_BUFFER
    put16(m, uint16_t(data.size()));
    m.push_back(1);  // OFPR_ACTION
    m.push_back(char(table));
    put64(m, cookie);
    put16(m, 1);   // OFPMT_OXM
    put16(m, 12);  // 4 + one 8-byte field
    put32(m, 0x80000004);
    put32(m, inPort);
    m.append(4, '\0');  // the match padded to 16
    m.append(2, '\0');  // pad
    m += data;
    setLength(m);
    return m;
}

}  // namespace

TEST(OpenFlowMessages, PacketInDecodes) {
    auto frame = kovs::test::ipFrame("10.244.1.5", "10.244.2.7", IPPROTO_TCP, 33333, 80);
    auto p = decodePacketIn(packetIn(0x6b0000000007, 3, frame));
    EXPECT_EQ(p.cookie, 0x6b0000000007u);
    EXPECT_EQ(p.inPort, 3u);
    EXPECT_EQ(p.tableId, 25);
    EXPECT_EQ(p.reason, 1);
    EXPECT_EQ(p.totalLen, frame.size());
    EXPECT_EQ(p.data, frame);
}

TEST(OpenFlowMessages, FramerSplitsAtEveryOffset) {
    auto a = packetIn(1, 1, "abc"), b = hello(7), c = packetIn(2, 2, std::string(200, 'x'));
    const std::string stream = a + b + c;
    for (size_t chunk = 1; chunk <= stream.size(); chunk += 7) {
        Framer f;
        std::vector<std::string> got;
        for (size_t off = 0; off < stream.size(); off += chunk) {
            f.feed(std::string_view(stream).substr(off, chunk));
            while (auto m = f.next()) got.push_back(*m);
        }
        ASSERT_EQ(got.size(), 3u) << "chunk " << chunk;
        EXPECT_EQ(got[0], a);
        EXPECT_EQ(got[1], b);
        EXPECT_EQ(got[2], c);
        EXPECT_EQ(f.buffered(), 0u);
    }
}

TEST(OpenFlowMessages, BadLengthsThrow) {
    Framer f;
    f.feed(std::string("\x04\x00\x00\x04\x00\x00\x00\x00", 8));  // length 4 < header
    EXPECT_THROW(f.next(), kovs::Error);
    auto p = packetIn(1, 1, "abc");
    EXPECT_THROW(decodePacketIn(p.substr(0, 30)), kovs::Error);  // cut inside the match
    std::string badMatch = p;
    badMatch[27] = 60;  // match length past the message
    setLength(badMatch);
    EXPECT_THROW(decodePacketIn(badMatch), kovs::Error);
    std::string wrongType = p;
    wrongType[1] = 0;
    EXPECT_THROW(decodePacketIn(wrongType), kovs::Error);
}

TEST(OpenFlowMessages, WhatIsSent) {
    EXPECT_EQ(hello(1), std::string("\x04\x00\x00\x08\x00\x00\x00\x01", 8));
    EXPECT_EQ(setConfig(2, 128), std::string("\x04\x09\x00\x0c\x00\x00\x00\x02\x00\x00\x00\x80", 12));
    auto echo = echoReply(std::string("\x04\x02\x00\x0a\x00\x00\x00\x09hi", 10));
    EXPECT_EQ(echo, std::string("\x04\x03\x00\x0a\x00\x00\x00\x09hi", 10));
    // METER_MOD add: pktps|stats, meter 7, one drop band at 100 pkt/s.
    auto mod = meterMod(3, MeterCommand::Add, 7, 100);
    EXPECT_EQ(mod, std::string("\x04\x1d\x00\x20\x00\x00\x00\x03"
                               "\x00\x00\x00\x0a\x00\x00\x00\x07"
                               "\x00\x01\x00\x10\x00\x00\x00\x64\x00\x00\x00\x00\x00\x00\x00\x00",
                               32));
    EXPECT_EQ(meterStatsRequest(4, 7).size(), 24u);
}

TEST(OpenFlowMessages, MeterStatsAndErrors) {
    std::string m("\x04\x13\x00\x00\x00\x00\x00\x05", 8);
    put16(m, 9);  // OFPMP_METER
    put16(m, 0);
    m.append(4, '\0');
    put32(m, 7);
    put16(m, 56);
    m.append(6, '\0');
    put32(m, 3);     // flows
    put64(m, 1000);  // packets in
    put64(m, 54000);
    put32(m, 1);
    put32(m, 0);
    put64(m, 900);  // band 0 dropped
    put64(m, 48600);
    setLength(m);
    auto stats = decodeMeterStats(m);
    ASSERT_TRUE(stats);
    ASSERT_EQ(stats->size(), 1u);
    EXPECT_EQ((*stats)[0].meterId, 7u);
    EXPECT_EQ((*stats)[0].packetsIn, 1000u);
    ASSERT_EQ((*stats)[0].bandDrops.size(), 1u);
    EXPECT_EQ((*stats)[0].bandDrops[0], 900u);
    std::string bad = m;
    bad[16 + 5] = 41;  // an entry length that is no 40 + 16n
    EXPECT_THROW(decodeMeterStats(bad), kovs::Error);

    auto e = decodeError(std::string("\x04\x01\x00\x0c\x00\x00\x00\x01\x00\x0c\x00\x01", 12));
    EXPECT_TRUE(e.meterExists());
    EXPECT_THROW(decodeError(std::string("\x04\x01\x00\x09\x00\x00\x00\x01\x00", 9)), kovs::Error);
}
