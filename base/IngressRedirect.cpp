#include "base/IngressRedirect.hpp"

#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/tc_act/tc_mirred.h>
#include <netlink/route/act/mirred.h>
#include <netlink/route/classifier.h>
#include <netlink/route/cls/u32.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>

#include <cstring>
#include <memory>

#include "base/Error.hpp"

namespace kovs {
namespace {

struct QdiscDeleter { void operator()(rtnl_qdisc* q) const { rtnl_qdisc_put(q); } };
struct ClsDeleter { void operator()(rtnl_cls* c) const { rtnl_cls_put(c); } };
struct ActDeleter { void operator()(rtnl_act* a) const { rtnl_act_put(a); } };

constexpr uint32_t kIngressParent = TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS);
constexpr uint32_t kEgressParent = TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS);

// The qdisc at ffff: on the link: "clsact", "ingress" (someone else's), or "".
std::string ingressQdiscKind(RtnetlinkClient& rtnl, int ifindex, const std::string& link) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_qdisc_alloc_cache(rtnl.socket(), &raw), "link " + link + ": dump qdiscs");
    nl::Cache cache(raw);
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* q = reinterpret_cast<rtnl_qdisc*>(o);
        if (rtnl_tc_get_ifindex(TC_CAST(q)) != ifindex || rtnl_tc_get_handle(TC_CAST(q)) != TC_H_MAKE(TC_H_CLSACT, 0)) continue;
        const char* kind = rtnl_tc_get_kind(TC_CAST(q));
        return kind ? kind : "?";
    }
    return "";
}

// The filters under one clsact parent (a cache kovs frees).
nl::Cache filters(RtnetlinkClient& rtnl, int ifindex, uint32_t parent, const std::string& link) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_cls_alloc_cache(rtnl.socket(), ifindex, parent, &raw), "link " + link + ": dump tc filters");
    return nl::Cache(raw);
}

// kovs's filter object in `cache`, if there is one.
rtnl_cls* ourFilter(nl_cache* cache) {
    for (nl_object* o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
        auto* c = reinterpret_cast<rtnl_cls*>(o);
        const char* kind = rtnl_tc_get_kind(TC_CAST(c));
        if (rtnl_cls_get_prio(c) == kIngressRedirectPriority && kind && std::strcmp(kind, "u32") == 0) return c;
    }
    return nullptr;
}

}  // namespace

std::optional<int> ingressRedirectTarget(RtnetlinkClient& rtnl, const std::string& from) {
    auto link = rtnl.link(from);
    if (!link || ingressQdiscKind(rtnl, link->index, from) != "clsact") return std::nullopt;
    auto cache = filters(rtnl, link->index, kIngressParent, from);
    // u32 lists its hash table nodes as filters too; the key node carries the action.
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* c = reinterpret_cast<rtnl_cls*>(o);
        if (rtnl_cls_get_prio(c) != kIngressRedirectPriority) continue;
        const char* kind = rtnl_tc_get_kind(TC_CAST(c));
        if (!kind || std::strcmp(kind, "u32") != 0) continue;
        for (rtnl_act* a = rtnl_u32_get_action(c); a; a = rtnl_act_next(a)) {
            const char* akind = rtnl_tc_get_kind(TC_CAST(a));
            if (akind && std::strcmp(akind, "mirred") == 0 && rtnl_mirred_get_action(a) == TCA_EGRESS_REDIR)
                return static_cast<int>(rtnl_mirred_get_ifindex(a));
        }
    }
    return std::nullopt;
}

