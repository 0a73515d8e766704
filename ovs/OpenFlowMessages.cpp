#include "ovs/OpenFlowMessages.hpp"

#include "base/Error.hpp"

namespace kovs::ovs::openflow {
namespace {

// Big-endian fields, read with a bounds check on every access.
class Reader {
public:
    Reader(std::string_view bytes, const char* what) : bytes_(bytes), what_(what) {}
    uint8_t u8(size_t at) const { return static_cast<uint8_t>(byte(at)); }
    uint16_t u16(size_t at) const { return uint16_t(u8(at) << 8 | u8(at + 1)); }
    uint32_t u32(size_t at) const { return uint32_t(u16(at)) << 16 | u16(at + 2); }
    uint64_t u64(size_t at) const { return uint64_t(u32(at)) << 32 | u32(at + 4); }
    size_t size() const { return bytes_.size(); }
    void need(size_t n, const char* field) const {
        if (bytes_.size() < n)
            throw Error(std::string(what_) + ": " + field + " needs " + std::to_string(n) + " bytes, the message has " +
                        std::to_string(bytes_.size()));
    }

private:
    char byte(size_t at) const {
        if (at >= bytes_.size()) need(at + 1, "a field");
        return bytes_[at];
    }
    std::string_view bytes_;
    const char* what_;
};

class Writer {
public:
    Writer(Type type, uint32_t xid) {
        u8(kVersion13);
        u8(static_cast<uint8_t>(type));
        u16(0);  // the length, set by done()
        u32(xid);
    }
    Writer& u8(uint8_t v) {
        out_.push_back(static_cast<char>(v));
        return *this;
    }
    Writer& u16(uint16_t v) { return u8(uint8_t(v >> 8)).u8(uint8_t(v)); }
    Writer& u32(uint32_t v) { return u16(uint16_t(v >> 16)).u16(uint16_t(v)); }
    Writer& zeros(size_t n) {
        out_.append(n, '\0');
        return *this;
    }
    Writer& bytes(std::string_view b) {
        out_.append(b);
        return *this;
    }
    std::string done() {
        out_[2] = static_cast<char>(out_.size() >> 8);
        out_[3] = static_cast<char>(out_.size() & 0xff);
        return std::move(out_);
    }

private:
    std::string out_;
};

constexpr uint16_t kMultipartMeter = 9;  // OFPMP_METER
constexpr uint16_t kMeterFlagPktps = 0x2, kMeterFlagStats = 0x8;
constexpr uint16_t kBandDrop = 1;
constexpr uint16_t kMatchOxm = 1;
constexpr uint32_t kOxmInPort = 0x80000004;  // OFPXMC_OPENFLOW_BASIC, OFPXMT_OFB_IN_PORT, 4 bytes

}  // namespace

std::optional<std::string> Framer::next() {
    if (buffered() < kHeaderSize) return std::nullopt;
    const auto length = headerOf(std::string_view(buffer_).substr(start_, kHeaderSize)).length;
    if (length < kHeaderSize)
        throw Error("OpenFlow stream: a message of length " + std::to_string(length) + ", below its header's 8 bytes");
    if (buffered() < length) return std::nullopt;
    std::string message = buffer_.substr(start_, length);
    start_ += length;
    // Keep the buffer from growing: drop what was consumed once it is most of it.
    if (start_ == buffer_.size()) {
        buffer_.clear();
        start_ = 0;
    } else if (start_ > 65536 && start_ * 2 > buffer_.size()) {
        buffer_.erase(0, start_);
        start_ = 0;
    }
    return message;
}

Header headerOf(std::string_view message) {
    Reader r(message, "OpenFlow header");
    r.need(kHeaderSize, "the header");
    return {r.u8(0), r.u8(1), r.u16(2), r.u32(4)};
}

std::string hello(uint32_t xid) { return Writer(Type::Hello, xid).done(); }

std::string echoReply(std::string_view request) {
    const auto h = headerOf(request);
    return Writer(Type::EchoReply, h.xid).bytes(request.substr(kHeaderSize)).done();
}

std::string setConfig(uint32_t xid, uint16_t missSendLen) {
    return Writer(Type::SetConfig, xid).u16(0).u16(missSendLen).done();  // flags: OFPC_FRAG_NORMAL
}

std::string barrierRequest(uint32_t xid) { return Writer(Type::BarrierRequest, xid).done(); }

std::string meterMod(uint32_t xid, MeterCommand command, uint32_t meterId, uint32_t ratePktps, uint32_t burst) {
    Writer w(Type::MeterMod, xid);
    w.u16(static_cast<uint16_t>(command)).u16(kMeterFlagPktps | kMeterFlagStats).u32(meterId);
    if (command != MeterCommand::Delete) w.u16(kBandDrop).u16(16).u32(ratePktps).u32(burst).zeros(4);
    return w.done();
}

std::string meterStatsRequest(uint32_t xid, uint32_t meterId) {
    return Writer(Type::MultipartRequest, xid).u16(kMultipartMeter).u16(0).zeros(4).u32(meterId).zeros(4).done();
}

PacketIn decodePacketIn(std::string_view message) {
    Reader r(message, "OpenFlow packet-in");
    const auto h = headerOf(message);
    if (h.type != static_cast<uint8_t>(Type::PacketIn)) throw Error("OpenFlow packet-in: message type " + std::to_string(h.type));
    if (h.length != message.size()) throw Error("OpenFlow packet-in: header length " + std::to_string(h.length) + " for " +
                                                std::to_string(message.size()) + " bytes");
    // buffer_id, total_len, reason, table_id, cookie, then the match.
    r.need(32, "the fixed part");
    PacketIn p;
    p.bufferId = r.u32(8);
    p.totalLen = r.u16(12);
    p.reason = r.u8(14);
    p.tableId = r.u8(15);
    p.cookie = r.u64(16);
    const size_t matchAt = 24;
    const uint16_t matchType = r.u16(matchAt), matchLen = r.u16(matchAt + 2);
    if (matchType != kMatchOxm) throw Error("OpenFlow packet-in: match type " + std::to_string(matchType) + ", not OXM");
    if (matchLen < 4) throw Error("OpenFlow packet-in: match length " + std::to_string(matchLen));
    const size_t matchEnd = matchAt + matchLen;
    const size_t dataAt = matchAt + (matchLen + 7) / 8 * 8 + 2;  // padded to 8, then 2 bytes of pad
    r.need(dataAt, "the match");
    for (size_t at = matchAt + 4; at + 4 <= matchEnd;) {
        const uint32_t oxm = r.u32(at);
        const size_t len = oxm & 0xff;
        if (at + 4 + len > matchEnd) throw Error("OpenFlow packet-in: an OXM field runs past the match");
        if (oxm == kOxmInPort) p.inPort = r.u32(at + 4);
        at += 4 + len;
    }
    p.data = std::string(message.substr(dataAt));
    return p;
}

ErrorMessage decodeError(std::string_view message) {
    Reader r(message, "OpenFlow error");
    r.need(12, "type and code");
    return {r.u16(8), r.u16(10)};
}

std::optional<std::vector<MeterStats>> decodeMeterStats(std::string_view message) {
    Reader r(message, "OpenFlow meter statistics");
    r.need(16, "the multipart header");
    if (r.u16(8) != kMultipartMeter) return std::nullopt;
    std::vector<MeterStats> out;
    for (size_t at = 16; at < message.size();) {
        r.need(at + 40, "a meter's statistics");
        const uint16_t len = r.u16(at + 4);
        if (len < 40 || at + len > message.size() || (len - 40) % 16 != 0)
            throw Error("OpenFlow meter statistics: an entry of length " + std::to_string(len));
        MeterStats m;
        m.meterId = r.u32(at);
        m.packetsIn = r.u64(at + 16);
        for (size_t band = at + 40; band < at + len; band += 16) m.bandDrops.push_back(r.u64(band));
        out.push_back(std::move(m));
        at += len;
    }
    return out;
}

}  // namespace kovs::ovs::openflow
