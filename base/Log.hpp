#pragma once
#include <spdlog/spdlog.h>

#include <string>

namespace kovs {

// Logs go to stderr (never stdout: kovs-cni's stdout is the CNI result), or to
// `file` when given. `level` is one of trace, debug, info, warn, error.
void setupLogging(const std::string& level, const std::string& file = "");

}  // namespace kovs
