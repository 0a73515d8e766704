#include "egress/NftablesNat.hpp"

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <poll.h>

#include <array>
#include <map>
#include <memory>
#include <vector>

#include "base/Error.hpp"

namespace kovs::egress {
namespace {

constexpr int kAnswerTimeoutMs = 2000;
constexpr uint32_t kSrcNatPriority = 100;  // NF_IP_PRI_NAT_SRC: "priority srcnat"

struct SocketCloser {
    void operator()(mnl_socket* s) const { mnl_socket_close(s); }
};
struct TableFree {
    void operator()(nftnl_table* t) const { nftnl_table_free(t); }
};
struct ChainFree {
    void operator()(nftnl_chain* c) const { nftnl_chain_free(c); }
};
struct RuleFree {
    void operator()(nftnl_rule* r) const { nftnl_rule_free(r); }
};
using Socket = std::unique_ptr<mnl_socket, SocketCloser>;
using Table = std::unique_ptr<nftnl_table, TableFree>;
using Chain = std::unique_ptr<nftnl_chain, ChainFree>;
using Rule = std::unique_ptr<nftnl_rule, RuleFree>;

Socket openSocket() {
    Socket s(mnl_socket_open(NETLINK_NETFILTER));
    if (!s) throwErrno("nftables: netlink socket");
    if (mnl_socket_bind(s.get(), 0, MNL_SOCKET_AUTOPID) < 0) throwErrno("nftables: bind netlink socket");
    return s;
}

// False when nothing came within `timeoutMs`.
bool readable(mnl_socket* s, const std::string& what, int timeoutMs) {
    pollfd p{mnl_socket_get_fd(s), POLLIN, 0};
    int rc;
    while ((rc = ::poll(&p, 1, timeoutMs)) < 0 && errno == EINTR) {
    }
    if (rc < 0) throwErrno("nftables: " + what + ": poll");
    return rc > 0;
}

void waitReadable(mnl_socket* s, const std::string& what) {
    if (!readable(s, what, kAnswerTimeoutMs))
        throw Error("nftables: " + what + ": no answer from the kernel within " + std::to_string(kAnswerTimeoutMs) + " ms");
}

uint32_t nfproto(int family) { return family == AF_INET6 ? NFPROTO_IPV6 : NFPROTO_IPV4; }

Rule newRule(int family) {
    Rule r(nftnl_rule_alloc());
    if (!r) throw Error("nftables: out of memory");
    nftnl_rule_set_u32(r.get(), NFTNL_RULE_FAMILY, nfproto(family));
    nftnl_rule_set_str(r.get(), NFTNL_RULE_TABLE, NftablesNat::kTable);
    nftnl_rule_set_str(r.get(), NFTNL_RULE_CHAIN, NftablesNat::kChain);
    return r;
}

void addExpr(nftnl_rule* r, nftnl_expr* e) {
    if (!e) throw Error("nftables: out of memory");
    nftnl_rule_add_expr(r, e);  // the rule owns it from here
}

// Where the source and destination addresses are in the network header.
struct AddressField {
    uint32_t offset;
    uint32_t len;
};
AddressField sourceField(int family) { return family == AF_INET6 ? AddressField{8, 16} : AddressField{12, 4}; }
AddressField destinationField(int family) { return family == AF_INET6 ? AddressField{24, 16} : AddressField{16, 4}; }

// "ip[6] saddr|daddr <prefix>": load the address, mask it, compare.
void matchAddress(nftnl_rule* r, AddressField field, const IpPrefix& p) {
    if (p.prefixLen == 0) return;
    auto* load = nftnl_expr_alloc("payload");
    addExpr(r, load);
    nftnl_expr_set_u32(load, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
    nftnl_expr_set_u32(load, NFTNL_EXPR_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
    nftnl_expr_set_u32(load, NFTNL_EXPR_PAYLOAD_OFFSET, field.offset);
    nftnl_expr_set_u32(load, NFTNL_EXPR_PAYLOAD_LEN, field.len);
    if (p.prefixLen < p.maxPrefixLen()) {
        std::array<uint8_t, 16> mask{}, zero{};
        for (int i = 0; i < p.prefixLen; ++i) mask[i / 8] |= static_cast<uint8_t>(0x80 >> (i % 8));
        auto* bits = nftnl_expr_alloc("bitwise");
        addExpr(r, bits);
        nftnl_expr_set_u32(bits, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
        nftnl_expr_set_u32(bits, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
        nftnl_expr_set_u32(bits, NFTNL_EXPR_BITWISE_LEN, field.len);
        nftnl_expr_set(bits, NFTNL_EXPR_BITWISE_MASK, mask.data(), field.len);
        nftnl_expr_set(bits, NFTNL_EXPR_BITWISE_XOR, zero.data(), field.len);
    }
    auto* cmp = nftnl_expr_alloc("cmp");
    addExpr(r, cmp);
    nftnl_expr_set_u32(cmp, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
    nftnl_expr_set_u32(cmp, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
    auto net = p.network();
    nftnl_expr_set(cmp, NFTNL_EXPR_CMP_DATA, net.bytes.data(), field.len);
}

// One netlink batch (one nftables transaction). The kernel reports every
// message it refuses (and then aborts the whole batch); only the last message
// asks for an ack, which then means the batch went through. (An ack per
// message overflows the socket's receive buffer on a large batch: ENOBUFS
// with 100 peers.)
class Batch {
public:
    Batch(int family, size_t messages)
        : family_(family), buf_((messages + 4) * 1024), batch_(mnl_nlmsg_batch_start(buf_.data(), buf_.size())) {
        nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch_)), seq_++);
        mnl_nlmsg_batch_next(batch_);
    }
    ~Batch() { mnl_nlmsg_batch_stop(batch_); }
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    template <typename Build>
    void add(uint16_t type, uint16_t flags, const std::string& what, Build build) {
        auto* nlh = nftnl_nlmsg_build_hdr(static_cast<char*>(mnl_nlmsg_batch_current(batch_)), type, nfproto(family_),
                                          flags, seq_);
        build(nlh);
        last_ = nlh;
        what_[seq_++] = what;
        if (!mnl_nlmsg_batch_next(batch_)) throw Error("nftables: batch buffer too small at: " + what);
    }

    // Sends the batch; throws naming the first message the kernel refused,
    // unless its error is `tolerated` (e.g. ENOENT when deleting what is gone).
    void commit(int tolerated = 0) {
        if (!last_) return;
        last_->nlmsg_flags |= NLM_F_ACK;
        const uint32_t lastSeq = last_->nlmsg_seq;
        nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch_)), seq_++);
        mnl_nlmsg_batch_next(batch_);
        auto sock = openSocket();
        if (mnl_socket_sendto(sock.get(), mnl_nlmsg_batch_head(batch_), mnl_nlmsg_batch_size(batch_)) < 0)
            throwErrno("nftables: send batch");
        std::string refused;
        bool done = false;
        std::vector<char> in(MNL_SOCKET_BUFFER_SIZE);
        while (!done) {
            // After a refusal the kernel may or may not answer the rest.
            if (!refused.empty() && !readable(sock.get(), "batch", 100)) break;
            waitReadable(sock.get(), what_.begin()->second);
            auto n = mnl_socket_recvfrom(sock.get(), in.data(), in.size());
            if (n < 0) throwErrno("nftables: read answer");
            int left = static_cast<int>(n);
            for (auto* nlh = reinterpret_cast<nlmsghdr*>(in.data()); mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
                if (nlh->nlmsg_type != NLMSG_ERROR) continue;
                auto* err = static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
                if (err->error != 0 && -err->error != tolerated && refused.empty()) {
                    auto it = what_.find(nlh->nlmsg_seq);
                    refused = (it == what_.end() ? std::string("batch") : it->second) + ": " + std::strerror(-err->error);
                }
                // A refusal aborts the whole batch; the last message's answer comes either way.
                if (nlh->nlmsg_seq == lastSeq) done = true;
            }
        }
        if (!refused.empty()) throw Error("nftables: " + refused);
    }

private:
    int family_;
    std::vector<char> buf_;
    mnl_nlmsg_batch* batch_;
    uint32_t seq_ = 1;
    nlmsghdr* last_ = nullptr;
    std::map<uint32_t, std::string> what_;
};

struct Dump {
    std::string text;
};

int exprText(nftnl_expr* e, void* data) {
    char buf[512];
    nftnl_expr_snprintf(buf, sizeof buf, e, NFTNL_OUTPUT_DEFAULT, 0);
    auto& line = *static_cast<std::string*>(data);
    line += std::string(line.empty() ? "" : " ") + "[ " + nftnl_expr_get_str(e, NFTNL_EXPR_NAME) + " " + buf + " ]";
    return MNL_CB_OK;
}

int ruleText(const nlmsghdr* nlh, void* data) {
    Rule r(nftnl_rule_alloc());
    if (!r || nftnl_rule_nlmsg_parse(nlh, r.get()) < 0) return MNL_CB_ERROR;
    std::string line;
    nftnl_expr_foreach(r.get(), exprText, &line);
    static_cast<Dump*>(data)->text += line + "\n";
    return MNL_CB_OK;
}

}  // namespace

void NftablesNat::replace(const EgressRules& rules) const {
    const auto name = table(), family = std::string(family_ == AF_INET6 ? "ip6" : "ip");
    Batch b(family_, rules.keep.size() + rules.masquerade.size() + 4);
    Table t(nftnl_table_alloc());
    if (!t) throw Error("nftables: out of memory");
    nftnl_table_set_u32(t.get(), NFTNL_TABLE_FAMILY, nfproto(family_));
    nftnl_table_set_str(t.get(), NFTNL_TABLE_NAME, kTable);
    b.add(NFT_MSG_NEWTABLE, NLM_F_CREATE, "add table " + name, [&](nlmsghdr* nlh) { nftnl_table_nlmsg_build_payload(nlh, t.get()); });

    Chain c(nftnl_chain_alloc());
    if (!c) throw Error("nftables: out of memory");
    nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_FAMILY, nfproto(family_));
    nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TABLE, kTable);
    nftnl_chain_set_str(c.get(), NFTNL_CHAIN_NAME, kChain);
    nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_HOOKNUM, NF_INET_POST_ROUTING);
    nftnl_chain_set_s32(c.get(), NFTNL_CHAIN_PRIO, kSrcNatPriority);
    nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TYPE, "nat");
    nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_POLICY, NF_ACCEPT);
    b.add(NFT_MSG_NEWCHAIN, NLM_F_CREATE, "add chain " + name + " postrouting",
          [&](nlmsghdr* nlh) { nftnl_chain_nlmsg_build_payload(nlh, c.get()); });

    auto flush = newRule(family_);  // DELRULE without a handle: every rule of the chain
    b.add(NFT_MSG_DELRULE, 0, "flush chain " + name + " postrouting",
          [&](nlmsghdr* nlh) { nftnl_rule_nlmsg_build_payload(nlh, flush.get()); });

    std::vector<Rule> keep;  // alive until the batch is built
    for (const auto& p : rules.keep) {
        auto r = newRule(family_);
        matchAddress(r.get(), destinationField(family_), p);
        auto* verdict = nftnl_expr_alloc("immediate");
        addExpr(r.get(), verdict);
        nftnl_expr_set_u32(verdict, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
        nftnl_expr_set_u32(verdict, NFTNL_EXPR_IMM_VERDICT, static_cast<uint32_t>(NFT_RETURN));
        b.add(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, "add rule " + family + " daddr " + p.str() + " return",
              [&](nlmsghdr* nlh) { nftnl_rule_nlmsg_build_payload(nlh, r.get()); });
        keep.push_back(std::move(r));
    }
    for (const auto& p : rules.masquerade) {
        auto r = newRule(family_);
        matchAddress(r.get(), sourceField(family_), p);
        addExpr(r.get(), nftnl_expr_alloc("masq"));
        b.add(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, "add rule " + family + " saddr " + p.str() + " masquerade",
              [&](nlmsghdr* nlh) { nftnl_rule_nlmsg_build_payload(nlh, r.get()); });
        keep.push_back(std::move(r));
    }
    b.commit();
}

