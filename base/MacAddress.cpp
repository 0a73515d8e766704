#include "base/MacAddress.hpp"

#include <cstdio>

#include "base/Error.hpp"

namespace kovs {
namespace {

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::optional<MacAddress> MacAddress::tryParse(std::string_view text) {
    if (text.size() != 17) return std::nullopt;
    MacAddress m;
    for (size_t i = 0; i < 6; ++i) {
        int hi = hexDigit(text[i * 3]), lo = hexDigit(text[i * 3 + 1]);
        if (hi < 0 || lo < 0 || (i < 5 && text[i * 3 + 2] != ':')) return std::nullopt;
        m.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return m;
}

MacAddress MacAddress::parse(std::string_view text, std::string_view what) {
    auto m = tryParse(text);
    if (!m) throw Error(std::string(what) + ": not a MAC address: '" + std::string(text) + "'");
    return *m;
}

std::string MacAddress::str() const {
    char out[18];
    std::snprintf(out, sizeof out, "%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2], bytes[3], bytes[4],
                  bytes[5]);
    return out;
}

}  // namespace kovs
