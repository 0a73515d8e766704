#pragma once
// A v1 Node as a tunnel peer: the decoder kube::Informer runs on every Node
// object the API server lists or watches.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "peers/Peer.hpp"

namespace kovs::peers {

// A Node's peer: every InternalIP (one per family, in status.addresses'
// order), spec.podCIDRs in the API's order (falling back to spec.podCIDR on
// old clusters) and metadata.creationTimestamp. nullopt for a node that has
// no InternalIP yet (still registering). Throws kovs::Error naming the node
// and the field when the object is malformed: a podCIDR with host bits set,
// an InternalIP that is no address, two InternalIPs of one family.
std::optional<Peer> peerFromNode(const nlohmann::json& node);

// The members peerFromNode reads (kube::ListWatchOptions::fields).
const std::vector<std::string>& nodeFields();

}  // namespace kovs::peers
