#include "base/Strings.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/Error.hpp"

namespace kovs {

std::string readFile(const std::string& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(what + " " + path + ": cannot read: " + std::strerror(errno));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace kovs
