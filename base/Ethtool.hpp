#pragma once
// Offload settings through the legacy SIOCETHTOOL ioctl (ETHTOOL_GTXCSUM /
// ETHTOOL_STXCSUM and friends): one ioctl per operation, no genetlink family
// lookup, and it works on every kernel kind runs on.
//
// The ioctl acts on the network namespace the socket was created in, so build
// an Ethtool while inside the namespace you mean (see Netns).
#include <cstdint>
#include <string>

#include "base/UniqueFd.hpp"

namespace kovs {

struct OffloadState {
    bool txChecksum = false;
    bool tso = false;
    bool gso = false;
    bool operator==(const OffloadState&) const = default;
};

class Ethtool {
public:
    Ethtool();  // a socket in the calling thread's current netns

    OffloadState state(const std::string& ifname) const;
    bool txChecksum(const std::string& ifname) const;
    bool tso(const std::string& ifname) const;
    bool gso(const std::string& ifname) const;

    // Writes, then reads back: throws when the device did not take the value
    // (some drivers accept the ioctl and keep their fixed features).
    void setTxChecksum(const std::string& ifname, bool on) const;
    // Turns TX checksum off when it is on; returns true when it had to (a repair).
    bool ensureTxChecksumOff(const std::string& ifname) const;

private:
    uint32_t get(const std::string& ifname, uint32_t cmd, const char* name) const;
    void set(const std::string& ifname, uint32_t cmd, uint32_t value, const char* name) const;

    UniqueFd sock_;
};

}  // namespace kovs
