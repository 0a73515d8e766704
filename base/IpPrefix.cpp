#include "base/IpPrefix.hpp"

#include <algorithm>

#include <arpa/inet.h>

#include <charconv>

#include "base/Error.hpp"
#include "base/Strings.hpp"

namespace kovs {

IpPrefix IpPrefix::parse(std::string_view text) {
    auto bad = [&](const std::string& why) { return Error("parse IP prefix '" + std::string(text) + "': " + why); };
    IpPrefix p;
    auto slash = text.find('/');
    std::string addr(text.substr(0, slash));
    if (addr.find(':') != std::string::npos) {
        p.family = AF_INET6;
        if (::inet_pton(AF_INET6, addr.c_str(), p.bytes.data()) != 1) throw bad("not an IPv6 address");
    } else {
        p.family = AF_INET;
        if (::inet_pton(AF_INET, addr.c_str(), p.bytes.data()) != 1) throw bad("not an IPv4 address");
    }
    p.prefixLen = p.maxPrefixLen();
    if (slash != std::string_view::npos) {
        auto len = text.substr(slash + 1);
        int n = -1;
        auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), n);
        if (len.empty() || ec != std::errc() || end != len.data() + len.size() || n < 0 || n > p.maxPrefixLen())
            throw bad("prefix length must be 0.." + std::to_string(p.maxPrefixLen()));
        p.prefixLen = n;
    }
    return p;
}

IpPrefix IpPrefix::network() const {
    IpPrefix n = *this;
    for (size_t i = 0; i < size(); ++i) {
        int bitsLeft = prefixLen - static_cast<int>(i) * 8;
        if (bitsLeft >= 8) continue;
        n.bytes[i] = bitsLeft <= 0 ? 0 : static_cast<uint8_t>(n.bytes[i] & (0xff << (8 - bitsLeft)));
    }
    return n;
}

bool IpPrefix::contains(const IpPrefix& other) const {
    if (other.family != family || other.prefixLen < prefixLen) return false;
    IpPrefix o = other;
    o.prefixLen = prefixLen;
    return o.network() == network();
}

bool IpPrefix::overlaps(const IpPrefix& other) const { return contains(other) || other.contains(*this); }

std::vector<IpPrefix> subtractPrefixes(const IpPrefix& whole, const std::vector<IpPrefix>& holes) {
    const auto net = whole.network();
    bool cut = false;
    for (const auto& h : holes) {
        if (h.family != net.family || !h.overlaps(net)) continue;
        if (h.contains(net)) return {};
        cut = true;
    }
    if (!cut) return {net};
    // A hole lies strictly inside: split in two halves and carve each.
    IpPrefix low = net, high = net;
    low.prefixLen = high.prefixLen = net.prefixLen + 1;
    high.bytes[net.prefixLen / 8] |= static_cast<uint8_t>(0x80 >> (net.prefixLen % 8));
    auto out = subtractPrefixes(low, holes);
    auto rest = subtractPrefixes(high, holes);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

std::string IpPrefix::addressString() const {
    char buf[INET6_ADDRSTRLEN];
    ::inet_ntop(family, bytes.data(), buf, sizeof buf);
    return buf;
}

IpPrefix gatewayAddressFor(std::string_view podCidr) { return gatewayAddressFor(IpPrefix::parse(podCidr)); }

IpPrefix gatewayAddressFor(const IpPrefix& p) {
    if (p.prefixLen > p.maxPrefixLen() - 2)
        throw Error("gateway address for pod CIDR '" + p.str() + "': prefix too long, no room for a gateway and pods");
    IpPrefix gw = p.network();
    gw.bytes[gw.size() - 1] |= 1;
    return gw;
}

void appendUnique(std::vector<IpPrefix>& list, const IpPrefix& p) {
    if (std::find(list.begin(), list.end(), p) == list.end()) list.push_back(p);
}

std::string joinPrefixes(const std::vector<IpPrefix>& list) {
    auto out = join(list, ", ", [](const IpPrefix& p) { return p.str(); });
    return out.empty() ? "none" : out;
}

}  // namespace kovs
