#pragma once
// An IPv4 or IPv6 address with a prefix length ("10.244.1.1/24"), as the
// configuration spells addresses, pod CIDRs and routes everywhere in kovs.
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kovs {

struct IpPrefix {
    int family = AF_INET;
    std::array<uint8_t, 16> bytes{};
    int prefixLen = 0;

    // "a.b.c.d/n", "x::y/n"; without "/n" the prefix is a single host (/32, /128).
    // Throws kovs::Error naming the text on anything else.
    static IpPrefix parse(std::string_view text);

    size_t size() const { return family == AF_INET ? 4 : 16; }
    int maxPrefixLen() const { return family == AF_INET ? 32 : 128; }
    // The same prefix with every host bit cleared: the route destination.
    IpPrefix network() const;
    // The address alone, as a /32 or /128.
    IpPrefix host() const {
        IpPrefix h = *this;
        h.prefixLen = maxPrefixLen();
        return h;
    }
    std::string addressString() const;
    std::string str() const { return addressString() + "/" + std::to_string(prefixLen); }
    // Whether `other` (an address or a prefix) lies inside this prefix.
    bool contains(const IpPrefix& other) const;
    // Whether the two prefixes share any address (same family only).
    bool overlaps(const IpPrefix& other) const;

    bool operator==(const IpPrefix&) const = default;
};

// The gateway address of a pod CIDR: its first host address with the CIDR's
// prefix length ("10.244.1.0/24" -> "10.244.1.1/24"). Host bits in the input
// are ignored; a CIDR with no room for a gateway and a pod (/31, /32, /127,
// /128) is rejected.
IpPrefix gatewayAddressFor(std::string_view podCidr);
IpPrefix gatewayAddressFor(const IpPrefix& podCidr);

// The addresses of `whole` that are in none of `holes`, as the fewest
// network prefixes (NetworkPolicy's ipBlock `except`): at most
// maxPrefixLen() prefixes per hole. Holes of the other family are ignored.
std::vector<IpPrefix> subtractPrefixes(const IpPrefix& whole, const std::vector<IpPrefix>& holes);

// Appends `p` unless it is there already (keeps the order given).
void appendUnique(std::vector<IpPrefix>& list, const IpPrefix& p);
// "10.244.1.0/24, fd00:10:244:1::/64" ("none" for an empty list).
std::string joinPrefixes(const std::vector<IpPrefix>& list);

}  // namespace kovs
