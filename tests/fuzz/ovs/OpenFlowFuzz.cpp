// fuzz_openflow: bytes from vswitchd's OpenFlow connection (the policy log's
// packet-ins) are untrusted input. Splits them into reads at fuzzer-chosen
// offsets through the Framer, decodes every message as each type the
// listener reads, and every packet-in's packet with parsePacketHeaders.
// Anything but kovs::Error escaping is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/Error.hpp"
#include "ovs/OpenFlowMessages.hpp"
#include "ovs/PacketHeaders.hpp"

using namespace kovs::ovs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    // First byte: the read size, so splits land everywhere.
    const size_t chunk = 1 + data[0] % 64;
    std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
    // The packet parser alone, on the input as a frame.
    if (auto h = parsePacketHeaders(in)) (void)(h->sourceText() + h->destinationText() + h->protocolName());
    openflow::Framer framer;
    try {
        for (size_t off = 0; off < in.size(); off += chunk) {
            framer.feed(in.substr(off, chunk));
            while (auto m = framer.next()) {
                try {
                    auto p = openflow::decodePacketIn(*m);
                    if (auto h = parsePacketHeaders(p.data)) (void)(h->sourceText() + h->destinationText());
                } catch (const kovs::Error&) {
                }
                try {
                    (void)openflow::decodeError(*m);
                } catch (const kovs::Error&) {
                }
                try {
                    (void)openflow::decodeMeterStats(*m);
                } catch (const kovs::Error&) {
                }
                if (openflow::headerOf(*m).type == static_cast<uint8_t>(openflow::Type::EchoRequest)) (void)openflow::echoReply(*m);
            }
        }
    } catch (const kovs::Error&) {
    }
    return 0;
}
