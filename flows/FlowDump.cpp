#include "flows/FlowDump.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <vector>

#include "base/Error.hpp"

namespace kovs::flows {
namespace {

const std::set<std::string> kStatistics{"duration", "n_packets", "n_bytes", "idle_age", "hard_age"};

uint64_t number(const std::string& text, const std::string& line) {
    try {
        size_t used = 0;
        auto v = std::stoull(text, &used, 0);
        if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    throw Error("dump-flows: bad number '" + text + "' in: " + line);
}

}  // namespace

FlowDump parseFlowDump(const std::string& text) {
    FlowDump dump;
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        auto start = line.find_first_not_of(' ');
        if (start == std::string::npos || line.compare(start, 7, "cookie=") != 0) continue;  // the reply header
        line.erase(0, start);
        // "cookie=0x0, duration=5.6s, table=0, n_packets=3, n_bytes=2, idle_age=3, priority=200,in_port=1 actions=..."
        // The fields before the match are ", "-separated; the match has no ", ".
        std::string kept;
        uint64_t cookie = 0, packets = 0;
        size_t pos = 0;
        while (true) {
            auto comma = line.find(", ", pos);
            auto field = line.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
            auto eq = field.find('=');
            auto key = field.substr(0, eq);
            if (comma == std::string::npos) {  // the match and the actions
                kept += field;
                break;
            }
            if (eq == std::string::npos) throw Error("dump-flows: cannot read: " + line);
            if (key == "cookie") cookie = number(field.substr(eq + 1), line);
            if (key == "n_packets") packets = number(field.substr(eq + 1), line);
            if (!kStatistics.count(key)) kept += field + ", ";
            pos = comma + 2;
        }
        dump.packetsByCookie[cookie] += packets;
        lines.push_back(std::move(kept));
    }
    std::sort(lines.begin(), lines.end());
    dump.count = lines.size();
    for (const auto& l : lines) dump.flows += l + "\n";
    return dump;
}

}  // namespace kovs::flows
