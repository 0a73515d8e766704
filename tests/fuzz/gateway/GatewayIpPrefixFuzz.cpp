// fuzz_gateway_prefix: gateway addresses, pod CIDRs and extra routes come
// from the agent's config file; every input either parses into a prefix that
// round-trips or is rejected with kovs::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/IpPrefix.hpp"
#include "base/Error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    try {
        auto p = kovs::IpPrefix::parse(text);
        if (p.prefixLen < 0 || p.prefixLen > p.maxPrefixLen()) std::abort();
        auto again = kovs::IpPrefix::parse(p.str());
        if (!(again == p)) std::abort();
        if (!(p.network().network() == p.network())) std::abort();
    } catch (const kovs::Error&) {
    }
    try {
        auto gw = kovs::gatewayAddressFor(text);
        if (!(gw.network() == kovs::IpPrefix::parse(text).network())) std::abort();
    } catch (const kovs::Error&) {
    }
    return 0;
}
