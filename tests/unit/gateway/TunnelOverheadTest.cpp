// The tunnel overhead the gateway and pod MTUs leave room for (issue 16,
// defect 2): derived from the tunnel interfaces OVSDB shows and the Geneve
// options the TLV table maps.
#include "gateway/TunnelOverhead.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "ovs/OvsdbReplica.hpp"
#include "ovs/OvsdbTransaction.hpp"

using kovs::gateway::TunnelInUse;
using kovs::gateway::tunnelOverhead;
using nlohmann::json;
namespace ovsdb = kovs::ovsdb;

// What ovn-controller 23.03 installs (`ovs-ofctl dump-tlv-map br-int`, captured here).
const char* kOvnTlvMap = R"(NXT_TLV_TABLE_REPLY (xid=0x2):
 max option space=256 max fields=64
 allocated option space=4

 mapping table:
  class  type  length  match field
 ------  ----  ------  --------------
  0x102  0x80       4  tun_metadata0
)";

TEST(TunnelOverhead, VxlanGeneveAndGreAsTheyLeaveTheUplink) {
    EXPECT_EQ(tunnelOverhead({"tun0", "vxlan"}), 50);
    EXPECT_EQ(tunnelOverhead({"tun0", "vxlan", true}), 70);
    EXPECT_EQ(tunnelOverhead({"ovn-node2-0", "geneve"}, kovs::gateway::geneveOptionBytes(kOvnTlvMap)), 58)
        << "measured: a 1028-byte pod packet left eth0 as 1086 bytes";
    EXPECT_EQ(tunnelOverhead({"ovn-node2-0", "geneve", true}, 8), 78);
    EXPECT_EQ(tunnelOverhead({"antrea-tun0", "geneve"}), 50) << "no options mapped, none carried";
    EXPECT_EQ(tunnelOverhead({"gre0", "gre"}), 38);
    EXPECT_EQ(tunnelOverhead({"gre0", "gre", false, true, true}), 46);
    EXPECT_EQ(tunnelOverhead({"stt0", "stt"}), std::nullopt);
}

TEST(TunnelOverhead, TheTlvTableGivesTheGeneveOptionSpace) {
    EXPECT_EQ(kovs::gateway::geneveOptionBytes(kOvnTlvMap), 8);
    std::string two = std::string(kOvnTlvMap) + "  0x103  0x1       8  tun_metadata1\n";
    EXPECT_EQ(kovs::gateway::geneveOptionBytes(two), 20);
    EXPECT_EQ(kovs::gateway::geneveOptionBytes("NXT_TLV_TABLE_REPLY (xid=0x2):\n max option space=256 max fields=64\n"
                                      " allocated option space=0\n\n mapping table:\n  class  type  length  match field\n"
                                      " ------  ----  ------  --------------\n"),
              0);
    EXPECT_THROW(kovs::gateway::geneveOptionBytes("ovs-ofctl: br-int is not a bridge or a socket"), kovs::Error);
}

TEST(TunnelOverhead, TheTunnelsOnABridgeComeFromItsInterfaces) {
    json db = json::parse(R"({"Bridge": {"b": {"initial": {"name": "br-int",
        "ports": ["set", [["uuid", "p1"], ["uuid", "p2"], ["uuid", "p3"]]]}}},
      "Port": {"p1": {"initial": {"name": "ovn-node2-0", "interfaces": ["uuid", "i1"]}},
               "p2": {"initial": {"name": "ovnpod1", "interfaces": ["uuid", "i2"]}},
               "p3": {"initial": {"name": "ovn-node9-0", "interfaces": ["uuid", "i3"]}}},
      "Interface": {"i1": {"initial": {"name": "ovn-node2-0", "type": "geneve",
                                       "options": ["map", [["csum", "true"], ["key", "flow"], ["remote_ip", "172.18.0.3"]]]}},
                    "i2": {"initial": {"name": "ovnpod1", "type": ""}},
                    "i3": {"initial": {"name": "ovn-node9-0", "type": "geneve",
                                       "options": ["map", [["remote_ip", "fc00:f853:ccd:e793::9"]]]}}}})");
    kovs::ovs::OvsdbReplica replica;
    replica.apply(db);
    auto tunnels = kovs::gateway::tunnelsOn(replica, "br-int");
    ASSERT_EQ(tunnels.size(), 2u);
    EXPECT_EQ(tunnels[0].type, "geneve");
    EXPECT_FALSE(tunnels[0].ipv6Underlay);
    EXPECT_TRUE(tunnels[1].ipv6Underlay);
    EXPECT_TRUE(kovs::gateway::tunnelsOn(replica, "br-phy").empty());
}
