#include "gateway/TunnelOverhead.hpp"

#include <set>
#include <sstream>

#include "base/Error.hpp"
#include "ovs/OvsdbReplica.hpp"
#include "ovs/OvsdbTransaction.hpp"

namespace kovs::gateway {

namespace {
// OVS's tunnel interface types (vswitch.xml); those tunnelOverhead() does not
// size still count as a tunnel in use.
const std::set<std::string> kTunnelTypes{"vxlan", "geneve", "gre", "ip6gre", "stt", "erspan", "ip6erspan", "gtpu", "bareudp", "srv6"};
}  // namespace

std::optional<int> tunnelOverhead(const TunnelInUse& t, int geneveOptionBytes) {
    int outerIp = t.ipv6Underlay ? kOuterIPv6 : kOuterIPv4;
    if (t.type == "vxlan") return vxlanOverhead(t.ipv6Underlay);
    if (t.type == "geneve") return outerIp + kUdp + 8 + geneveOptionBytes + kInnerEthernet;
    if (t.type == "gre") return outerIp + 4 + (t.greKey ? 4 : 0) + (t.greChecksum ? 4 : 0) + kInnerEthernet;
    return std::nullopt;
}

std::vector<TunnelInUse> tunnelsOn(const ovs::OvsdbReplica& replica, const std::string& bridge) {
    std::vector<TunnelInUse> out;
    auto br = replica.findByName("Bridge", bridge);
    if (!br) return out;
    for (const auto& pu : ovsdb::uuidSet(br->second.value("ports", ovsdb::Json()))) {
        const auto* port = replica.row("Port", pu);
        if (!port) continue;
        for (const auto& iu : ovsdb::uuidSet(port->value("interfaces", ovsdb::Json()))) {
            const auto* iface = replica.row("Interface", iu);
            if (!iface) continue;
            auto type = ovsdb::stringOr(*iface, "type");
            if (!kTunnelTypes.count(type)) continue;
            auto opts = ovsdb::mapValue(iface->value("options", ovsdb::Json()));
            auto ip = opts.count("remote_ip") ? opts["remote_ip"] : opts.count("local_ip") ? opts["local_ip"] : "";
            TunnelInUse t;
            t.port = ovsdb::stringOr(*iface, "name");
            t.type = type == "ip6gre" ? "gre" : type;
            t.ipv6Underlay = type == "ip6gre" || ip.find(':') != std::string::npos;
            t.greKey = opts.count("key") > 0;
            t.greChecksum = opts.count("csum") && opts["csum"] == "true";
            out.push_back(t);
        }
    }
    return out;
}

// NXT_TLV_TABLE_REPLY (xid=0x2):
//  max option space=256 max fields=64
//  allocated option space=4
//
//  mapping table:
//   class  type  length  match field
//  ------  ----  ------  --------------
//   0x102  0x80       4  tun_metadata0
int geneveOptionBytes(const std::string& text) {
    if (text.find("TLV_TABLE_REPLY") == std::string::npos)
        throw Error("dump-tlv-map: not a TLV table reply: '" + text.substr(0, 80) + "'");
    std::istringstream in(text);
    int total = 0;
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string cls, type, field;
        int length = 0;
        if (!(words >> cls >> type >> length >> field)) continue;
        if (cls.rfind("0x", 0) != 0 || field.rfind("tun_metadata", 0) != 0) continue;
        if (length < 0 || length > 124) throw Error("dump-tlv-map: option length " + std::to_string(length) + " in '" + line + "'");
        total += 4 + length;
    }
    return total;
}

}  // namespace kovs::gateway
