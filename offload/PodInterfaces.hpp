#pragma once
// The pods on the integration bridge, for the offload guard and kovsctl
// doctor: every one of them must send with TX checksum offload off, whoever
// attached it.
//   - kovs-cni's ports name the pod's netns and interface in their
//     external_ids (ovs/PodPortIds.hpp).
//   - Another CNI's ports do not (OVN-Kubernetes and Kube-OVN mark theirs with
//     external_ids:iface-id on the Interface, Antrea with its own keys), so
//     they are found through the kernel: a port whose device is a veth with
//     its peer in another network namespace is a pod. The peer's netns is the
//     veth's IFLA_LINK_NETNSID, matched to a netns file (the runtime pins pod
//     namespaces under /var/run/netns) by asking the kernel for each file's
//     id (RTM_GETNSID); the interface is the one with the peer's ifindex there.
//     A pod found this way is looked after inside its namespace only: its host
//     end is the other CNI's and stays as that CNI made it.
#include <compare>
#include <string>
#include <vector>

namespace kovs::ovs {
class OvsdbReplica;
}

namespace kovs::offload {

struct PodInterface {
    std::string netns;       // path of the pod's netns
    std::string ifname;      // the interface inside it
    std::string hostIfname;  // the veth's host end, an OVS port in our netns ("": none to look after)
    std::string pod;         // who it is, for reports: "namespace/name", or the other CNI's iface-id / port
    bool foreign = false;    // attached by another CNI (found through the kernel)
    auto operator<=>(const PodInterface&) const = default;
};

struct PodInterfacesOptions {
    // Where pod network namespaces are pinned (containerd, CRI-O, `ip netns`).
    std::vector<std::string> netnsDirs{"/var/run/netns", "/run/netns"};
    bool foreign = true;  // also look for pods of other CNIs
};

// Pod interfaces of the ports on `bridge`, from a monitored replica of the
// Bridge, Port and Interface tables, plus the kernel for foreign ones. A
// foreign port whose peer namespace cannot be found is left out (it may be
// going away); kernel errors throw kovs::Error.
std::vector<PodInterface> podInterfacesFromReplica(const ovs::OvsdbReplica& replica, const std::string& bridge,
                                                   const PodInterfacesOptions& options = {});

}  // namespace kovs::offload
