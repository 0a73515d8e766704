#include "peers/Peer.hpp"

#include "base/Error.hpp"

namespace kovs::peers {

const char* refusalLabel(Refusal r) {
    for (const auto& [refusal, label] : kRefusals) {
        if (refusal == r) return label;
    }
    return "unknown";
}

const IpPrefix* Peer::nodeIP(int family) const {
    for (const auto& ip : nodeIPs) {
        if (ip.family == family) return &ip;
    }
    return nullptr;
}

IpPrefix parseNodeIP(const std::string& text, const std::string& what) {
    try {
        if (text.find('/') == std::string::npos) return IpPrefix::parse(text);
    } catch (const Error&) {
    }
    throw Error(what + ": '" + text + "' is not an IPv4 or IPv6 address");
}

IpPrefix parsePodCIDR(const std::string& text, const std::string& what) {
    if (text.find('/') == std::string::npos) throw Error(what + ": '" + text + "' is not a CIDR (missing /prefix)");
    IpPrefix p;
    try {
        p = IpPrefix::parse(text);
    } catch (const Error& e) {
        throw Error(what + ": '" + text + "' is not a CIDR (" + e.what() + ")");
    }
    if (!(p.network() == p)) throw Error(what + ": '" + text + "' has host bits set");
    return p;
}

}  // namespace kovs::peers
