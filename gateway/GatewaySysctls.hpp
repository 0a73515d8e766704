#pragma once
// The gateway guard's sysctl step: settings of the gateway that the pod
// network depends on (standalone mode; another CNI's device keeps its
// sysctls):
// - rp_filter not strict: the reply of a hostNetwork Service backend on
//   another node comes back in through gw0 (tunnel, table 40) while the
//   request left through the uplink, so strict reverse-path filtering (1)
//   would drop it; loose (2) keeps the protection against addresses with no
//   route at all. The kernel applies max(all, gw0), so a gw0 at 0 is kept
//   only while all is not 1; otherwise gw0 gets 2.
// - send_redirects 0: the kernel forwards pod -> Service -> pod on the same
//   node in and out of gw0 and would send the client an ICMP redirect to the
//   backend, around the kernel that DNATs for it. The kernel sends one when
//   all OR gw0 say so, so gw0's 0 holds only where all is 0 too; all is the
//   node's and kovs leaves it alone (the Services e2e rows pass with all at
//   the kernel's default, 1).
// - IPv6 forwarding 1 and accept_ra 0: gw0 is the pods' IPv6 router, and
//   takes no address or route from an advertisement (the node's forwarding
//   between links is net.ipv6.conf.all.forwarding, the node's: kind sets it).
#include <set>
#include <string>

#include "gateway/GatewayRepairs.hpp"

namespace kovs::gateway {

class GatewaySysctls {
public:
    // `netDir`: where the kernel shows net/ipv4/conf/<link> and net/ipv6/conf/<link>.
    explicit GatewaySysctls(std::string name, std::string netDir = "/proc/sys/net");

    // A family with no settings on the link (yet, or IPv6 disabled) is left alone. A setting that cannot
    // be written (a read-only /proc/sys in an unprivileged container) is not
    // worth failing the addresses and routes over: it is reported once.
    void reconcile(GatewayRepairs& r);

private:
    std::string name_;
    std::string netDir_;
    std::set<std::string> warned_;
};

}  // namespace kovs::gateway
