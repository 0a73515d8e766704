#pragma once
// The agent's configuration (YAML). Every key is documented in
// docs/configuration.md; unknown keys and bad values are rejected with an
// error naming the key ("bridge.tunnelDstPort: expected a port 1-65535, got 'x'").
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"

namespace kovs::agent {

struct Config {
    enum class Mode { Standalone, Companion };
    enum class UplinkMode { Shim, Direct, None };
    enum class PeerSourceKind { None, File, Kubernetes };

    struct Node {
        std::string name;        // default: the host name
        // The Node's spec.podCIDRs in their order (kind: 10.244.1.0/24, then
        // fd00:10:244:1::/64); required in standalone mode. `node.podCIDR`
        // (one value) still works, with a warning.
        std::vector<IpPrefix> podCIDRs;
    } node;

    struct Cluster {
        // The Service CIDRs of the cluster (kube-apiserver's
        // --service-cluster-ip-range); kind's defaults. A peer pod CIDR that
        // overlaps one is refused: it would send ClusterIP traffic into the
        // tunnel before kube-proxy sees it.
        std::vector<IpPrefix> serviceCIDRs{IpPrefix::parse("10.96.0.0/16"), IpPrefix::parse("fd00:10:96::/112")};
    } cluster;

    struct Ovs {
        bool manage = false;     // start and supervise ovsdb-server + ovs-vswitchd
        std::string rundir = "/var/run/openvswitch";
        std::string remote;      // the OVSDB remote (ovs-vsctl's --db); default: unix:<rundir>/db.sock
        std::string database = "/etc/openvswitch/conf.db";  // the database file ovsdb-server opens
        std::string schema = "/usr/share/openvswitch/vswitch.ovsschema";
        int socketBufferKiB = 4096;  // vswitchd's AF_PACKET buffers (PacketSocketBuffers.hpp); 0: OVS's default
    } ovs;

    struct Bridge {
        std::string integration = "br-int";
        std::string physical = "br-phy";
        std::string gateway = "gw0";
        std::string tunnel = "tun0";
        uint16_t tunnelDstPort = 4789;
        // Whether the file named them (not the defaults): in companion mode a
        // tunnel port is made only when asked for, and with uplink.mode none
        // a named physical bridge is the other CNI's that holds the node IP
        // (OVN-Kubernetes' breth0), where the tunnel job programs its routes.
        bool tunnelConfigured = false;
        bool physicalConfigured = false;
    } bridge;

    Mode mode = Mode::Standalone;

    struct Gateway {
        bool guard = true;
        int mtu = 0;                          // 0: standalone uplink MTU - tunnelOverhead(); companion: left alone
        std::vector<IpPrefix> addresses;      // default: standalone first address of each node.podCIDRs; companion: the device's
        std::vector<IpPrefix> extraRoutes;    // destination CIDRs (network prefixes) routed via the gateway
        std::chrono::milliseconds resync{10000};
        std::string networkdDropinDir = "/run/systemd/network";
    } gateway;

    struct Uplink {
        UplinkMode mode = UplinkMode::Shim;
        std::string interface = "eth0";
        std::string portType = "system";      // uplink::uplinkPortTypes()
        int mtu = 0;                          // 0: the interface's own MTU (resolveUplinkMtu)
        bool mtuConfigured = false;           // the file set `mtu`: no path to a peer narrows it
    } uplink;

    struct Flows {
        // The Service reply path (flows/FlowTable.hpp, tables 10 and 20): off
        // only where nothing in the node's kernel translates pod traffic.
        bool conntrack = true;
        std::chrono::milliseconds ofctlTimeout{10000};  // each ovs-ofctl call
    } flows;

    struct Egress {
        bool masquerade = true;               // standalone mode: pod -> outside the cluster gets the node's address
        std::vector<IpPrefix> clusterCIDRs;   // pods' sources; empty: every known pod CIDR (old key: clusterCIDR)
        std::vector<IpPrefix> nonMasqueradeCIDRs;  // more destinations reached with the pod's own address
    } egress;

