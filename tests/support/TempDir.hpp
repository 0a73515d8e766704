#pragma once
// A temporary directory under $TMPDIR (or /tmp), removed with everything in
// it when the test ends, also when it failed.
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "base/Error.hpp"

namespace kovs::test {

class TempDir {
public:
    explicit TempDir(const std::string& prefix = "kovs-test") {
        std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
        if (!::mkdtemp(tmpl.data())) throwErrno("mkdtemp " + tmpl);
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return std::filesystem::path(path_) / name; }

private:
    std::string path_;
};

}  // namespace kovs::test
