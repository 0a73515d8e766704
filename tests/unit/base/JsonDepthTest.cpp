#include <gtest/gtest.h>

#include <string>

#include "base/JsonDepth.hpp"

using kovs::jsonNestingDepth;

TEST(JsonDepth, CountsArraysAndObjectsNotStrings) {
    EXPECT_EQ(jsonNestingDepth(""), 0u);
    EXPECT_EQ(jsonNestingDepth("42"), 0u);
    EXPECT_EQ(jsonNestingDepth(R"({"a":[1,{"b":[]}],"c":{}})"), 4u);
    EXPECT_EQ(jsonNestingDepth(R"({"s":"[[[[{{{{"})"), 1u) << "brackets in a string are text";
    EXPECT_EQ(jsonNestingDepth(R"({"s":"\"[[[","t":[]})"), 2u) << "an escaped quote does not end the string";
    EXPECT_EQ(jsonNestingDepth(R"({"s":"\\","t":[[]]})"), 3u) << "an escaped backslash does";
    EXPECT_EQ(jsonNestingDepth(std::string(100000, '[') + std::string(100000, ']')), 100000u);
    EXPECT_EQ(jsonNestingDepth("]]]][["), 2u) << "garbage neither underflows nor crashes";
}
