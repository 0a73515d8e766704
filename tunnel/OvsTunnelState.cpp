#include "tunnel/OvsTunnelState.hpp"

#include <sstream>
#include <vector>

#include "base/Error.hpp"
#include "base/MacAddress.hpp"

namespace kovs::tunnel {
namespace {

std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string s; in >> s;) w.push_back(s);
    return w;
}

}  // namespace

OvsTunnelState parseOvsTunnelState(const std::string& routeShow, const std::string& neighShow,
                                   const std::string& bridge) {
    OvsTunnelState st;
    std::istringstream routes(routeShow);
    for (std::string line; std::getline(routes, line);) {
        auto w = words(line);
        if (w.size() < 4 || w[0] != "User:" || w[1].find('/') == std::string::npos) continue;
        OvsRoute r;
        bool marked = false;
        // Keyword-value pairs after the prefix, in the order 3.1 prints them.
        for (size_t i = 2; i + 1 < w.size(); ++i) {
            if (w[i] == "MARK") marked = true;
            else if (w[i] == "dev") r.dev = w[i + 1];
            else if (w[i] == "GW") r.gateway = w[i + 1];
            else continue;
            ++i;
        }
        if (!marked && !r.dev.empty()) st.userRoutes[w[1]] = r;
    }
    std::istringstream neighs(neighShow);
    for (std::string line; std::getline(neighs, line);) {
        auto w = words(line);
        if (w.size() == 3 && isMacAddress(w[1]) && w[2] == bridge) st.neighbours[w[0]] = w[1];
    }
    return st;
}

std::vector<ovs::UnixctlCommand> ovsTunnelReadBack() { return {{"ovs/route/show", {}}, {"tnl/neigh/show", {}}}; }

OvsTunnelState parseOvsTunnelReadBack(const ovs::UnixctlReplies& shown, const std::string& bridge) {
    if (!shown.unreachable.empty()) throw Error(shown.unreachable);
    auto commands = ovsTunnelReadBack();
    if (shown.replies.size() != commands.size()) throw Error("ovs/route/show, tnl/neigh/show: replies missing");
    for (size_t i = 0; i < commands.size(); ++i) {
        if (!shown.replies[i].ok) throw Error(commands[i].describe() + ": " + shown.replies[i].text);
    }
    return parseOvsTunnelState(shown.replies[0].text, shown.replies[1].text, bridge);
}

}  // namespace kovs::tunnel
