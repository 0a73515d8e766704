// Gateway guard pieces that need no root: option validation and the
// networkd drop-in files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gateway/GatewayGuard.hpp"
#include "gateway/NetworkdDropinGuard.hpp"
#include "gateway/NetworkdDropins.hpp"
#include "base/RepairLog.hpp"
#include "base/Error.hpp"
#include "tests/support/TempDir.hpp"

using namespace kovs;


TEST(GatewayGuardOptions, InvalidOptionsAreRejectedBeforeAnythingHappens) {
    EventLoop loop;
    auto base = [] {
        gateway::GatewayGuardOptions o;
        o.addresses = {gatewayAddressFor("10.244.1.0/24")};
        return o;
    };
    auto expectError = [&](gateway::GatewayGuardOptions o, const std::string& needle) {
        try {
            gateway::GatewayGuard g(loop, o);
            ADD_FAILURE() << "accepted options, expected error with " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    auto o = base(); o.name = ""; expectError(o, "not a valid interface name (empty)");
    o = base(); o.name = "a-name-that-is-too-long"; expectError(o, "not a valid interface name (longer than 15 characters)");
    o = base(); o.mtu = 10; expectError(o, "MTU 10");
    o = base(); o.addresses.clear(); expectError(o, "no gateway address");
    o = base(); o.routes = {{IpPrefix::parse("10.96.0.0/12"), IpPrefix::parse("fd00::1")}}; expectError(o, "mixes address families");
    o = base(); o.resyncInterval = std::chrono::milliseconds(0); expectError(o, "resync interval");
    // Disabled: valid options construct without touching netlink.
    o = base(); o.enabled = false;
    gateway::GatewayGuard off(loop, o);
    EXPECT_EQ(off.stats().reconciles, 0u);
}

class DropinsTest : public ::testing::Test {
protected:
    static std::string read(const std::string& path) {
        std::ifstream in(path);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    kovs::test::TempDir tmp_{"kovs-dropins"};
    std::string dir_ = tmp_.path();
};

TEST_F(DropinsTest, WritesUnmanagedFilesAndRemovesThem) {
    gateway::NetworkdDropins d(dir_ + "/network");
    d.install({"gw0", "br-phy", "kovs-shim"});
    auto text = read(dir_ + "/network/10-kovs-gw0.network");
    EXPECT_NE(text.find("[Match]\nName=gw0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("[Link]\nUnmanaged=yes\n"), std::string::npos) << text;
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/network/10-kovs-br-phy.network"));
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/network/10-kovs-kovs-shim.network"));
    d.install({"gw0"});  // idempotent
    d.remove({"gw0", "br-phy", "kovs-shim"});
    d.remove({"gw0"});  // already gone: fine
    EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/network"));
}

// A failed install (disk full, say) takes back what it created, but not the
// drop-ins an earlier run wrote: those keep networkd off gw0 right now.
TEST_F(DropinsTest, AFailedInstallKeepsTheDropinsThatWereThere) {
    gateway::NetworkdDropins d(dir_);
    d.install({"gw0"});
    std::filesystem::create_directory(dir_ + "/10-kovs-kovs-shim.network");  // the rename onto it fails
    EXPECT_THROW(d.install({"gw0", "br-phy", "kovs-shim"}), Error);
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/10-kovs-gw0.network")) << "an earlier run's drop-in was removed";
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/10-kovs-br-phy.network")) << "this call's drop-in was left";
}

TEST_F(DropinsTest, BadNamesWriteNothing) {
    gateway::NetworkdDropins d(dir_);
    for (const char* bad : {"gw*", "", "../x", "a b", "waytoolonginterfacename", "."}) {
        EXPECT_THROW(d.install({"gw0", bad}), Error) << bad;
        EXPECT_TRUE(std::filesystem::is_empty(dir_)) << bad;
    }
}

// The drop-ins job's plan: what is missing or was changed; nothing once written.
TEST_F(DropinsTest, MissingNamesTheDropinsToWriteAgain) {
    gateway::NetworkdDropins d(dir_);
    auto stems = [&] {
        std::vector<std::string> out;
        for (const auto& l : d.missing({"gw0", "br-phy"})) out.push_back(l.stem);
        return out;
    };
    EXPECT_EQ(stems(), (std::vector<std::string>{"gw0", "br-phy"}));
    d.install({"gw0", "br-phy"});
    EXPECT_TRUE(stems().empty());
    std::ofstream(d.pathFor("br-phy")) << "[Match]\nName=br-phy\n";  // someone's edit: no Unmanaged=yes
    std::filesystem::remove(d.pathFor("gw0"));
    EXPECT_EQ(stems(), (std::vector<std::string>{"gw0", "br-phy"}));
}

// One drop-in for a family of interfaces (the pods' host ends): a glob in
// Name=, checked against an example it must cover.
TEST_F(DropinsTest, AGlobDropinCoversAFamilyOfInterfaces) {
    gateway::NetworkdDropins d(dir_);
    gateway::NetworkdLink pods{"pods", "kovs[0-9a-f]*", "kovs0123456789a"};
    d.install({pods});
    auto text = read(dir_ + "/10-kovs-pods.network");
    EXPECT_NE(text.find("[Match]\nName=kovs[0-9a-f]*\n"), std::string::npos) << text;
    EXPECT_TRUE(d.missing({pods}).empty());
    std::ofstream(dir_ + "/05-all-veths.network") << "[Match]\nName=kovs*\n";
    EXPECT_EQ(d.shadowing(pods), (std::vector<std::string>{dir_ + "/05-all-veths.network"}));
    EXPECT_THROW(d.install({{"pods", "kovs[0-9a-f]*", "gw0"}}), Error) << "a pattern must cover its example";
    EXPECT_THROW(d.install({{"pods", "kovs *", "kovs1"}}), Error) << "one pattern, no whitespace";
}

// networkd applies the first .network file (by name) whose [Match] fits: one
// sorting before kovs's makes the drop-in moot.
TEST_F(DropinsTest, ShadowingFindsFilesThatMatchFirst) {
    gateway::NetworkdDropins d(dir_);
    d.install({"gw0"});
    std::ofstream(dir_ + "/05-admin.network") << "[Match]\nName=eth* gw?\n\n[Network]\nDHCP=yes\n";
    std::ofstream(dir_ + "/06-other.network") << "[Match]\nName=br-phy\n";
    std::ofstream(dir_ + "/07-not-match.network") << "[Network]\nName=gw0\n";  // not in [Match]
    std::ofstream(dir_ + "/99-catchall.network") << "[Match]\nName=*\n";      // sorts after kovs's: harmless
    std::ofstream(dir_ + "/01-gw0.netdev") << "[Match]\nName=gw0\n";           // not a .network file
    EXPECT_EQ(d.shadowing("gw0"), (std::vector<std::string>{dir_ + "/05-admin.network"}));
    EXPECT_TRUE(d.shadowing("kovs-up0").empty());
}

// The drop-ins job on a real loop: written at start, written again as soon
// as one is removed or changed, and a writer that keeps removing them is
// held back and reported, not fought.
TEST_F(DropinsTest, TheJobWritesARemovedOrChangedDropinAgain) {
    using namespace std::chrono_literals;
    EventLoop loop;
    RepairLog log;
    gateway::NetworkdDropinGuard job(loop, dir_ + "/network", {"gw0", "br-phy"}, log, std::chrono::hours(1));
    job.start();
    gateway::NetworkdDropins d(dir_ + "/network");
    ASSERT_TRUE(d.missing({"gw0", "br-phy"}).empty()) << "start() writes them before it returns";

    std::filesystem::remove(d.pathFor("gw0"));
    ASSERT_TRUE(loop.runUntil([&] { return d.missing({"gw0"}).empty(); }, 5s)) << "the removed drop-in stays gone";
    EXPECT_EQ(job.rewritten(), 1u);
    std::ofstream(d.pathFor("br-phy")) << "[Match]\nName=br-phy\n";
    ASSERT_TRUE(loop.runUntil([&] { return d.missing({"br-phy"}).empty(); }, 5s)) << "the changed drop-in stays changed";
    EXPECT_EQ(job.rewritten(), 2u);
    EXPECT_NE(log.recent().dump().find("br-phy"), std::string::npos) << log.recent().dump();

    // Removed again and again: 5 repairs at once, then the job waits and says so.
    for (int i = 0; i < 8; ++i) {
        std::filesystem::remove(d.pathFor("gw0"));
        loop.runUntil([&] { return d.missing({"gw0"}).empty(); }, 300ms);
    }
    nlohmann::json s;
    job.status(s);
    EXPECT_TRUE(s.at("networkdDropins").at("reconcile").at("contested").get<bool>()) << s.dump();
    EXPECT_LT(job.rewritten(), 10u) << "every removal was undone at once: no backoff";
    EXPECT_FALSE(d.missing({"gw0"}).empty()) << "a held repair waits";
}
