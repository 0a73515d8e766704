#pragma once
// The kernel's rule for a network interface name (net/core/dev.c
// dev_valid_name): 1-15 bytes (IFNAMSIZ counts the NUL), not "." or "..",
// no '/', ':' or whitespace. Every name kovs takes from its configuration
// or creates is checked by this one rule, so a name the config accepts
// cannot fail later at start-up.
#include <string>
#include <string_view>

namespace kovs {

// Why `name` is not a valid interface name; empty when it is.
std::string interfaceNameProblem(std::string_view name);

// Throws kovs::Error "<what> '<name>': <problem>" for an invalid name.
void checkInterfaceName(const std::string& what, std::string_view name);

}  // namespace kovs
