#include "base/MacAddress.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "base/UndoStack.hpp"

using kovs::MacAddress;

TEST(MacAddress, ParsesAndPrintsLowerCase) {
    auto m = MacAddress::parse("02:42:AC:12:00:0F");
    EXPECT_EQ(m.str(), "02:42:ac:12:00:0f");
    EXPECT_TRUE(m.locallyAdministered());
    EXPECT_FALSE(m.multicast());
    EXPECT_TRUE(MacAddress::parse("01:00:5e:00:00:01").multicast());
    EXPECT_TRUE(MacAddress::parse("00:00:00:00:00:00").zero());
}

TEST(MacAddress, RejectsEverythingElseNamingIt) {
    for (const char* bad : {"", "02:42:ac:12:00", "02:42:ac:12:00:0f:", "02-42-ac-12-00-0f", "0g:42:ac:12:00:0f",
                            "2:42:ac:12:00:0f0", " 02:42:ac:12:00:0f"}) {
        EXPECT_FALSE(MacAddress::tryParse(bad)) << bad;
    }
    try {
        MacAddress::parse("0a:58:bad", "pod");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "pod: not a MAC address: '0a:58:bad'");
    }
}

TEST(UndoStack, UndoesNewestFirstAndKeepsGoingPastAFailure) {
    std::string order;
    {
        kovs::UndoStack undo("test");
        undo.push("a", [&] { order += "a"; });
        undo.push("b", [&] { throw kovs::Error("b is stuck"); });
        undo.push("c", [&] { order += "c"; });
    }  // not committed: the destructor unwinds
    EXPECT_EQ(order, "ca");
    kovs::UndoStack committed;
    committed.push("x", [&] { order += "x"; });
    committed.commit();
    committed.unwind();
    EXPECT_EQ(order, "ca");
}
