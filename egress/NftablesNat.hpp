#pragma once
// kovs's own nftables table for the egress masquerade, `table ip kovs` (and
// `table ip6 kovs` for IPv6 pods) with a nat chain on postrouting at srcnat
// priority, spoken to the kernel over
// netlink with libnftnl (no nft binary, no rule text to parse): kube-proxy's
// tables and chains (iptables or nftables mode) are never touched, and a
// kube-proxy restart or rule flush leaves this table alone.
//
//   chain postrouting { type nat hook postrouting priority srcnat; policy accept;
//       ip daddr <keep> return          (one rule per kept destination)
//       ip saddr <pod CIDR> masquerade  (one rule per source) }
//   (ip6 daddr / ip6 saddr in table ip6 kovs)
//
// replace() swaps the whole chain in one netlink batch, which the kernel
// applies as one transaction: the rules are never half there.
#include <sys/socket.h>

#include <string>

#include "egress/EgressPlanner.hpp"

namespace kovs::egress {

class NftablesNat {
public:
    static constexpr const char* kTable = "kovs";
    static constexpr const char* kChain = "postrouting";

    // AF_INET: table ip kovs; AF_INET6: table ip6 kovs.
    explicit NftablesNat(int family = AF_INET) : family_(family) {}
    // "ip kovs" / "ip6 kovs", as nft names the table.
    std::string table() const { return std::string(family_ == AF_INET6 ? "ip6 " : "ip ") + kTable; }

    // Throws kovs::Error naming the operation and the kernel's answer.
    void replace(const EgressRules& rules) const;
    // The chain's rules as text (their expressions, no handles), one rule per
    // line; "" when the table or the chain does not exist.
    std::string readBack() const;
    // Deletes the table (--cleanup); nothing when it does not exist.
    void remove() const;

private:
    int family_;
};

}  // namespace kovs::egress
