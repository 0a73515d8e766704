// fuzz_gateway_tunnel: what doctor reads to size the tunnel in use
// (`ovs-ofctl dump-tlv-map` text) either gives an option space within what a
// Geneve header can carry or is rejected with kovs::Error; and the gateway's
// address plan, fed addresses parsed from the same bytes, never removes an
// IPv6 link-local address, never adopts one, and never removes anything from
// a device it adopted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "base/Error.hpp"
#include "gateway/GatewayAddressPlan.hpp"
#include "gateway/TunnelOverhead.hpp"

namespace {

std::vector<kovs::IpPrefix> prefixes(const std::string& text) {
    std::vector<kovs::IpPrefix> out;
    std::istringstream in(text);
    for (std::string word; in >> word;) {
        try {
            out.push_back(kovs::IpPrefix::parse(word));
        } catch (const kovs::Error&) {
        }
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    try {
        int bytes = kovs::gateway::geneveOptionBytes(text);
        if (bytes < 0) std::abort();
        auto o = kovs::gateway::tunnelOverhead({"t", "geneve"}, bytes);
        if (!o || *o < 50) std::abort();
    } catch (const kovs::Error&) {
    }
    auto half = text.find('|');
    auto observed = prefixes(text.substr(0, half));
    auto adopted = prefixes(half == std::string::npos ? "" : text.substr(half + 1));
    for (bool adopt : {true, false}) {
        auto plan = kovs::gateway::planGatewayAddresses({adopt ? std::vector<kovs::IpPrefix>{} : adopted, adopt}, adopted, observed);
        if (adopt && !plan.remove.empty()) std::abort();
        for (const auto& a : plan.remove) {
            if (kovs::gateway::isIpv6LinkLocal(a)) std::abort();  // the kernel's, never removed
        }
        if (!adopt) continue;  // configured: exactly what the config says, link-local or not
        for (const auto* set : {&plan.add, &plan.guarded}) {
            for (const auto& a : *set) {
                if (kovs::gateway::isIpv6LinkLocal(a)) std::abort();  // never adopted
            }
        }
    }
    return 0;
}
