#include "offload/PodInterfaces.hpp"

#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "base/Error.hpp"
#include "base/Netlink.hpp"
#include "base/Netns.hpp"
#include "base/UniqueFd.hpp"
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

// The network namespace ids this netns has assigned to others (RTM_GETNSID,
// one request per netns file), i.e. what IFLA_LINK_NETNSID of a veth names.
class NetnsIds {
public:
    NetnsIds() : sock_(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) {
        if (!sock_) throwErrno("pod interfaces: netlink socket");
    }

    // -1 when the kernel has assigned the namespace no id (no veth of ours leads there).
    int of(int netnsFd) {
        alignas(nlmsghdr) char buf[64] = {};
        auto* h = reinterpret_cast<nlmsghdr*>(buf);
        h->nlmsg_len = NLMSG_LENGTH(sizeof(rtgenmsg));
        h->nlmsg_type = RTM_GETNSID;
        h->nlmsg_flags = NLM_F_REQUEST;
        h->nlmsg_seq = ++seq_;
        reinterpret_cast<rtgenmsg*>(NLMSG_DATA(h))->rtgen_family = AF_UNSPEC;
        auto* a = reinterpret_cast<nlattr*>(buf + NLMSG_ALIGN(h->nlmsg_len));
        a->nla_type = NETNSA_FD;
        a->nla_len = NLA_HDRLEN + sizeof(uint32_t);
        auto fd = static_cast<uint32_t>(netnsFd);
        std::memcpy(reinterpret_cast<char*>(a) + NLA_HDRLEN, &fd, sizeof fd);
        h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + NLA_ALIGN(a->nla_len);
        if (::send(sock_.get(), buf, h->nlmsg_len, 0) < 0) throwErrno("RTM_GETNSID: send");
        alignas(nlmsghdr) char reply[512];
        ssize_t n = ::recv(sock_.get(), reply, sizeof reply, 0);
        if (n < 0) throwErrno("RTM_GETNSID: recv");
        auto* r = reinterpret_cast<nlmsghdr*>(reply);
        if (!NLMSG_OK(r, static_cast<size_t>(n))) throw Error("RTM_GETNSID: short reply");
        if (r->nlmsg_type == NLMSG_ERROR) {
            int err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(r))->error;
            throw SystemError("RTM_GETNSID", err);
        }
        if (r->nlmsg_type != RTM_NEWNSID) throw Error("RTM_GETNSID: unexpected reply type " + std::to_string(r->nlmsg_type));
        auto offset = NLMSG_ALIGN(NLMSG_LENGTH(sizeof(rtgenmsg)));
        for (size_t at = offset; at + NLA_HDRLEN <= r->nlmsg_len;) {
            auto* attr = reinterpret_cast<nlattr*>(reply + at);
            if (attr->nla_len < NLA_HDRLEN || at + attr->nla_len > r->nlmsg_len) break;
            if (attr->nla_type == NETNSA_NSID && attr->nla_len >= NLA_HDRLEN + sizeof(int32_t)) {
                int32_t id = 0;
                std::memcpy(&id, reinterpret_cast<char*>(attr) + NLA_HDRLEN, sizeof id);
                return id;
            }
            at += NLA_ALIGN(attr->nla_len);
        }
        return -1;
    }

private:
    UniqueFd sock_;
    uint32_t seq_ = 0;
};

// Every pinned netns file once (bind mounts of one namespace in two
// directories, /run and /var/run being one directory on most systems).
std::map<int, std::string> netnsById(const std::vector<std::string>& dirs) {
    std::map<int, std::string> out;
    std::set<std::pair<dev_t, ino_t>> seen;
    NetnsIds ids;
    for (const auto& dir : dirs) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
            struct stat st{};
            if (::stat(e.path().c_str(), &st) < 0 || !seen.insert({st.st_dev, st.st_ino}).second) continue;
            try {
                auto fd = Netns::open(e.path().string());
                int id = ids.of(fd.get());
                if (id >= 0) out.emplace(id, e.path().string());
            } catch (const Error&) {
                // Not a network namespace (a stale file), or gone meanwhile.
            }
        }
    }
    return out;
}

std::vector<PodInterface> foreignPods(const std::vector<Candidate>& candidates, const PodInterfacesOptions& opts) {
    std::vector<PodInterface> out;
    auto sock = nl::connectRoute();
    nl_cache* raw = nullptr;
    nl::check(rtnl_link_alloc_cache(sock.get(), AF_UNSPEC, &raw), "pod interfaces: dump links");
    nl::Cache links(raw);
    struct Peer {
        const Candidate* candidate;
        int nsid;
        int ifindex;
    };
    std::vector<Peer> peers;
    for (const auto& c : candidates) {
        nl::Link link(rtnl_link_get_by_name(links.get(), c.device.c_str()));
        if (!link) continue;  // vswitchd shows the port, the kernel no longer (going away)
        const char* kind = rtnl_link_get_type(link.get());
        int32_t nsid = -1;
        if (kind == nullptr || std::strcmp(kind, "veth") != 0) continue;
        if (rtnl_link_get_link_netnsid(link.get(), &nsid) < 0 || nsid < 0) continue;  // its peer is in our netns
        peers.push_back({&c, nsid, static_cast<int>(rtnl_link_get_link(link.get()))});
    }
    if (peers.empty()) return out;
    auto paths = netnsById(opts.netnsDirs);
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

std::vector<PodInterface> podInterfacesFromReplica(const OvsdbReplica& replica, const std::string& bridge,
                                                   const PodInterfacesOptions& opts) {
    std::vector<PodInterface> out;
    auto br = replica.findByName("Bridge", bridge);
    if (!br) return out;
    std::vector<Candidate> candidates;
    for (const auto& uuid : ovsdb::uuidSet(br->second.value("ports", nlohmann::json()))) {
        const auto* port = replica.row("Port", uuid);
        if (!port) continue;
        auto portIds = ovsdb::mapValue(port->value("external_ids", nlohmann::json()));
        auto ids = PodPortIds::parse(portIds);
        auto name = ovsdb::stringOr(*port, "name");
        if (ids.madeByKovsCni()) {
            auto who = ids.podName.empty() ? "container " + ids.containerId : ids.podNamespace + "/" + ids.podName;
            if (!ids.netns.empty() && !ids.ifname.empty()) out.push_back({ids.netns, ids.ifname, name, who, false});
            continue;
        }
        if (!opts.foreign || portIds.count(PodPortIds::kOwnerKey)) continue;  // kovs-agent's own ports
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
