#pragma once
// The peer file format (YAML, or JSON which yaml-cpp reads as YAML):
//
//   peers:
//     - name: node2
//       nodeIP: 172.18.0.3
//       podCIDRs: [10.244.1.0/24, fd00:10:244:1::/64]
//
// A bare top-level list is accepted too. Unknown keys are rejected so a typo
// ("nodeIp") is an error rather than a silently ignored peer.
#include <string>

#include "peers/Peer.hpp"

namespace kovs::peers {

// Throws kovs::Error naming `origin` (the file path) and the bad entry.
PeerSet parsePeerFile(const std::string& text, const std::string& origin);
// Reads and parses the file at `path`; throws kovs::Error naming it.
PeerSet readPeerFile(const std::string& path);

}  // namespace kovs::peers
