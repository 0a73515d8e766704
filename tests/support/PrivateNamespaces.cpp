#include "tests/support/PrivateNamespaces.hpp"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "base/Process.hpp"

namespace kovs::test {

int enterPrivateNamespaces(const char* who) {
    if (::geteuid() != 0) {
        std::fprintf(stderr, "%s needs root (network namespaces, OVS)\n", who);
        return 77;
    }
    if (::unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) {
        std::perror("unshare(CLONE_NEWNET|CLONE_NEWNS)");
        return 1;
    }
    // Mounts made later (tmpfs on /run/..., netns bind mounts) stay private.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        std::perror("mount --make-rprivate /");
        return 1;
    }
    // Named namespaces (`ip netns add`) must not appear in the machine's /run/netns.
    ::mkdir("/run/netns", 0755);
    if (::mount("tmpfs", "/run/netns", "tmpfs", 0, "mode=0755") != 0) {
        std::perror("mount tmpfs /run/netns");
        return 1;
    }
    auto lo = runProcess({"ip", "link", "set", "lo", "up"});
    if (!lo.ok()) {
        std::fprintf(stderr, "%s: ip link set lo up: %s\n", who, lo.err.c_str());
        return 1;
    }
    return 0;
}

}  // namespace kovs::test
