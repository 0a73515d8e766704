#pragma once
// Whether a test runs under a cross build's emulator: meson runs the tests of
// cross/aarch64-linux-gnu.ini through its exe_wrapper, qemu-user, and says so
// in MESON_EXE_WRAPPER. qemu-user passes on neither the NS_GET_NSTYPE nor the
// SIOCETHTOOL ioctl (it answers ENOSYS), and runs clone(CLONE_VFORK) as a
// plain fork, so glibc's posix_spawn cannot report an exec that failed. The
// few tests of exactly those skip there, saying which (the kQemu... reasons below).
#include <cstdlib>

namespace kovs::test {

inline bool underEmulator() {
    const char* e = std::getenv("MESON_EXE_WRAPPER");
    return e && *e;
}

inline constexpr const char* kQemuNoNsIoctl = "qemu-user answers ioctl NS_GET_NSTYPE with ENOSYS (an aarch64 kernel has it)";
inline constexpr const char* kQemuNoEthtool = "qemu-user answers ioctl SIOCETHTOOL with ENOSYS (an aarch64 kernel has it)";
inline constexpr const char* kQemuNoVforkError =
    "qemu-user runs CLONE_VFORK as a fork: posix_spawn cannot see the child's exec fail (an aarch64 kernel reports it)";

}  // namespace kovs::test