void addIngressRedirect(RtnetlinkClient& rtnl, const std::string& from, const std::string& to) {
    const std::string what = "redirect " + from + " ingress -> " + to + " egress";
    int fromIndex = rtnl.requireLink(from).index;
    int toIndex = rtnl.requireLink(to).index;
    if (ingressRedirectTarget(rtnl, from) == toIndex) return;

    auto kind = ingressQdiscKind(rtnl, fromIndex, from);
    if (kind.empty()) {
        std::unique_ptr<rtnl_qdisc, QdiscDeleter> q(rtnl_qdisc_alloc());
        if (!q) throw Error(what + ": out of memory");
        rtnl_tc_set_ifindex(TC_CAST(q.get()), fromIndex);
        rtnl_tc_set_parent(TC_CAST(q.get()), TC_H_CLSACT);
        rtnl_tc_set_handle(TC_CAST(q.get()), TC_H_MAKE(TC_H_CLSACT, 0));
        nl::check(rtnl_tc_set_kind(TC_CAST(q.get()), "clsact"), what);
        nl::check(rtnl_qdisc_add(rtnl.socket(), q.get(), NLM_F_CREATE | NLM_F_EXCL), what + ": add clsact qdisc");
    } else if (kind != "clsact") {
        throw Error(what + ": " + from + " has a tc '" + kind + "' qdisc that is not kovs's (remove it, or use uplink.mode direct)");
    }
    // A stale filter of ours (pointing elsewhere) goes first.
    {
        auto cache = filters(rtnl, fromIndex, kIngressParent, from);
        if (rtnl_cls* stale = ourFilter(cache.get()))
            nl::check(rtnl_cls_delete(rtnl.socket(), stale, 0), what + ": remove the stale filter");
    }
    std::unique_ptr<rtnl_cls, ClsDeleter> cls(rtnl_cls_alloc());
    std::unique_ptr<rtnl_act, ActDeleter> act(rtnl_act_alloc());
    if (!cls || !act) throw Error(what + ": out of memory");
    rtnl_tc_set_ifindex(TC_CAST(cls.get()), fromIndex);
    rtnl_tc_set_parent(TC_CAST(cls.get()), kIngressParent);
    nl::check(rtnl_tc_set_kind(TC_CAST(cls.get()), "u32"), what);
    rtnl_cls_set_prio(cls.get(), kIngressRedirectPriority);
    rtnl_cls_set_protocol(cls.get(), ETH_P_ALL);
    nl::check(rtnl_u32_add_key_uint32(cls.get(), 0, 0, 0, 0), what + ": u32 match-all key");
    nl::check(rtnl_u32_set_cls_terminal(cls.get()), what);
    nl::check(rtnl_tc_set_kind(TC_CAST(act.get()), "mirred"), what);
    rtnl_mirred_set_action(act.get(), TCA_EGRESS_REDIR);
    rtnl_mirred_set_policy(act.get(), TC_ACT_STOLEN);
    rtnl_mirred_set_ifindex(act.get(), static_cast<uint32_t>(toIndex));
    nl::check(rtnl_u32_add_action(cls.get(), act.get()), what);  // the filter takes its own reference
    nl::check(rtnl_cls_add(rtnl.socket(), cls.get(), NLM_F_CREATE | NLM_F_EXCL),
              what + ": add u32 filter (needs cls_u32 and act_mirred in the kernel)");
}

void removeIngressRedirect(RtnetlinkClient& rtnl, const std::string& from) {
    const std::string what = "remove the ingress redirect of " + from;
    auto link = rtnl.link(from);
    if (!link || ingressQdiscKind(rtnl, link->index, from) != "clsact") return;
    {
        auto cache = filters(rtnl, link->index, kIngressParent, from);
        if (rtnl_cls* ours = ourFilter(cache.get())) {
            int rc = rtnl_cls_delete(rtnl.socket(), ours, 0);
            if (rc != -NLE_OBJ_NOTFOUND) nl::check(rc, what);
        }
    }
    auto ingress = filters(rtnl, link->index, kIngressParent, from);
    auto egress = filters(rtnl, link->index, kEgressParent, from);
    if (nl_cache_nitems(ingress.get()) > 0 || nl_cache_nitems(egress.get()) > 0) return;  // someone else's filters
    std::unique_ptr<rtnl_qdisc, QdiscDeleter> q(rtnl_qdisc_alloc());
    if (!q) throw Error(what + ": out of memory");
    rtnl_tc_set_ifindex(TC_CAST(q.get()), link->index);
    rtnl_tc_set_parent(TC_CAST(q.get()), TC_H_CLSACT);
    rtnl_tc_set_handle(TC_CAST(q.get()), TC_H_MAKE(TC_H_CLSACT, 0));
    nl::check(rtnl_tc_set_kind(TC_CAST(q.get()), "clsact"), what);
    int rc = rtnl_qdisc_delete(rtnl.socket(), q.get());
    if (rc != -NLE_OBJ_NOTFOUND && rc != -NLE_NOATTR) nl::check(rc, what + ": delete clsact qdisc");
}

}  // namespace kovs
