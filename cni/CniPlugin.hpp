#pragma once
// One kovs-cni invocation end to end: parse, dispatch to main or chained
// mode, and write the spec's result or error JSON. stdout carries nothing else.
#include <ostream>
#include <string>

#include "cni/CniRequest.hpp"

namespace kovs::cni {

class CniPlugin {
public:
    // Returns the process exit code (0, or 1 with an error object on `out`).
    static int run(const Env& env, const std::string& stdinData, std::ostream& out);
    static Env environment();  // this process's environment as a map
};

}  // namespace kovs::cni
