#include "tunnel/Peer.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "base/Error.hpp"

namespace kovs::tunnel {
namespace {

// Returns the family (AF_INET/AF_INET6) and fills `bytes`, or 0 when invalid.
int parseIP(const std::string& text, std::array<uint8_t, 16>& bytes) {
    if (::inet_pton(AF_INET, text.c_str(), bytes.data()) == 1) return AF_INET;
    if (::inet_pton(AF_INET6, text.c_str(), bytes.data()) == 1) return AF_INET6;
    return 0;
}

std::string format(int family, const std::array<uint8_t, 16>& bytes) {
    char buf[INET6_ADDRSTRLEN];
    ::inet_ntop(family, bytes.data(), buf, sizeof buf);
    return buf;
}

}  // namespace

std::string canonicalIP(const std::string& text, const std::string& what) {
    std::array<uint8_t, 16> bytes{};
    int family = parseIP(text, bytes);
    if (!family) throw Error(what + ": '" + text + "' is not an IPv4 or IPv6 address");
    return format(family, bytes);
}

std::string canonicalCIDR(const std::string& text, const std::string& what) {
    auto slash = text.find('/');
    if (slash == std::string::npos) throw Error(what + ": '" + text + "' is not a CIDR (missing /prefix)");
    std::array<uint8_t, 16> bytes{};
    int family = parseIP(text.substr(0, slash), bytes);
    if (!family) throw Error(what + ": '" + text + "' has an invalid address");
    std::string plenText = text.substr(slash + 1);
    int maxPlen = family == AF_INET ? 32 : 128;
    if (plenText.empty() || plenText.size() > 3 || plenText.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(plenText) > maxPlen) {
        throw Error(what + ": '" + text + "' has an invalid prefix length");
    }
    int plen = std::stoi(plenText);
    size_t len = family == AF_INET ? 4 : 16;
    for (size_t i = 0; i < len; ++i) {
        int bitsHere = std::clamp(plen - static_cast<int>(i) * 8, 0, 8);
        uint8_t mask = static_cast<uint8_t>(0xff00 >> bitsHere);
        if (bytes[i] & ~mask & 0xff) throw Error(what + ": '" + text + "' has host bits set");
    }
    return format(family, bytes) + "/" + std::to_string(plen);
}

}  // namespace kovs::tunnel
