#pragma once
// Moves the calling process into a fresh network namespace and a private
// mount namespace (with its own /run/netns), so nothing a test or benchmark
// does can reach the machine's interfaces, routes, OVS or /run, and all of it
// dies with the process. Loopback is brought up.

namespace kovs::test {

// 0 on success; 77 (meson's "skipped") when not root; 1 after printing why it failed.
int enterPrivateNamespaces(const char* who);

}  // namespace kovs::test
