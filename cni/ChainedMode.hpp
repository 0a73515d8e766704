#pragma once
// kovs-cni after another plugin: TX checksum off on every interface of the
// prevResult that lives in a sandbox; the prevResult is the result, unchanged.
#include <nlohmann/json.hpp>

#include "cni/CniRequest.hpp"

namespace kovs::cni {

class ChainedMode {
public:
    explicit ChainedMode(const CniRequest& req) : req_(req) {}

    nlohmann::json add();
    void check();

private:
    const CniRequest& req_;
};

}  // namespace kovs::cni
