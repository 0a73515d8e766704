// main() of every integration test binary: before any test runs, the process
// moves into a fresh network namespace and a private mount namespace, so
// nothing a test does can reach the machine's own interfaces, routes, OVS or
// /run. Everything it creates dies with the namespace, even after a crash.
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "base/Process.hpp"

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (::geteuid() != 0) {
        std::fprintf(stderr, "integration tests need root (network namespaces, OVS)\n");
        return 77;  // meson's "skipped" exit code
    }
    if (::unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) {
        std::perror("unshare(CLONE_NEWNET|CLONE_NEWNS)");
        return 1;
    }
    // Mounts made by tests (tmpfs on /run/..., netns bind mounts) stay private.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        std::perror("mount --make-rprivate /");
        return 1;
    }
    // Named namespaces created by tests (`ip netns add`) must not appear in the
    // machine's /run/netns.
    ::mkdir("/run/netns", 0755);
    if (::mount("tmpfs", "/run/netns", "tmpfs", 0, "mode=0755") != 0) {
        std::perror("mount tmpfs /run/netns");
        return 1;
    }
    kovs::runChecked({"ip", "link", "set", "lo", "up"});
    return RUN_ALL_TESTS();
}
