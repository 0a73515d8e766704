#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "peers/FilePeerSource.hpp"
#include "tests/support/TempDir.hpp"

using namespace kovs::peers;
using namespace std::chrono_literals;

namespace {

using kovs::test::TempDir;

void writeAtomically(const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path);
}

std::string peerYaml(const std::string& name, const std::string& ip) {
    return "peers:\n  - name: " + name + "\n    nodeIP: " + ip + "\n    podCIDRs: [10.244.9.0/24]\n";
}

}  // namespace

TEST(FilePeerSource, ReloadsOnChangeAndKeepsLastGoodSet) {
    TempDir dir;
    std::string file = dir.path() + "/peers.yaml";
    std::ofstream(file) << peerYaml("a", "10.0.0.1");

    kovs::EventLoop loop;
    FilePeerSource source(loop, file);
    std::vector<PeerSet> seen;
    source.start([&](const PeerSet& s, const std::vector<RejectedPeer>&) { seen.push_back(s); });
    ASSERT_EQ(seen.size(), 1u) << "the initial set is reported by start()";
    EXPECT_EQ(seen[0].at("a").tunnelAddress(), "10.0.0.1");

    // Atomic replace (rename over the file), as editors and ConfigMaps do.
    writeAtomically(file, peerYaml("b", "10.0.0.2"));
    ASSERT_TRUE(loop.runUntil([&] { return seen.size() >= 2; }, 5s)) << "no reload after rename";
    EXPECT_EQ(seen[1].count("b"), 1u);
    EXPECT_EQ(seen[1].count("a"), 0u);

    // Invalid content, then a deleted file: both keep the last good set (no
    // report at all); the next valid write is the next report.
    writeAtomically(file, "peers: [ {name: c, nodeIP: 10.0.0.");
    ASSERT_TRUE(loop.runUntil([&] { return source.failedReloads() >= 1; }, 5s)) << "invalid file not noticed";
    std::filesystem::remove(file);
    ASSERT_TRUE(loop.runUntil([&] { return source.failedReloads() >= 2; }, 5s)) << "deleted file not noticed";
    EXPECT_EQ(seen.size(), 2u);
    {
        std::ofstream out(file);  // in-place write (no rename), IN_CLOSE_WRITE
        out << peerYaml("c", "fd00::3");
    }
    ASSERT_TRUE(loop.runUntil([&] { return seen.size() >= 3; }, 5s)) << "no reload after in-place write";
    EXPECT_EQ(seen.size(), 3u) << "invalid/missing file must not produce a report";
    EXPECT_EQ(seen[2].at("c").tunnelAddress(), "fd00::3");

    // Touching the file without changing the set reports nothing; a later
    // change does, and only once.
    writeAtomically(file, peerYaml("c", "fd00::3"));
    writeAtomically(file, peerYaml("d", "10.0.0.4"));
    ASSERT_TRUE(loop.runUntil([&] { return seen.size() >= 4; }, 5s));
    EXPECT_EQ(seen.size(), 4u);
    EXPECT_EQ(seen[3].count("d"), 1u);

    source.stop();
    writeAtomically(file, peerYaml("e", "10.0.0.5"));
    loop.runUntil([] { return false; }, 50ms);  // a deliberate quiet period: nothing may arrive after stop()
    EXPECT_EQ(seen.size(), 4u);
}

TEST(FilePeerSource, MissingDirectoryIsAnError) {
    kovs::EventLoop loop;
    FilePeerSource source(loop, "/nonexistent-kovs-dir/peers.yaml");
    EXPECT_THROW(source.start([](const PeerSet&, const std::vector<RejectedPeer>&) {}), kovs::Error);
}
