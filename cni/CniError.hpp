#pragma once
// A CNI error as the spec defines it (SPEC.md "Error"): kovs-cni prints it as
// {"cniVersion", "code", "msg", "details"} on stdout and exits non-zero.
#include <nlohmann/json.hpp>

#include <string>

#include "base/Error.hpp"

namespace kovs::cni {

// Codes 1-99 are the spec's; 100 and up are kovs-cni's own.
enum CniCode : int {
    kIncompatibleVersion = 1,
    kUnsupportedField = 2,
    kUnknownContainer = 3,
    kInvalidEnv = 4,
    kIoFailure = 5,
    kDecodeFailure = 6,
    kInvalidConfig = 7,
    kTryAgainLater = 11,
    kPluginNotAvailable = 50,   // STATUS: the plugin cannot add pods now
    kInternal = 100,            // netlink, ethtool, netns or OVSDB failure
    kCheckFailed = 101,         // CHECK found the attachment not as ADD left it
};

class CniError : public Error {
public:
    CniError(int code, const std::string& msg, std::string details = "")
        : Error(msg), code_(code), details_(std::move(details)) {}
    int code() const { return code_; }
    const std::string& details() const { return details_; }

    nlohmann::json toJson(const std::string& cniVersion) const {
        return {{"cniVersion", cniVersion}, {"code", code_}, {"msg", what()}, {"details", details_}};
    }

private:
    int code_;
    std::string details_;
};

}  // namespace kovs::cni
