// libFuzzer target over kovs-cni's input parser: the network config (with a
// prevResult or valid-attachments list) for every command, and the result
// reader used for IPAM results and prevResults. A CniError is the expected
// outcome for bad input; any other exception or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cni/CniError.hpp"
#include "cni/CniRequest.hpp"
#include "cni/CniResult.hpp"

using namespace kovs::cni;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    static const char* commands[] = {"ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"};
    Env env{{"CNI_COMMAND", commands[data[0] % 6]}, {"CNI_CONTAINERID", "fuzz"}, {"CNI_NETNS", "/run/netns/fuzz"},
            {"CNI_IFNAME", "eth0"}, {"CNI_PATH", "/usr/lib/cni"}, {"CNI_ARGS", "IgnoreUnknown=1"}};
    std::string input(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        auto req = CniRequestParser::parse(env, input);
        if (req.conf.prevResult) {
            auto result = CniResult::fromJson(*req.conf.prevResult, "prevResult");
            (void)result.toJson(req.conf.cniVersion).dump();
        }
        (void)req.conf.podMtu();
        (void)req.conf.ipamType();
    } catch (const CniError&) {
    }
    try {
        auto j = nlohmann::json::parse(input, nullptr, false);
        if (!j.is_discarded()) (void)CniResult::fromJson(j, "ipam result").toJson("0.4.0");
    } catch (const CniError&) {
    }
    try {
        (void)CniRequestParser::parseArgs(input);
    } catch (const CniError&) {
    }
    return 0;
}
