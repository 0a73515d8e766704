// fuzz_jsonrpc: bytes from ovsdb-server/vswitchd are untrusted input. Feeds
// them to JsonStreamParser split into reads at fuzzer-chosen offsets, and
// every complete value to OvsdbReplica (as an update2 and as a schema) and
// Transaction::checkResult. Anything but kovs::Error escaping is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/Error.hpp"
#include "ovs/JsonStreamParser.hpp"
#include "ovs/OvsdbReplica.hpp"
#include "ovs/OvsdbTransaction.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    // First byte: read size, so splits land everywhere.
    size_t chunk = 1 + data[0] % 64;
    std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
    kovs::ovs::JsonStreamParser parser;
    kovs::ovs::OvsdbReplica replica;
    kovs::ovsdb::Transaction txn;
    txn.insert("Port", {{"name", "p"}}).mutate("Bridge", kovs::ovsdb::whereName("b"), nlohmann::json::array());
    try {
        for (size_t off = 0; off < in.size(); off += chunk) {
            for (const auto& v : parser.feed(in.substr(off, chunk))) {
                try {
                    replica.apply(v);
                } catch (const kovs::Error&) {
                }
                try {
                    replica.setSchema(v);
                } catch (const kovs::Error&) {
                }
                try {
                    txn.checkResult(v);
                } catch (const kovs::Error&) {
                }
            }
        }
    } catch (const kovs::Error&) {
    }
    return 0;
}
