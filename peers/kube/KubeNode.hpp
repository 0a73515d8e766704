#pragma once
// Turns Kubernetes API payloads (v1 Node, NodeList, watch events) into peers.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "peers/Peer.hpp"

namespace kovs::peers {

// A Node's peer: its first InternalIP (a node with IPv4 and IPv6 addresses
// tunnels over the one the kubelet lists first, as kube-proxy and most CNIs
// do) and spec.podCIDRs (falling back to spec.podCIDR on old clusters).
// nullopt for a node that has no InternalIP yet (still registering).
// Throws kovs::Error when the object is malformed.
std::optional<Peer> peerFromNode(const nlohmann::json& node);

struct NodeList {
    std::string resourceVersion;
    PeerSet peers;  // nodes without an InternalIP are left out
};
// `skipNode` (our own node) is left out.
NodeList parseNodeList(const std::string& body, const std::string& skipNode);

struct WatchEvent {
    enum class Type { Added, Modified, Deleted, Bookmark, Error };
    Type type;
    std::string resourceVersion;  // of the object (all types but Error)
    std::string nodeName;         // Added/Modified/Deleted
    std::optional<Peer> peer;     // Added/Modified, when the node has an InternalIP
    int errorCode = 0;            // Error: the Status code (410 = resourceVersion too old)
    std::string errorMessage;
};
// One line of a watch stream. Throws kovs::Error on anything that is not a
// well-formed event (garbage, a truncated line, an unknown type).
WatchEvent parseWatchEvent(const std::string& line);

}  // namespace kovs::peers
