#pragma once
// The OpenFlow table of br-int when kovs is the pod network (standalone mode),
// computed whole from the desired state and installed atomically with
// `ovs-ofctl --bundle replace-flows`, so a reconcile never leaves a
// half-written table and an unchanged table costs OVS nothing.
//
//   200 arp request for a peer pod CIDR     -> answered by OVS with the gateway MAC
//   100 ip to a peer pod CIDR               -> tun_dst=<peer node IP>, out tun0
//   100 from tun0, ip to a local pod        -> L2 rewritten (gw MAC -> pod MAC), out the pod port
//    95 from tun0, ip to the local pod CIDR -> out gw0: replies to node -> remote pod
//       traffic, and packets for a pod whose port has no flow yet (its ofport
//       arrives a moment after CNI ADD), which the node kernel then delivers
//    90 from tun0, anything else            -> drop
//    10 everything else                     -> NORMAL (same-node L2, pod <-> gw0)
//
// The node kernel routes a peer's pod CIDR "dev gw0" (the gateway guard keeps
// those routes); its ARP for a remote pod is answered by the 200 flow, so the
// kernel needs no per-peer neighbour entries.
#include <string>
#include <vector>

namespace kovs {

struct FlowPort {
    std::string mac;
    int ofport = -1;
};

struct FlowLocalEndpoint {
    std::string ip;     // IPv4 address, no prefix
    std::string mac;
    int ofport = -1;
};

struct FlowRemoteSubnet {
    std::string cidr;    // IPv4 pod CIDR of a peer
    std::string nodeIP;  // the peer's underlay address (tun_dst)
};

struct FlowInputs {
    int tunnelOfport = -1;
    FlowPort gateway;                   // gw0
    std::string localCidr;              // this node's IPv4 pod CIDR
    std::vector<FlowLocalEndpoint> pods;
    std::vector<FlowRemoteSubnet> remotes;
};

class FlowTable {
public:
    // `rundir` holds <bridge>.mgmt, the bridge's OpenFlow management socket.
    FlowTable(std::string bridge, std::string rundir);

    // The flows, one per line, sorted: same inputs, same text. Throws
    // kovs::Error when an input the whole table needs is unusable (tunnel or
    // gateway without an ofport, a bad MAC, IP or CIDR). A pod that is
    // unusable (no ofport yet, a bad address in its OVSDB row) only loses its
    // own flow: it is left out and named in `skipped`.
    static std::string render(const FlowInputs& in, std::vector<std::string>* skipped = nullptr);
    // Installs the table unless it equals the last one installed; force=true
    // after ovs-vswitchd restarted (it lost every flow). Returns true when
    // ovs-ofctl ran. Throws kovs::Error with ovs-ofctl's message.
    bool install(const FlowInputs& in, bool force = false);

    const std::string& installed() const { return installed_; }
    // The pods the last render left out, and why.
    const std::vector<std::string>& skipped() const { return skipped_; }
    uint64_t installs() const { return installs_; }

private:
    std::string bridge_;
    std::string target_;
    std::string installed_;
    std::vector<std::string> skipped_;
    uint64_t installs_ = 0;
};

}  // namespace kovs