    struct NetworkPolicy {
        // Enforce networking.k8s.io/v1 NetworkPolicy in br-int's flows
        // (policy/, flows/PolicyStage): standalone mode with peers from the
        // Kubernetes API, which the policies, pods and namespaces come from too.
        bool enforce = true;
        bool configured = false;  // the file set `enforce`
        // Policy logging (docs/policy.md): packets of logged decisions a
        // second that reach the agent (br-int's meter), entries kept for
        // `kovsctl policy log`.
        int logRate = 100;
        int logEntries = 1000;
    } networkPolicy;

    struct Peers {
        PeerSourceKind source = PeerSourceKind::None;
        std::string file = "/etc/kovs/peers.yaml";
        std::string kubeconfig;               // empty: in-cluster config
        // Send the bearer token over http:// or with insecure-skip-tls-verify
        // (refused otherwise: kube::KubeCredentials::allowUnprotectedToken).
        bool allowUnprotectedToken = false;
    } peers;

    std::chrono::milliseconds resync{30000};  // periodic full resync of every reconciler
    std::string statusSocket = "/var/run/kovs/agent.sock";
    std::string metricsAddress = "127.0.0.1:9474";

    // Derived values.
    bool enforcesPolicy() const {
        return networkPolicy.enforce && mode == Mode::Standalone && peers.source == PeerSourceKind::Kubernetes;
    }
    std::string ovsdbRemote() const { return ovs.remote.empty() ? "unix:" + ovs.rundir + "/db.sock" : ovs.remote; }
    // The MTU kovs keeps on the gateway (and gives new pods through it); 0:
    // none (companion mode without gateway.mtu: the other CNI's device keeps
    // the MTU that CNI gave it). Standalone: kovs's own VXLAN tunnel's
    // overhead off the underlay's MTU: the uplink's, or, where uplink.mtu is
    // left to the device, `narrowestPath` when that is smaller: the smallest
    // MTU of the kernel's routes to the peers (tunnel::narrowestPath; 0: none
    // known), so a narrow hop on the way does not drop large pod packets (the
    // userspace datapath sends tunnel packets with DF and never shrinks them).
    // Needs uplink.mtu resolved (resolveUplinkMtu) when it was not configured.
    int gatewayMtu(unsigned narrowestPath = 0) const {
        if (gateway.mtu || mode == Mode::Companion) return gateway.mtu;
        if (!uplink.mtuConfigured && narrowestPath && static_cast<int>(narrowestPath) < uplink.mtu)
            return std::max(static_cast<int>(narrowestPath) - tunnelOverhead(), kMinGatewayMtu);
        return uplink.mtu - tunnelOverhead();
    }
    static constexpr int kMinGatewayMtu = 576;
    // The underlay the tunnel runs over: IPv6 only in a single-stack IPv6
    // cluster (every pod CIDR IPv6, as kind's ipFamily: ipv6 makes them); a
    // dual-stack cluster tunnels both families over IPv4, as kind's nodes'
    // first InternalIP is the IPv4 one.
    int underlayFamily() const;
    // What kovs's VXLAN adds to a pod packet on that underlay (50 over IPv4,
    // 70 over IPv6; gateway/TunnelOverhead.hpp counts every tunnel type).
    int tunnelOverhead() const;
    // The tunnel port kovs makes on the integration bridge; "": none. In
    // companion mode the other CNI tunnels, so only when asked for.
    std::string tunnelPort() const { return mode == Mode::Standalone || bridge.tunnelConfigured ? bridge.tunnel : ""; }
};

// Parses YAML text; throws kovs::Error naming the offending key.
Config parseConfig(const std::string& yaml);
// Reads and parses a file; errors name the file.
Config loadConfig(const std::string& path);
// uplink.mtu 0 (the default) becomes the uplink interface's MTU, so gw0 and
// the pods follow a jumbo underlay (1500 when the interface has none); then
// checks gateway.mtu against it. Throws kovs::Error naming the key.
void resolveUplinkMtu(Config& config, const std::string& sysClassNet = "/sys/class/net");

}  // namespace kovs::agent
