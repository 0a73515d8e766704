#include "cni/ChainedMode.hpp"

#include <spdlog/spdlog.h>

#include "base/Ethtool.hpp"
#include "base/Netns.hpp"
#include "cni/CniError.hpp"

namespace kovs::cni {
namespace {

template <typename Fn>
void forEachSandboxInterface(const nlohmann::json& prev, Fn fn) {
    if (!prev.contains("interfaces")) return;
    for (const auto& itf : prev.at("interfaces")) {
        auto sandbox = itf.value("sandbox", std::string());
        if (!sandbox.empty()) fn(itf.at("name").get<std::string>(), sandbox);
    }
}

}  // namespace

nlohmann::json ChainedMode::add() {
    const auto& prev = *req_.conf.prevResult;
    forEachSandboxInterface(prev, [&](const std::string& name, const std::string& sandbox) {
        try {
            Netns in(sandbox);
            Ethtool et;
            bool changed = et.ensureTxChecksumOff(name);
            spdlog::info("{}: {} in {}: tx-checksumming {}", req_.containerId, name, sandbox,
                         changed ? "turned off" : "already off");
        } catch (const Error& e) {
            throw CniError(kInternal, std::string("chained ADD: ") + e.what());
        }
    });
    return prev;
}

void ChainedMode::check() {
    if (!req_.conf.prevResult) throw CniError(kInvalidConfig, "CHECK needs prevResult");
    forEachSandboxInterface(*req_.conf.prevResult, [&](const std::string& name, const std::string& sandbox) {
        bool on = false;
        try {
            Netns in(sandbox);
            on = Ethtool().txChecksum(name);
        } catch (const Error& e) {
            throw CniError(kCheckFailed, std::string("CHECK: ") + e.what());
        }
        if (on) throw CniError(kCheckFailed, "CHECK: " + name + " in " + sandbox + ": tx-checksumming is on");
    });
}

}  // namespace kovs::cni
