#pragma once
// Splits a byte stream of back-to-back, unframed JSON values (how OVSDB and
// unixctl speak JSON-RPC) into complete values. Bytes may arrive split at any
// offset; braces inside strings and escaped quotes do not count. Only objects
// and arrays are accepted at top level: a bare number has no end marker.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kovs::ovs {

class JsonStreamParser {
public:
    static constexpr size_t kMaxMessageBytes = 64u << 20;
    static constexpr int kMaxDepth = 512;

    // Appends bytes and returns every value completed by them, in order.
    // Throws kovs::Error on garbage; the parser is then unusable (the caller
    // drops the connection, as OVS does).
    std::vector<nlohmann::json> feed(std::string_view bytes);

    // Bytes of an incomplete value still buffered.
    size_t pending() const { return buf_.size() - start_; }

private:
    [[noreturn]] void fail(const std::string& why);

    std::string buf_;
    size_t start_ = 0;   // first byte of the value being scanned
    size_t pos_ = 0;     // next byte to scan
    size_t consumed_ = 0;  // bytes of the stream dropped from buf_, for error offsets
    int depth_ = 0;
    bool inString_ = false;
    bool escape_ = false;
    bool failed_ = false;
};

}  // namespace kovs::ovs
