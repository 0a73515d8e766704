// The requests of RtnetlinkClient that libnl-route has no call for, built and
// parsed with libnl's message API over one exchange: RTM_GETNSID (the id
// this namespace gives another one) and RTM_GETROUTE for one destination
// (which route, next hop and MTU the kernel would use to reach an address).
#include <linux/net_namespace.h>
#include <netlink/msg.h>

#include <functional>
#include <memory>

#include "base/Error.hpp"
#include "base/RtnetlinkClient.hpp"

namespace kovs {
namespace {

struct MsgDeleter { void operator()(nl_msg* m) const { nlmsg_free(m); } };
struct CbDeleter { void operator()(nl_cb* c) const { nl_cb_put(c); } };
using Msg = std::unique_ptr<nl_msg, MsgDeleter>;

// What the kernel answered to one request.
struct Reply {
    int expectedType = 0;
    std::function<void(nlmsghdr*)> onReply;
    int error = 0;           // errno of an NLMSG_ERROR
    int unexpectedType = 0;  // a reply of another type
};

int onValid(nl_msg* msg, void* arg) {
    auto* reply = static_cast<Reply*>(arg);
    nlmsghdr* h = nlmsg_hdr(msg);
    if (h->nlmsg_type != reply->expectedType) {
        reply->unexpectedType = h->nlmsg_type;
    } else {
        reply->onReply(h);
    }
    return NL_STOP;
}

int onError(sockaddr_nl*, nlmsgerr* e, void* arg) {
    static_cast<Reply*>(arg)->error = -e->error;
    return NL_STOP;
}

// Sends `req` and hands the one reply of `expectedType` to `onReply`.
// Throws SystemError (its code() the kernel's errno) when the kernel refused.
void exchange(nl_sock* sock, nl_msg* req, const std::string& what, int expectedType, std::function<void(nlmsghdr*)> onReply) {
    nl::check(nl_send_auto(sock, req), what + ": send");
    std::unique_ptr<nl_cb, CbDeleter> socketCb(nl_socket_get_cb(sock));  // takes a reference
    std::unique_ptr<nl_cb, CbDeleter> cb(nl_cb_clone(socketCb.get()));
    if (!cb) throw Error(what + ": out of memory");
    Reply reply{expectedType, std::move(onReply)};
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, onValid, &reply);
    nl_cb_err(cb.get(), NL_CB_CUSTOM, onError, &reply);
    int rc = nl_recvmsgs(sock, cb.get());
    if (reply.error != 0) throw SystemError(what, reply.error);
    nl::check(rc, what + ": recv");
    // libnl asked for an acknowledgement too; take it off the socket so the
    // next request's reply is not mistaken for it.
    nl::check(nl_wait_for_ack(sock), what + ": recv");
    if (reply.unexpectedType != 0) throw Error(what + ": unexpected reply type " + std::to_string(reply.unexpectedType));
}

Msg request(int type, const std::string& what) {
    Msg req(nlmsg_alloc_simple(type, NLM_F_REQUEST));
    if (!req) throw Error(what + ": out of memory");
    return req;
}

}  // namespace

std::optional<int32_t> RtnetlinkClient::netnsId(int netnsFd) {
    const std::string what = "RTM_GETNSID";
    auto req = request(RTM_GETNSID, what);
    rtgenmsg hdr{};
    hdr.rtgen_family = AF_UNSPEC;
    nl::check(nlmsg_append(req.get(), &hdr, sizeof hdr, NLMSG_ALIGNTO), what + ": build request");
    nl::check(nla_put_u32(req.get(), NETNSA_FD, static_cast<uint32_t>(netnsFd)), what + ": build request");
    std::optional<int32_t> id;
    exchange(sock_.get(), req.get(), what, RTM_NEWNSID, [&](nlmsghdr* h) {
        nlattr* attrs[NETNSA_MAX + 1] = {};
        if (nlmsg_parse(h, sizeof(rtgenmsg), attrs, NETNSA_MAX, nullptr) == 0 && attrs[NETNSA_NSID] &&
            nla_len(attrs[NETNSA_NSID]) >= static_cast<int>(sizeof(int32_t))) {
            int32_t v = nla_get_s32(attrs[NETNSA_NSID]);
            if (v >= 0) id = v;  // NETNSA_NSID_NOT_ASSIGNED (-1): none
        }
    });
    return id;
}

RouteLookup RtnetlinkClient::routeTo(const IpPrefix& address) {
    const std::string what = "route to " + address.addressString();
    auto req = request(RTM_GETROUTE, what);
    rtmsg hdr{};
    hdr.rtm_family = static_cast<uint8_t>(address.family);
    hdr.rtm_dst_len = static_cast<uint8_t>(address.maxPrefixLen());
    nl::check(nlmsg_append(req.get(), &hdr, sizeof hdr, NLMSG_ALIGNTO), what + ": build request");
    nl::check(nla_put(req.get(), RTA_DST, static_cast<int>(address.size()), address.bytes.data()), what + ": build request");
    RouteLookup out;
    try {
        exchange(sock_.get(), req.get(), what, RTM_NEWROUTE, [&](nlmsghdr* h) {
            rtnl_route* raw = nullptr;
            nl::check(rtnl_route_parse(h, &raw), what + ": parse reply");
            nl::Route route(raw);
            out.type = rtnl_route_get_type(raw);
            if (rtnl_route_get_nnexthops(raw) > 0) {
                rtnl_nexthop* nh = rtnl_route_nexthop_n(raw, 0);
                out.ifindex = rtnl_route_nh_get_ifindex(nh);
                if (nl_addr* gw = rtnl_route_nh_get_gateway(nh); gw && nl_addr_get_len(gw) > 0)
                    out.gateway = ipFromNlAddr(gw);
            }
            if (nl_addr* src = rtnl_route_get_pref_src(raw); src && nl_addr_get_len(src) > 0) out.source = ipFromNlAddr(src);
            uint32_t mtu = 0;
            if (rtnl_route_get_metric(raw, RTAX_MTU, &mtu) == 0) out.mtu = mtu;
        });
    } catch (const SystemError& e) {
        // The kernel's "no route": unreachable, prohibited, blackholed.
        if (e.code() != ENETUNREACH && e.code() != EHOSTUNREACH && e.code() != EACCES && e.code() != EINVAL) throw;
        out.error = e.code();
    }
    return out;
}

}  // namespace kovs
