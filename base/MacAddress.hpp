#pragma once
// The one MAC address check and parser of the project: "aa:bb:cc:dd:ee:ff",
// six pairs of hex digits separated by colons, the form OVSDB, ovs-appctl,
// libnl and the CNI results use (either case in, lower case out). Anything
// that builds a flow, a unixctl command or a netlink request from a MAC
// checks it with this first.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kovs {

struct MacAddress {
    std::array<uint8_t, 6> bytes{};

    // Throws kovs::Error naming `what` and the text on anything else.
    static MacAddress parse(std::string_view text, std::string_view what = "MAC address");
    // The same check without throwing.
    static std::optional<MacAddress> tryParse(std::string_view text);

    std::string str() const;
    bool multicast() const { return (bytes[0] & 0x01) != 0; }
    bool locallyAdministered() const { return (bytes[0] & 0x02) != 0; }
    bool zero() const { return bytes == std::array<uint8_t, 6>{}; }

    bool operator==(const MacAddress&) const = default;
};

inline bool isMacAddress(std::string_view s) { return MacAddress::tryParse(s).has_value(); }

}  // namespace kovs
