#pragma once
// The one MAC address check of the project: "aa:bb:cc:dd:ee:ff", six pairs
// of hex digits separated by colons, the form OVSDB, ovs-appctl, libnl and
// the CNI results use. Anything that builds a flow, a unixctl command or a
// netlink request from a MAC checks it with this first.
#include <cctype>
#include <string_view>

namespace kovs {

inline bool isMacAddress(std::string_view s) {
    if (s.size() != 17) return false;
    for (size_t i = 0; i < s.size(); ++i) {
        bool colon = i % 3 == 2;
        if (colon ? s[i] != ':' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
}

}  // namespace kovs
