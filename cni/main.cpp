// kovs-cni: the CNI plugin binary (spec 1.1.0). stdin: network config;
// environment: CNI_*; stdout: result or error JSON; logs: stderr or logFile.
#include <iostream>
#include <iterator>
#include <string>

#include "base/Log.hpp"
#include "cni/CniPlugin.hpp"
#include "cni/CniRequest.hpp"

int main() {
    // spdlog's default logger writes to stdout, which belongs to the CNI result.
    kovs::setupLogging("info");
    std::string input;
    char buf[65536];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
        input.append(buf, static_cast<size_t>(std::cin.gcount()));
        // Reading more than the parser accepts only wastes memory; it rejects it anyway.
        if (input.size() > kovs::cni::CniRequestParser::kMaxConfigBytes) break;
    }
    int rc = kovs::cni::CniPlugin::run(kovs::cni::CniPlugin::environment(), input, std::cout);
    std::cout.flush();
    return rc;
}
