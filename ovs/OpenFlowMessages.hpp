#pragma once
// The few OpenFlow 1.3 messages kovs-agent speaks itself, on br-int's
// management socket, to receive the packet-ins of policy logging: framing of
// the byte stream, the messages it sends (HELLO, ECHO_REPLY, SET_CONFIG,
// METER_MOD, a meter statistics request) and the ones it reads (PACKET_IN,
// ERROR, the meter statistics reply). Flows are still installed by ovs-ofctl
// (flows/OpenFlowBridge): this is not an OpenFlow library, only what a
// listener needs, written by hand because Debian packages no C++ OpenFlow
// codec, and so small, isolated and fuzzed (tests/fuzz/ovs/OpenFlowFuzz.cpp).
//
// Every decoder takes bytes from vswitchd as untrusted: a length that does
// not add up throws kovs::Error naming the message and the field.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kovs::ovs::openflow {

constexpr uint8_t kVersion13 = 0x04;

enum class Type : uint8_t {
    Hello = 0,
    Error = 1,
    EchoRequest = 2,
    EchoReply = 3,
    SetConfig = 9,
    PacketIn = 10,
    MultipartRequest = 18,
    MultipartReply = 19,
    BarrierRequest = 20,
    BarrierReply = 21,
    MeterMod = 29,
};

struct Header {
    uint8_t version = kVersion13;
    uint8_t type = 0;
    uint16_t length = 0;  // of the whole message, header included
    uint32_t xid = 0;
};
constexpr size_t kHeaderSize = 8;

// Splits the stream into whole messages. feed() appends what was read;
// next() returns one whole message (header included) or nullopt until more
// arrives. A header whose length is below its own size throws kovs::Error:
// the stream cannot be resynchronized, the connection must be dropped.
class Framer {
public:
    void feed(std::string_view bytes) { buffer_.append(bytes); }
    std::optional<std::string> next();
    size_t buffered() const { return buffer_.size() - start_; }

private:
    std::string buffer_;
    size_t start_ = 0;
};

// The header of a whole message (at least kHeaderSize bytes).
Header headerOf(std::string_view message);

// Messages the agent sends.
std::string hello(uint32_t xid);
std::string echoReply(std::string_view request);  // same xid and body
// OFPT_SET_CONFIG: a service connection (the mgmt socket) gets asynchronous
// messages, packet-ins among them, only once it sets a nonzero miss_send_len.
std::string setConfig(uint32_t xid, uint16_t missSendLen);
std::string barrierRequest(uint32_t xid);
enum class MeterCommand : uint16_t { Add = 0, Modify = 1, Delete = 2 };
// One meter in packets per second with one drop band at `rate` (burst 0:
// the datapath's default bucket).
std::string meterMod(uint32_t xid, MeterCommand command, uint32_t meterId, uint32_t ratePktps, uint32_t burst = 0);
// OFPMP_METER for one meter.
std::string meterStatsRequest(uint32_t xid, uint32_t meterId);

// OFPT_PACKET_IN (OpenFlow 1.3).
struct PacketIn {
    uint32_t bufferId = 0;
    uint16_t totalLen = 0;  // of the packet; `data` may be cut short (the action's max_len)
    uint8_t reason = 0;     // 0 no match, 1 action, 2 invalid TTL
    uint8_t tableId = 0;
    uint64_t cookie = 0;  // of the flow whose action sent it
    uint32_t inPort = 0;  // the match's OXM in_port, 0 when absent
    std::string data;     // the packet, from its Ethernet header
};
PacketIn decodePacketIn(std::string_view message);

// OFPT_ERROR: type and code (OpenFlow 1.3 section 7.4.4).
struct ErrorMessage {
    uint16_t type = 0, code = 0;
    bool meterExists() const { return type == 12 && code == 1; }  // OFPET_METER_MOD_FAILED, OFPMMFC_METER_EXISTS
};
ErrorMessage decodeError(std::string_view message);

// One meter of an OFPMP_METER reply: packets that reached it and packets
// each band dropped.
struct MeterStats {
    uint32_t meterId = 0;
    uint64_t packetsIn = 0;
    std::vector<uint64_t> bandDrops;
};
// The meters of an OFPMP_METER multipart reply; nullopt for another multipart type.
std::optional<std::vector<MeterStats>> decodeMeterStats(std::string_view message);

}  // namespace kovs::ovs::openflow
