// Pidfile: what counts as a pid, and a pid that names some other process.
#include "base/Pidfile.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "base/Error.hpp"
#include "tests/support/TempDir.hpp"

using kovs::Pidfile;

namespace {

struct PidfileDir {
    kovs::test::TempDir dir{"kovs-pidfile"};
    std::string path = dir.path();
    Pidfile write(const std::string& text) const {
        std::ofstream(dir / "d.pid") << text;
        return Pidfile(dir / "d.pid");
    }
};

std::string errorOf(const Pidfile& p, const std::string& comm) {
    try {
        return "pid " + std::to_string(p.requireLive(comm));
    } catch (const kovs::Error& e) {
        return e.what();
    }
}

}  // namespace

TEST(Pidfile, ReadsAPositiveNumberAndNothingElse) {
    PidfileDir d;
    EXPECT_EQ(Pidfile(d.path + "/missing.pid").read(), std::nullopt);
    EXPECT_EQ(d.write("").read(), std::nullopt);
    EXPECT_EQ(d.write("4242\n").read(), 4242);
    EXPECT_EQ(d.write("4242").read(), 4242);
    for (const char* bad : {"0\n", "-5\n", "12x\n", " 12\n", "99999999999\n"}) EXPECT_EQ(d.write(bad).read(), std::nullopt) << bad;
}

TEST(Pidfile, ALivePidMustBeTheNamedProgram) {
    PidfileDir d;
    auto self = kovs::processName(::getpid());
    ASSERT_FALSE(self.empty());
    auto p = d.write(std::to_string(::getpid()) + "\n");
    EXPECT_EQ(p.readLive(self), ::getpid());
    EXPECT_EQ(p.readLive("ovs-vswitchd"), std::nullopt);
    EXPECT_EQ(errorOf(p, "ovs-vswitchd"), p.path() + ": pid " + std::to_string(::getpid()) + " is '" + self +
                                              "' here, not ovs-vswitchd (does it run in another pid namespace?)");
    EXPECT_EQ(errorOf(d.write("\n"), "ovs-vswitchd"), p.path() + ": no pid in it");
}
