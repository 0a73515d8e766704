#include "base/InterfaceName.hpp"

#include <net/if.h>

#include <cctype>

#include "base/Error.hpp"

namespace kovs {

std::string interfaceNameProblem(std::string_view name) {
    if (name.empty()) return "empty";
    if (name.size() >= IFNAMSIZ) return "longer than " + std::to_string(IFNAMSIZ - 1) + " characters";
    if (name == "." || name == "..") return "not a name";
    for (unsigned char c : name) {
        if (std::isspace(c) || c < 0x20) return "contains a space or control character";
        if (c == '/' || c == ':') return std::string("contains '") + static_cast<char>(c) + "'";
    }
    return "";
}

void checkInterfaceName(const std::string& what, std::string_view name) {
    auto problem = interfaceNameProblem(name);
    if (!problem.empty())
        throw Error(what + " '" + std::string(name) + "': not a valid interface name (" + problem + ")");
}

}  // namespace kovs
