#pragma once
// The OpenFlow table of br-int when kovs is the pod network (standalone
// mode), computed whole from the desired state: same inputs, same text. It is
// installed atomically (`ovs-ofctl --bundle replace-flows`, OpenFlowBridge), so
// a reconcile never leaves a half-written table. docs/architecture.md has the
// pipeline with the reasons; in short:
//
//   table 0  ingress: gw0 is trusted; tun0 only from known peer node IPs; a pod
//            port only with its own MAC and IP (no spoofing of the gateway or
//            of another pod); anything else is dropped and counted.
//
// render builds the table stage by stage (one function per table above) from
// typed inputs: every address that reaches a flow is an IpPrefix or a
// MacAddress that render parsed and checked, never text passed through.
//   table 10 conntrack lookup (zone kCtZone) for IP traffic that may be the
//            reply of a connection the node's kernel forwarded (kube-proxy's
//            Service DNAT lives there): everything from gw0 and tun0, and from
//            pods to pod addresses.
//   table 20 a new connection coming out of the node's kernel (gw0) is
//            committed with a mark; a reply of a marked connection goes back
//            to gw0, whatever port it arrived on, so the kernel that made the
//            DNAT (or SNAT) sees the reply and undoes it.
//   table 30 L3 forwarding: peer pod CIDR -> tunnel (tun_dst = peer node IP);
//            local pod -> its port; everything else -> gw0 (the node's
//            kernel: Services, the node, the world). ARP among local ports
//            goes NORMAL; ARP from the node for a peer pod is answered here.
//   table 40 from the tunnel: a remote pod's packet is delivered to the local
//            pod; any other source (a peer node's own address replying to a
//            pod, e.g. a hostNetwork Service backend) goes to gw0, because the
//            request left this node through its kernel and the uplink.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "flows/FlowDump.hpp"

namespace kovs::flows {

struct FlowPort {
    std::string mac;
    int ofport = -1;
};

// A pod port as kovs-cni recorded it in OVSDB: text anyone with the database
// socket could have written, so render checks every field before a flow is
// built from it.
struct FlowPod {
    std::string port;                    // the OVS port's name
    std::string mac;                     // attached-mac
    std::vector<std::string> addresses;  // its IPv4 ip-address entries, "10.244.1.5/24" or "10.244.1.5"
    int ofport = -1;
};

struct FlowRemoteSubnet {
    IpPrefix cidr;    // an IPv4 pod CIDR of a peer (network prefix)
    IpPrefix nodeIP;  // the peer's IPv4 underlay address (tun_dst, and the tun_src accepted)
};

struct FlowInputs {
    int tunnelOfport = -1;
    FlowPort gateway;  // gw0
    // gw0's IPv4 address with the length of this node's pod CIDR
    // ("10.244.1.1/24"): its network is the local pod CIDR.
    IpPrefix gatewayAddress;
    std::vector<FlowPod> pods;
    std::vector<FlowRemoteSubnet> remotes;  // validated by peers/PeerFilter
    // Address or MAC -> the pod port that had it in the table rendered last
    // (Rendered::holders of the agent's previous pass): against a newer row
    // claiming the same, the holder keeps it.
    std::map<std::string, std::string> holders;
    // The conntrack stage (tables 10 and 20): off only where nothing in the
    // node's kernel translates pod traffic (no kube-proxy, no hostPort).
    bool serviceReplyPath = true;
};

class FlowTable {
public:
    // Userspace conntrack zone of kovs's connections; 'k'.
    static constexpr int kCtZone = 107;
    // Cookies of the drop flows whose packet counts are exported as metrics.
    static constexpr uint64_t kCookieTunnelUnknownSource = 0x6b01;
    static constexpr uint64_t kCookiePodSpoofed = 0x6b02;

    struct Rendered {
        std::string flows;                 // one per line, sorted
        std::vector<std::string> skipped;  // pods left out, and why
        std::set<std::string> ports;       // the pod ports that have their flows in `flows`
        std::map<std::string, std::string> holders;  // each address and MAC in `flows` -> its pod port
    };

    // Throws kovs::Error when an input the whole table needs is unusable
    // (tunnel or gateway without an ofport, a bad gateway MAC, no IPv4
    // gateway address, a peer that is not IPv4). A pod that is unusable only
    // loses its own flows, and is named in `skipped`: no ofport yet; a MAC in
    // its row that is malformed or not unicast; an address that is malformed,
    // outside the local pod CIDR, or the CIDR's network or gateway address;
    // an address or MAC another pod's row claims too: the holder (see
    // FlowInputs::holders) keeps it and the others are refused, and where
    // none holds it all are (nothing in OVSDB says which is the real pod).
    static Rendered render(const FlowInputs& in);

    // The holders of a table render made, read back from the bridge (table
    // 0's source check of each pod: its ofport, MAC and address), with the
    // pods' ofports naming the ports: what a dry run passes as
    // FlowInputs::holders to decide a contested address as the agent did.
    static std::map<std::string, std::string> holdersIn(const FlowDump& dump, const std::vector<FlowPod>& pods);
};

}  // namespace kovs::flows
