#include "peers/Peer.hpp"

#include "base/Error.hpp"
#include "base/IpPrefix.hpp"

namespace kovs::peers {

std::string canonicalIP(const std::string& text, const std::string& what) {
    try {
        if (text.find('/') == std::string::npos) return IpPrefix::parse(text).addressString();
    } catch (const Error&) {
    }
    throw Error(what + ": '" + text + "' is not an IPv4 or IPv6 address");
}

std::string canonicalCIDR(const std::string& text, const std::string& what) {
    if (text.find('/') == std::string::npos) throw Error(what + ": '" + text + "' is not a CIDR (missing /prefix)");
    IpPrefix p;
    try {
        p = IpPrefix::parse(text);
    } catch (const Error& e) {
        throw Error(what + ": '" + text + "' is not a CIDR (" + e.what() + ")");
    }
    if (!(p.network() == p)) throw Error(what + ": '" + text + "' has host bits set");
    return p.str();
}

}  // namespace kovs::peers
