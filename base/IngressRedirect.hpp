#pragma once
// Every frame that arrives on one link leaves through another, untouched:
// a clsact qdisc on `from` with a match-all u32 filter whose mirred action
// redirects to `to`'s egress (tc's `filter add dev FROM ingress u32 match u32
// 0 0 action mirred egress redirect dev TO`). The frames never reach `from`'s
// IP stack, a bridge or netfilter; on `to` they are transmitted as if sent
// there, so a checksum left to offload is completed when `to` has TX checksum
// offload off. kovs's filter is the one at priority kIngressRedirectPriority;
// other filters on the link are left alone.
#include <optional>
#include <string>

#include "base/RtnetlinkClient.hpp"

namespace kovs {

constexpr uint16_t kIngressRedirectPriority = 1;

// The ifindex `from`'s ingress is redirected to, if kovs's filter is there.
std::optional<int> ingressRedirectTarget(RtnetlinkClient& rtnl, const std::string& from);
// Throws kovs::Error naming both links (a foreign `ingress` qdisc on `from`,
// no cls_u32/act_mirred in the kernel, ...).
void addIngressRedirect(RtnetlinkClient& rtnl, const std::string& from, const std::string& to);
// Removes kovs's filter, and the clsact qdisc once no filter is left on it.
void removeIngressRedirect(RtnetlinkClient& rtnl, const std::string& from);

}  // namespace kovs
