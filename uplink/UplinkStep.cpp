#include "uplink/UplinkStep.hpp"

#include <type_traits>

namespace kovs::uplink {

std::string describe(const UplinkAction& action) {
    return std::visit(
        [](const auto& a) -> std::string {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, step::CreateVeth>) {
                return "create veth " + a.name + "/" + a.peer + " (MTU " + std::to_string(a.mtu) + ")";
            } else if constexpr (std::is_same_v<T, step::DeleteLink>) {
                return "delete " + a.name;
            } else if constexpr (std::is_same_v<T, step::SetMtu>) {
                return "MTU " + std::to_string(a.mtu) + " on " + a.link;
            } else if constexpr (std::is_same_v<T, step::SetMac>) {
                return "MAC " + a.mac + " on " + a.link;
            } else if constexpr (std::is_same_v<T, step::SetUp>) {
                return "bring " + a.link + (a.up ? " up" : " down");
            } else if constexpr (std::is_same_v<T, step::Isolate>) {
                return "no ARP, no IPv6 link-local on " + a.link;
            } else if constexpr (std::is_same_v<T, step::TxChecksumOff>) {
                return "TX checksum off on " + a.link;
            } else if constexpr (std::is_same_v<T, step::SetNomaster>) {
                return "take " + a.link + " out of its bridge";
            } else if constexpr (std::is_same_v<T, step::AddRedirect>) {
                return "redirect " + a.from + " ingress to " + a.to;
            } else if constexpr (std::is_same_v<T, step::RemoveRedirect>) {
                return "remove the redirect of " + a.from;
            } else if constexpr (std::is_same_v<T, step::AddAddress>) {
                return "add address " + a.address.str() + " to " + a.link;
            } else if constexpr (std::is_same_v<T, step::DeleteAddress>) {
                return "remove address " + a.address.str() + " from " + a.link;
            } else if constexpr (std::is_same_v<T, step::AddRoute>) {
                return "add route " + a.route.str() + " dev " + a.link;
            } else if constexpr (std::is_same_v<T, step::DeleteRoute>) {
                return "remove route " + a.route.str() + " dev " + a.link;
            } else if constexpr (std::is_same_v<T, step::WriteRecord>) {
                return "record " + a.record.device + "'s addressing";
            } else {
                static_assert(std::is_same_v<T, step::RemoveRecord>);
                return "forget the record of the addressing";
            }
        },
        action);
}

std::vector<std::string> UplinkPlan::describeSteps() const {
    std::vector<std::string> out;
    for (const auto& s : steps) out.push_back(describe(s.action));
    return out;
}

}  // namespace kovs::uplink
