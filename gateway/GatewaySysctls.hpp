#pragma once
// The gateway guard's sysctl step: two settings of the gateway that the
// Service paths depend on (standalone mode; another CNI's device keeps its
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
#include <set>
#include <string>

#include "gateway/GatewayRepairs.hpp"

namespace kovs::gateway {

class GatewaySysctls {
public:
    // `confDir`: where the kernel shows each link's IPv4 settings.
    explicit GatewaySysctls(std::string name, std::string confDir = "/proc/sys/net/ipv4/conf");

    // A link with no IPv4 settings (yet) is left alone. A setting that cannot
    // be written (a read-only /proc/sys in an unprivileged container) is not
    // worth failing the addresses and routes over: it is reported once.
    void reconcile(GatewayRepairs& r);

private:
    std::string name_;
    std::string confDir_;
    std::set<std::string> warned_;
};

}  // namespace kovs::gateway
