// The one interface-name rule every config key, CNI argument, bridge port and
// networkd drop-in is checked by: the kernel's (dev_valid_name), so what the
// config accepts the kernel accepts too.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "base/InterfaceName.hpp"

using kovs::interfaceNameProblem;

TEST(InterfaceName, TheKernelsRule) {
    for (const char* ok : {"gw0", "br-phy", "eth0.100", "veth_a1b2c3d4", "ovn-k8s-mp0", "a", "abcdefghijklmno"})
        EXPECT_EQ(interfaceNameProblem(ok), "") << ok;
    EXPECT_EQ(interfaceNameProblem(""), "empty");
    EXPECT_EQ(interfaceNameProblem("abcdefghijklmnop"), "longer than 15 characters");
    EXPECT_EQ(interfaceNameProblem("."), "not a name");
    EXPECT_EQ(interfaceNameProblem(".."), "not a name");
    EXPECT_EQ(interfaceNameProblem("a/b"), "contains '/'");
    EXPECT_EQ(interfaceNameProblem("eth0:1"), "contains ':'");
    EXPECT_EQ(interfaceNameProblem("br phy"), "contains a space or control character");
    EXPECT_EQ(interfaceNameProblem(std::string("a\nb")), "contains a space or control character");
    EXPECT_EQ(interfaceNameProblem(std::string("a\0b", 3)), "contains a space or control character");
}

TEST(InterfaceName, CheckNamesWhatAndWhy) {
    try {
        kovs::checkInterfaceName("uplink.interface", "eth0:1");
        FAIL() << "no error";
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "uplink.interface 'eth0:1': not a valid interface name (contains ':')");
    }
    EXPECT_NO_THROW(kovs::checkInterfaceName("x", "gw0"));
}
