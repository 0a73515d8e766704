// DirectoryWatch: a file replaced by rename, created late or removed is
// reported; other files of the directory are not.
#include "base/DirectoryWatch.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "tests/support/TempDir.hpp"

using namespace std::chrono_literals;

TEST(DirectoryWatch, ReportsChangesToItsFileOnly) {
    kovs::test::TempDir d("kovs-watch");
    kovs::EventLoop loop;
    int changes = 0;
    kovs::DirectoryWatch w(loop, d / "vswitchd.pid", [&] { ++changes; });
    auto settle = [&] { loop.runUntil([] { return false; }, 50ms); };  // a quiet period: nothing else may arrive

    std::ofstream(d / "other") << "x";
    settle();
    EXPECT_EQ(changes, 0);

    std::ofstream(d / "vswitchd.pid") << "1\n";  // created late
    ASSERT_TRUE(loop.runUntil([&] { return changes > 0; }, 10s));
    settle();
    int afterCreate = changes;

    std::ofstream(d / "vswitchd.pid.tmp") << "2\n";
    std::filesystem::rename(d / "vswitchd.pid.tmp", d / "vswitchd.pid");  // replaced atomically
    ASSERT_TRUE(loop.runUntil([&] { return changes > afterCreate; }, 10s));
    settle();
    int afterRename = changes;

    std::filesystem::remove(d / "vswitchd.pid");
    ASSERT_TRUE(loop.runUntil([&] { return changes > afterRename; }, 10s));
}

TEST(DirectoryWatch, AMissingDirectoryIsAClearError) {
    kovs::EventLoop loop;
    try {
        kovs::DirectoryWatch w(loop, "/nonexistent-kovs-dir/x.pid", [] {});
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "inotify_add_watch /nonexistent-kovs-dir (to watch x.pid): No such file or directory");
    }
}
