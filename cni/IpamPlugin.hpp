#pragma once
// The IPAM plugin named in the config's ipam.type, found on CNI_PATH and run
// as the spec says: same stdin, same environment, CNI_COMMAND set per call.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cni/CniRequest.hpp"
#include "cni/CniResult.hpp"

namespace kovs::cni {

class IpamPlugin {
public:
    // Throws CniError(kInvalidConfig) when no executable of that name is on the path.
    IpamPlugin(const std::string& type, const std::vector<std::string>& cniPath);

    const std::string& binary() const { return binary_; }

    CniResult add(const Env& env, const std::string& stdinData) const;
    // DEL/CHECK/GC: success is silence; an error is rethrown as the plugin's CniError.
    void del(const Env& env, const std::string& stdinData) const;
    void check(const Env& env, const std::string& stdinData) const;

private:
    std::string run(const std::string& command, Env env, const std::string& stdinData) const;

    std::string type_;
    std::string binary_;
};

}  // namespace kovs::cni