std::string NftablesNat::readBack() const {
    const auto what = "list chain " + table() + " postrouting";
    auto sock = openSocket();
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    uint32_t seq = 1;
    auto* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETRULE, nfproto(family_), NLM_F_DUMP, seq);
    auto filter = newRule(family_);
    nftnl_rule_nlmsg_build_payload(nlh, filter.get());
    if (mnl_socket_sendto(sock.get(), nlh, nlh->nlmsg_len) < 0) throwErrno("nftables: " + what);
    auto portid = mnl_socket_get_portid(sock.get());
    Dump dump;
    while (true) {
        waitReadable(sock.get(), what);
        auto n = mnl_socket_recvfrom(sock.get(), buf.data(), buf.size());
        if (n < 0) throwErrno("nftables: " + what);
        int rc = mnl_cb_run(buf.data(), static_cast<size_t>(n), seq, portid, ruleText, &dump);
        if (rc == MNL_CB_STOP) break;
        if (rc < 0) {
            if (errno == ENOENT) return "";
            throwErrno("nftables: " + what);
        }
    }
    return dump.text;
}

void NftablesNat::remove() const {
    Batch b(family_, 1);
    Table t(nftnl_table_alloc());
    if (!t) throw Error("nftables: out of memory");
    nftnl_table_set_u32(t.get(), NFTNL_TABLE_FAMILY, nfproto(family_));
    nftnl_table_set_str(t.get(), NFTNL_TABLE_NAME, kTable);
    b.add(NFT_MSG_DELTABLE, 0, "delete table " + table(), [&](nlmsghdr* nlh) { nftnl_table_nlmsg_build_payload(nlh, t.get()); });
    b.commit(ENOENT);
}

}  // namespace kovs::egress
