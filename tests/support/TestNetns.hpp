#pragma once
// Helpers for offload/CNI integration tests: a named netns that is deleted
// again even when the test fails, and `ethtool -k` as an independent witness.
#include <sys/stat.h>

#include <sstream>
#include <string>

#include "base/Error.hpp"
#include "base/Process.hpp"

namespace kovs::test {

class TestNetns {
public:
    explicit TestNetns(std::string name) : name_(std::move(name)) {
        runProcess({"ip", "netns", "del", name_});  // leftovers of a crashed run
        runChecked({"ip", "netns", "add", name_});
        runChecked({"ip", "-n", name_, "link", "set", "lo", "up"});
    }
    ~TestNetns() {
        if (!name_.empty()) runProcess({"ip", "netns", "del", name_});
    }
    TestNetns(const TestNetns&) = delete;
    TestNetns& operator=(const TestNetns&) = delete;

    const std::string& name() const { return name_; }
    std::string path() const { return "/run/netns/" + name_; }
    ino_t inode() const {
        struct stat st{};
        if (::stat(path().c_str(), &st) < 0) throwErrno("stat " + path());
        return st.st_ino;
    }
    // Deletes it now (tests of "the netns is already gone").
    void remove() {
        runChecked({"ip", "netns", "del", name_});
        name_.clear();
    }
    // Runs argv inside the netns.
    ProcessResult exec(std::vector<std::string> argv) const {
        argv.insert(argv.begin(), {"ip", "netns", "exec", name_});
        return runProcess(argv);
    }

private:
    std::string name_;
};

// The value `ethtool -k <ifname>` prints for `feature` ("on", "off"), run in
// `netns` (empty: the current one); child features ("tx-tcp-segmentation") too.
// "[fixed]" suffixes are dropped.
inline std::string ethtoolFeature(const std::string& netns, const std::string& ifname,
                                  const std::string& feature) {
    std::vector<std::string> argv{"ethtool", "-k", ifname};
    if (!netns.empty()) argv.insert(argv.begin(), {"ip", "netns", "exec", netns});
    std::istringstream out(runChecked(argv));
    std::string line;
    while (std::getline(out, line)) {
        line.erase(0, line.find_first_not_of(" \t"));
        if (line.rfind(feature + ": ", 0) == 0) {
            std::istringstream words(line.substr(feature.size() + 2));
            std::string value;
            words >> value;
            return value;
        }
    }
    throw Error("ethtool -k " + ifname + ": no line for " + feature);
}

inline bool linkExists(const std::string& netns, const std::string& ifname) {
    std::vector<std::string> argv{"ip", "link", "show", "dev", ifname};
    if (!netns.empty()) argv.insert(argv.begin() + 1, {"-n", netns});
    return runProcess(argv).ok();
}

}  // namespace kovs::test
