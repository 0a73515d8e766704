#include "base/Pidfile.hpp"

#include <cctype>
#include <fstream>

#include "base/Error.hpp"

namespace kovs {

std::optional<pid_t> Pidfile::read() const {
    std::ifstream f(path_);
    std::string text;
    if (!std::getline(f, text)) return std::nullopt;
    // Digits and nothing else (a newline at most): "12x" is not pid 12.
    if (text.empty() || text.size() > 10) return std::nullopt;
    for (char c : text) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    long pid = std::stol(text);
    if (pid <= 0 || pid > 0x3fffffff) return std::nullopt;  // PID_MAX_LIMIT is 2^22
    return static_cast<pid_t>(pid);
}

std::string processName(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
    std::string s;
    std::getline(f, s);
    return s;
}

std::optional<pid_t> Pidfile::readLive(const std::string& comm) const {
    auto pid = read();
    if (!pid || processName(*pid) != comm.substr(0, 15)) return std::nullopt;
    return pid;
}

pid_t Pidfile::requireLive(const std::string& comm) const {
    auto pid = read();
    if (!pid) throw Error(path_ + ": no pid in it");
    auto name = processName(*pid);
    if (name != comm.substr(0, 15))
        throw Error(path_ + ": pid " + std::to_string(*pid) + " is " + (name.empty() ? "not running" : "'" + name + "'") +
                    " here, not " + comm + " (does it run in another pid namespace?)");
    return *pid;
}

}  // namespace kovs
