#pragma once
// Runs a program from an argv vector (never through a shell) and collects
// its output. Used for ovs-ofctl, IPAM plugins and by tests.
#include <spawn.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kovs {

struct ProcessResult {
    int exitCode = -1;  // -1 when killed by a signal
    std::string out;
    std::string err;
    bool ok() const { return exitCode == 0; }
};

struct ProcessOptions {
    std::optional<std::string> stdinData;
    // Replaces the environment when set; otherwise the child inherits ours.
    std::optional<std::map<std::string, std::string>> env;
};

// Throws kovs::Error when the program cannot be started at all.
ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& opts = {});

// Like runProcess, but throws an Error naming argv[0] and its stderr on a non-zero exit.
std::string runChecked(const std::vector<std::string>& argv, const ProcessOptions& opts = {});

// Initialises `attr` so that the child starts with no signal blocked and
// SIGPIPE, SIGTERM and SIGINT at their defaults. The agent blocks SIGTERM and
// SIGINT (it reads them through a signalfd) and ignores SIGPIPE; without this
// a daemon it starts inherits all three and `kill <pid>` does nothing to it.
void initSpawnAttrs(posix_spawnattr_t& attr);

}  // namespace kovs
