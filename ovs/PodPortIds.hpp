#pragma once
// The external_ids of a pod's Port and Interface rows: what kovs-cni writes at
// ADD, and what the agent's flow table and offload guard and kovsctl doctor
// read. One codec, so the writer and its readers cannot disagree on a key.
//
//   kovs-owner=kovs-cni, cni-network, cni-container-id, cni-ifname, cni-netns,
//   k8s-pod-namespace, k8s-pod-name, attached-mac, ip-address (CIDRs, comma-separated)
//
// attached-mac and ip-address are OVS's conventional names (OVN's
// ovn-controller reads attached-mac too).
#include <map>
#include <string>
#include <vector>

namespace kovs::ovs {

struct PodPortIds {
    static constexpr const char* kOwnerKey = "kovs-owner";
    static constexpr const char* kCniOwner = "kovs-cni";

    std::string owner;         // "kovs-cni" on ports kovs-cni made
    std::string network;       // the CNI network's name ("" on ports from before it was recorded)
    std::string containerId;
    std::string ifname;        // the interface inside the pod
    std::string netns;         // path of the pod's network namespace
    std::string podNamespace;
    std::string podName;
    std::string mac;           // the pod side's MAC
    std::string ipAddresses;   // "10.244.1.5/24,fd00::5/64"

    static PodPortIds parse(const std::map<std::string, std::string>& ids);
    // Only the keys that have a value, plus kovs-owner.
    std::map<std::string, std::string> toMap() const;

    bool madeByKovsCni() const { return owner == kCniOwner; }
    // The addresses of ip-address (both families), without their prefix length.
    std::vector<std::string> addresses() const;
};

}  // namespace kovs::ovs
