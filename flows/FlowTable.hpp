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
#include <set>
#include <string>
#include <vector>

namespace kovs::flows {

struct FlowPort {
    std::string mac;
    int ofport = -1;
};

struct FlowLocalEndpoint {
    std::string ip;  // IPv4 address, no prefix
    std::string mac;
    int ofport = -1;
    std::string port;  // the OVS port's name
};

struct FlowRemoteSubnet {
    std::string cidr;    // IPv4 pod CIDR of a peer
    std::string nodeIP;  // the peer's underlay address (tun_dst, and the tun_src accepted)
};

struct FlowInputs {
    int tunnelOfport = -1;
    FlowPort gateway;       // gw0
    std::string localCidr;  // this node's IPv4 pod CIDR
    std::vector<FlowLocalEndpoint> pods;
    std::vector<FlowRemoteSubnet> remotes;
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
    };

    // Throws kovs::Error when an input the whole table needs is unusable
    // (tunnel or gateway without an ofport, a bad MAC, IP or CIDR). A pod that
    // is unusable (no ofport yet, a bad address in its OVSDB row) only loses
    // its own flows: it is left out and named in `skipped`.
    static Rendered render(const FlowInputs& in);
};

}  // namespace kovs::flows
