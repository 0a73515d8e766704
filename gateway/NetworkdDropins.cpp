#include "gateway/NetworkdDropins.hpp"

#include <net/if.h>

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/Error.hpp"
#include "base/InterfaceName.hpp"

namespace kovs::gateway {
namespace {

void validateName(const std::string& name) {
    checkInterfaceName("networkd drop-in for", name);
    for (unsigned char c : name) {
        // Also excludes networkd's glob characters (*?[) and whitespace, which
        // would make the [Match] line match more than this one interface.
        if (!(std::isalnum(c) || c == '-' || c == '_' || c == '.'))
            throw Error("networkd drop-in for '" + name + "': invalid character in interface name");
    }
}

// A stem is a name; a match may be a glob (no whitespace: one pattern) that
// must cover its example.
void validate(const NetworkdLink& l) {
    validateName(l.stem);
    validateName(l.example);
    for (unsigned char c : l.match) {
        if (!(std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '*' || c == '[' || c == ']'))
            throw Error("networkd drop-in " + l.stem + ": invalid character in Name= pattern '" + l.match + "'");
    }
    if (::fnmatch(l.match.c_str(), l.example.c_str(), 0) != 0)
        throw Error("networkd drop-in " + l.stem + ": Name=" + l.match + " does not match " + l.example);
}

}  // namespace

NetworkdDropins::NetworkdDropins(std::string dir) : dir_(std::move(dir)) {}

std::string NetworkdDropins::pathFor(const NetworkdLink& link) const { return dir_ + "/10-kovs-" + link.stem + ".network"; }

std::string NetworkdDropins::contentFor(const NetworkdLink& link) {
    return "# Written by kovs-agent; removed by kovs-agent --cleanup.\n"
           "[Match]\nName=" + link.match + "\n\n[Link]\nUnmanaged=yes\n";
}

void NetworkdDropins::install(const std::vector<NetworkdLink>& interfaces) const {
    for (const auto& l : interfaces) validate(l);
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw Error("networkd drop-ins: create " + dir_ + ": " + ec.message());
    // Undone on failure: only the files this call created. One that was
    // there before (the last agent run wrote it) keeps networkd off its
    // interface and must stay.
    std::vector<NetworkdLink> created;
    try {
        for (const auto& l : interfaces) {
            bool existed = std::filesystem::exists(pathFor(l), ec);
            writeOne(l);
            if (!existed) created.push_back(l);
        }
    } catch (...) {
        for (const auto& l : created) std::filesystem::remove(pathFor(l), ec);
        throw;
    }
}

void NetworkdDropins::writeOne(const NetworkdLink& link) const {
    std::error_code ec;
    {
        std::string path = pathFor(link);
        std::string tmp = path + ".tmp";
        {
            std::ofstream out(tmp, std::ios::trunc);
            out << contentFor(link);
            out.close();
            if (!out) {
                std::filesystem::remove(tmp, ec);
                throw Error("networkd drop-in: write " + tmp + " failed");
            }
        }
        std::filesystem::rename(tmp, path, ec);
        if (ec) {
            std::error_code ignored;
            std::filesystem::remove(tmp, ignored);
            throw Error("networkd drop-in: rename " + tmp + " to " + path + ": " + ec.message());
        }
    }
}

void NetworkdDropins::remove(const std::vector<NetworkdLink>& interfaces) const {
    for (const auto& l : interfaces) {
        validate(l);
        std::error_code ec;
        std::filesystem::remove(pathFor(l), ec);
        if (ec) throw Error("networkd drop-in: remove " + pathFor(l) + ": " + ec.message());
    }
}

std::vector<NetworkdLink> NetworkdDropins::missing(const std::vector<NetworkdLink>& links) const {
    std::vector<NetworkdLink> out;
    for (const auto& l : links) {
        std::ifstream in(pathFor(l));
        std::stringstream held;
        held << in.rdbuf();
        if (!in || held.str() != contentFor(l)) out.push_back(l);
    }
    return out;
}

std::vector<std::string> NetworkdDropins::shadowing(const NetworkdLink& link) const {
    std::vector<std::string> out;
    const auto ours = std::filesystem::path(pathFor(link)).filename().string();
    const auto& interface = link.example;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
        auto name = e.path().filename().string();
        if (e.path().extension() != ".network" || name >= ours) continue;
        // networkd's [Match] Name= takes a space-separated list of globs.
        std::ifstream in(e.path());
        std::string line, section;
        bool matches = false;
        while (std::getline(in, line)) {
            if (!line.empty() && line[0] == '[') section = line;
            if (section != "[Match]" || line.rfind("Name=", 0) != 0) continue;
            std::istringstream globs(line.substr(5));
            for (std::string g; globs >> g;) matches |= ::fnmatch(g.c_str(), interface.c_str(), 0) == 0;
        }
        if (matches) out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace kovs::gateway
