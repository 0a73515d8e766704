#include "cni/ChainedMode.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <utility>

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

// The namespace `path` names, as (device, inode): a bind mount under
// /run/netns and a /proc/<pid>/ns/net name one namespace exactly when these
// are equal, whatever the strings say.
std::pair<dev_t, ino_t> namespaceId(const std::string& path) {
    auto fd = Netns::open(path);
    struct stat st{};
    if (::fstat(fd.get(), &st) < 0) throwErrno("netns " + path + ": fstat");
    return {st.st_dev, st.st_ino};
}

// kovs-cni enters only the namespace the runtime handed it: a sandbox in
// prevResult (written by the plugin before, or by whoever wrote the config)
// that names another one (the node's, another pod's) is refused before any
// namespace is entered.
void checkSandboxes(const CniRequest& req, const nlohmann::json& prev, const std::string& op) {
    std::pair<dev_t, ino_t> pod;
    try {
        pod = namespaceId(req.netns);
    } catch (const Error& e) {
        throw CniError(kInvalidEnv, op + ": CNI_NETNS: " + e.what());
    }
    forEachSandboxInterface(prev, [&](const std::string& name, const std::string& sandbox) {
        std::pair<dev_t, ino_t> id;
        try {
            id = namespaceId(sandbox);
        } catch (const Error& e) {
            throw CniError(kInvalidConfig, op + ": prevResult interface " + name + ": sandbox: " + e.what());
        }
        if (id != pod)
            throw CniError(kInvalidConfig, op + ": prevResult interface " + name + ": sandbox " + sandbox + " is not CNI_NETNS " +
                                               req.netns + " (another network namespace)");
    });
}

}  // namespace

nlohmann::json ChainedMode::add() {
    const auto& prev = *req_.conf.prevResult;
    checkSandboxes(req_, prev, "chained ADD");
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
    checkSandboxes(req_, *req_.conf.prevResult, "CHECK");
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
