// RtnetlinkClient::netnsId: the one request of the client that libnl-route
// has no object for (RTM_GETNSID), so it is built and parsed with libnl's
// message API; kept apart from the link, address and route requests.
#include <linux/net_namespace.h>
#include <netlink/msg.h>

#include <memory>

#include "base/Error.hpp"
#include "base/RtnetlinkClient.hpp"

namespace kovs {
namespace {

struct MsgDeleter { void operator()(nl_msg* m) const { nlmsg_free(m); } };
struct CbDeleter { void operator()(nl_cb* c) const { nl_cb_put(c); } };

// What the kernel answered to one RTM_GETNSID.
struct NetnsIdReply {
    std::optional<int32_t> id;
    int error = 0;          // errno of an NLMSG_ERROR
    int unexpectedType = 0;  // a reply that is not RTM_NEWNSID
};

int onNetnsId(nl_msg* msg, void* arg) {
    auto* reply = static_cast<NetnsIdReply*>(arg);
    nlmsghdr* h = nlmsg_hdr(msg);
    if (h->nlmsg_type != RTM_NEWNSID) {
        reply->unexpectedType = h->nlmsg_type;
        return NL_STOP;
    }
    nlattr* attrs[NETNSA_MAX + 1] = {};
    if (nlmsg_parse(h, sizeof(rtgenmsg), attrs, NETNSA_MAX, nullptr) == 0 && attrs[NETNSA_NSID] &&
        nla_len(attrs[NETNSA_NSID]) >= static_cast<int>(sizeof(int32_t))) {
        int32_t id = nla_get_s32(attrs[NETNSA_NSID]);
        if (id >= 0) reply->id = id;  // NETNSA_NSID_NOT_ASSIGNED (-1): none
    }
    return NL_STOP;
}

int onNetnsIdError(sockaddr_nl*, nlmsgerr* e, void* arg) {
    static_cast<NetnsIdReply*>(arg)->error = -e->error;
    return NL_STOP;
}

}  // namespace

std::optional<int32_t> RtnetlinkClient::netnsId(int netnsFd) {
    std::unique_ptr<nl_msg, MsgDeleter> req(nlmsg_alloc_simple(RTM_GETNSID, NLM_F_REQUEST));
    if (!req) throw Error("RTM_GETNSID: out of memory");
    rtgenmsg hdr{};
    hdr.rtgen_family = AF_UNSPEC;
    nl::check(nlmsg_append(req.get(), &hdr, sizeof hdr, NLMSG_ALIGNTO), "RTM_GETNSID: build request");
    nl::check(nla_put_u32(req.get(), NETNSA_FD, static_cast<uint32_t>(netnsFd)), "RTM_GETNSID: build request");
    nl::check(nl_send_auto(sock_.get(), req.get()), "RTM_GETNSID: send");

    std::unique_ptr<nl_cb, CbDeleter> socketCb(nl_socket_get_cb(sock_.get()));  // takes a reference
    std::unique_ptr<nl_cb, CbDeleter> cb(nl_cb_clone(socketCb.get()));
    if (!cb) throw Error("RTM_GETNSID: out of memory");
    NetnsIdReply reply;
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, onNetnsId, &reply);
    nl_cb_err(cb.get(), NL_CB_CUSTOM, onNetnsIdError, &reply);
    int rc = nl_recvmsgs(sock_.get(), cb.get());
    if (reply.error != 0) throw SystemError("RTM_GETNSID", reply.error);
    nl::check(rc, "RTM_GETNSID: recv");
    // libnl asked for an acknowledgement too; take it off the socket so the
    // next request's reply is not mistaken for it.
    nl::check(nl_wait_for_ack(sock_.get()), "RTM_GETNSID: recv");
    if (reply.unexpectedType != 0)
        throw Error("RTM_GETNSID: unexpected reply type " + std::to_string(reply.unexpectedType));
    return reply.id;
}

}  // namespace kovs
