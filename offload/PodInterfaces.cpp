#include "offload/PodInterfaces.hpp"

#include <net/if.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "base/Error.hpp"
#include "base/Netns.hpp"
#include "base/RtnetlinkClient.hpp"
#include "ovs/OvsdbReplica.hpp"
#include "ovs/OvsdbTransaction.hpp"
#include "ovs/PodPortIds.hpp"

namespace kovs::offload {
namespace {

// A port of another CNI that may be a pod: its Interface (a plain system
// port; internal ports, tunnels and patches are not pods).
struct Candidate {
    std::string device;
    std::string pod;
};

// Every pinned netns file once (bind mounts of one namespace in two
// directories, /run and /var/run being one directory on most systems), by
// the id this netns has given it: what IFLA_LINK_NETNSID of a veth names.
std::map<int32_t, std::string> netnsById(RtnetlinkClient& rtnl, const std::vector<std::string>& dirs) {
    std::map<int32_t, std::string> out;
    std::set<std::pair<dev_t, ino_t>> seen;
    for (const auto& dir : dirs) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
            struct stat st{};
            if (::stat(e.path().c_str(), &st) < 0 || !seen.insert({st.st_dev, st.st_ino}).second) continue;
            try {
                auto fd = Netns::open(e.path().string());
                if (auto id = rtnl.netnsId(fd.get())) out.emplace(*id, e.path().string());
            } catch (const Error&) {
                // Not a network namespace (a stale file), or gone meanwhile.
            }
        }
    }
    return out;
}

std::vector<PodInterface> foreignPods(const std::vector<Candidate>& candidates, const PodInterfacesOptions& opts) {
    std::vector<PodInterface> out;
    RtnetlinkClient rtnl;
    std::map<std::string, LinkInfo> links;
    for (auto& l : rtnl.links()) links.emplace(l.name, std::move(l));
    struct Peer {
        const Candidate* candidate;
        int32_t nsid;
        int ifindex;
    };
    std::vector<Peer> peers;
    for (const auto& c : candidates) {
        auto link = links.find(c.device);
        if (link == links.end()) continue;  // vswitchd shows the port, the kernel no longer (going away)
        if (link->second.kind != "veth" || !link->second.peerNetnsId) continue;  // its peer is in our netns
        peers.push_back({&c, *link->second.peerNetnsId, link->second.peer});
    }
    if (peers.empty()) return out;
    auto paths = netnsById(rtnl, opts.netnsDirs);
    for (const auto& p : peers) {
        auto path = paths.find(p.nsid);
        if (path == paths.end()) continue;  // a namespace nobody pinned (not a pod, or not visible here)
        char name[IF_NAMESIZE] = {};
        {
            Netns in(path->second);
            if (::if_indextoname(static_cast<unsigned>(p.ifindex), name) == nullptr) continue;
        }
        out.push_back({path->second, name, "", p.candidate->pod, true});
    }
    return out;
}

}  // namespace

std::vector<PodInterface> podInterfacesFromReplica(const ovs::OvsdbReplica& replica, const std::string& bridge,
                                                   const PodInterfacesOptions& opts) {
    std::vector<PodInterface> out;
    auto br = replica.findByName("Bridge", bridge);
    if (!br) return out;
    std::vector<Candidate> candidates;
    for (const auto& uuid : ovsdb::uuidSet(br->second.value("ports", nlohmann::json()))) {
        const auto* port = replica.row("Port", uuid);
        if (!port) continue;
        auto portIds = ovsdb::mapValue(port->value("external_ids", nlohmann::json()));
        auto ids = ovs::PodPortIds::parse(portIds);
        auto name = ovsdb::stringOr(*port, "name");
        if (ids.madeByKovsCni()) {
            auto who = ids.podName.empty() ? "container " + ids.containerId : ids.podNamespace + "/" + ids.podName;
            if (!ids.netns.empty() && !ids.ifname.empty()) out.push_back({ids.netns, ids.ifname, name, who, false});
            continue;
        }
        if (!opts.foreign || portIds.count(ovs::PodPortIds::kOwnerKey)) continue;  // kovs-agent's own ports
        for (const auto& iu : ovsdb::uuidSet(port->value("interfaces", nlohmann::json()))) {
            const auto* iface = replica.row("Interface", iu);
            if (!iface || !ovsdb::stringOr(*iface, "type").empty()) continue;
            auto ifaceIds = ovsdb::mapValue(iface->value("external_ids", nlohmann::json()));
            auto id = ifaceIds.find("iface-id");
            candidates.push_back({ovsdb::stringOr(*iface, "name"), id != ifaceIds.end() ? "iface-id " + id->second : "port " + name});
        }
    }
    if (!candidates.empty()) {
        auto foreign = foreignPods(candidates, opts);
        out.insert(out.end(), foreign.begin(), foreign.end());
    }
    return out;
}

}  // namespace kovs::offload
