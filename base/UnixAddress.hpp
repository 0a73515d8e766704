#pragma once
#include <sys/un.h>

#include <string>

#include "base/Error.hpp"

namespace kovs {

// A sockaddr_un for `path`; throws kovs::Error naming `what` when the path does
// not fit (sun_path is 108 bytes including the terminating NUL).
inline sockaddr_un unixAddress(const std::string& path, const std::string& what) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw Error(what + " " + path + ": socket path too long");
    path.copy(addr.sun_path, path.size());
    return addr;
}

}  // namespace kovs
