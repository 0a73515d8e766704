#pragma once
// The OpenFlow table of br-int when kovs is the pod network (standalone
// mode), computed whole from the desired state: same inputs, same text. It is
// installed atomically (`ovs-ofctl --bundle replace-flows`, OpenFlowBridge), so
// a reconcile never leaves a half-written table. docs/architecture.md has the
// pipeline with the reasons; in short:
//
//   table 0  ingress: gw0 is trusted; tun0 only from known peer node IPs; a pod
//            port only with its own MAC and addresses (IPv6: also its
//            link-local, EUI-64 from its MAC), so no spoofing of the gateway
//            or of another pod; anything else is dropped and counted.
//   table 5  a pod's IPv6 neighbour discovery: solicitations and
//            advertisements only for its own addresses and MAC; router
//            advertisements and redirects from pods dropped and counted.
//   table 10 conntrack lookup (zone kCtZone) for IP traffic that may be the
//            reply of a connection the node's kernel forwarded (kube-proxy's
//            Service DNAT lives there): everything from gw0 and tun0, and from
//            pods to pod addresses.
//   table 20 a new connection coming out of the node's kernel (gw0) is
//            committed with a mark; a reply of a marked connection goes back
//            to gw0, whatever port it arrived on, so the kernel that made the
//            DNAT (or SNAT) sees the reply and undoes it.
//   tables 21-26 the policy stage (flows/PolicyStage), only while a policy
//            selects a pod of this node: AdminNetworkPolicy, NetworkPolicy
//            and BaselineAdminNetworkPolicy on the egress of the sending pod,
//            then on the ingress of the receiving one, for new connections;
//            table 28 commits what passed. Then every IP packet goes through
//            conntrack.
//   table 30 L3 forwarding: peer pod CIDR -> tunnel (tun_dst = peer node IP);
//            local pod -> its port; everything else -> gw0 (the node's
//            kernel: Services, the node, the world). ARP and neighbour
//            discovery among local ports go NORMAL; the node's ARP and
//            neighbour solicitations for a peer's pod are answered here
//            (table 31 finishes the advertisement).
//   table 40 from the tunnel, the inner source bound to the outer: from peer
//            X only X's pod CIDRs (delivered to the local pod, table 41) and
//            X's node addresses (through gw0: a hostNetwork backend replying);
//            anything else is forged, dropped and counted.
//
// render builds the table stage by stage (one function per table above) as
// typed Flows (flows/Flow.hpp: named tables, registers and marks) from typed
// inputs, for each address family this node has a pod CIDR of: every address
// that reaches a flow is an IpPrefix or a MacAddress that render parsed and
// checked, never text passed through.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "flows/Flow.hpp"
#include "flows/FlowDump.hpp"
#include "flows/PolicyLog.hpp"
#include "flows/PolicyStage.hpp"
#include "policy/PolicyCompiler.hpp"

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
    std::vector<std::string> addresses;  // its ip-address entries, "10.244.1.5/24", "fd00:10:244:1::5" ...
    int ofport = -1;
    std::string podKey;                  // "namespace/name" as kovs-cni recorded it (traces name the pod)
};

// A peer node (validated by peers/PeerFilter).
struct FlowPeer {
    // Its underlay address: the tun_dst (tun_ipv6_dst) of what is sent to
    // it, the only outer source accepted from it.
    IpPrefix tunnelIP;
    std::vector<IpPrefix> podCIDRs;  // network prefixes, either family
    // Its node addresses: besides its pod CIDRs, the only inner sources it
    // may send from.
    std::vector<IpPrefix> nodeIPs;
};

struct FlowInputs {
    int tunnelOfport = -1;
    FlowPort gateway;  // gw0
    // gw0's addresses, at most one per family, each with the length of this
    // node's pod CIDR of its family ("10.244.1.1/24", "fd00:10:244:1::1/64"):
    // their networks are the local pod CIDRs, and the families the table has.
    std::vector<IpPrefix> gatewayAddresses;
    std::vector<FlowPod> pods;
    std::vector<FlowPeer> peers;
    // Address or MAC -> the pod port that had it in the table rendered last
    // (Rendered::holders of the agent's previous pass): against a newer row
    // claiming the same, the holder keeps it.
    std::map<std::string, std::string> holders;
    // The conntrack stage (tables 10 and 20): off only where nothing in the
    // node's kernel translates pod traffic (no kube-proxy, no hostPort).
    bool serviceReplyPath = true;
    // NetworkPolicy for this node's pods; no stage while it is inactive.
    policy::CompiledPolicy policy;
    PolicyLogging policyLogging;  // controller actions of the logged policies' flows (flows/PolicyLog.hpp)
    std::vector<IpPrefix> nodeAddresses;  // the node's own besides gw0's: allowed into its pods like gw0's
    std::vector<IpPrefix> serviceCIDRs;   // egress to them is judged after the kernel's DNAT
    int adminSetBits = PolicyStageInputs::kAdminSetBits;  // PolicyStageInputs::adminSetBits
};

class FlowTable {
public:
    // Userspace conntrack zone of kovs's connections; 'k'.
    static constexpr int kCtZone = 107;
    // Cookies of the drop flows whose packet counts are exported as metrics.
    static constexpr uint64_t kCookieTunnelUnknownSource = 0x6b01;
    static constexpr uint64_t kCookiePodSpoofed = 0x6b02;
    static constexpr uint64_t kCookieTunnelForgedSource = 0x6b03;
    static constexpr uint64_t kCookiePodRouterMessage = 0x6b04;

    struct Rendered {
        std::vector<Flow> flows;           // normalized (flows/Flow.hpp)
        std::vector<std::string> skipped;  // pods left out, and why
        std::set<std::string> ports;       // the pod ports that have their flows in `flows`
        std::map<std::string, std::string> holders;  // each address and MAC in `flows` -> its pod port
        std::string text() const { return flowText(flows); }
    };

    // Throws kovs::Error when an input the whole table needs is unusable
    // (tunnel or gateway without an ofport, a bad gateway MAC, no gateway
    // address, two of one family, or one with no room for pods). A peer pod
    // CIDR of a family this node has none of is left out. A pod that is
    // unusable only loses its own flows, and is named in `skipped`: no ofport
    // yet; a MAC in its row that is malformed or not unicast; an address that
    // is malformed, of a family this node has no pod CIDR of, outside the
    // local pod CIDR, or the CIDR's network or gateway address;
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
