// Label selectors as metav1.LabelSelector defines them.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "policy/LabelSelector.hpp"

using kovs::Error;
using kovs::policy::Labels;
using kovs::policy::LabelSelector;
using nlohmann::json;

namespace {
LabelSelector sel(const char* text) { return LabelSelector::decode(json::parse(text), "sel"); }
}  // namespace

TEST(LabelSelector, EmptySelectsEverythingAndMatchLabelsAreAnded) {
    EXPECT_TRUE(sel("{}").matches({}));
    EXPECT_TRUE(sel("null").matches({{"a", "1"}}));
    auto s = sel(R"({"matchLabels": {"app": "web", "tier": "fe"}})");
    EXPECT_TRUE(s.matches({{"app", "web"}, {"tier", "fe"}, {"x", "y"}}));
    EXPECT_FALSE(s.matches({{"app", "web"}}));
    EXPECT_FALSE(s.matches({{"app", "web"}, {"tier", "be"}}));
}

TEST(LabelSelector, EveryOperator) {
    auto in = sel(R"({"matchExpressions": [{"key": "pod", "operator": "In", "values": ["a", "b"]}]})");
    EXPECT_TRUE(in.matches({{"pod", "b"}}));
    EXPECT_FALSE(in.matches({{"pod", "c"}}));
    EXPECT_FALSE(in.matches({}));
    auto notIn = sel(R"({"matchExpressions": [{"key": "pod", "operator": "NotIn", "values": ["a"]}]})");
    EXPECT_TRUE(notIn.matches({{"pod", "b"}}));
    EXPECT_TRUE(notIn.matches({})) << "NotIn holds for a pod without the label";
    EXPECT_FALSE(notIn.matches({{"pod", "a"}}));
    auto exists = sel(R"({"matchExpressions": [{"key": "pod", "operator": "Exists"}]})");
    EXPECT_TRUE(exists.matches({{"pod", ""}}));
    EXPECT_FALSE(exists.matches({{"other", "a"}}));
    auto absent = sel(R"({"matchExpressions": [{"key": "pod", "operator": "DoesNotExist"}],
                          "matchLabels": {"ns": "x"}})");
    EXPECT_TRUE(absent.matches({{"ns", "x"}}));
    EXPECT_FALSE(absent.matches({{"ns", "x"}, {"pod", "a"}}));
    EXPECT_FALSE(absent.matches({}));
}

TEST(LabelSelector, WhatItCannotReadIsAnErrorNamingIt) {
    for (const char* bad : {R"({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]})",
                            R"({"matchExpressions": [{"key": "k", "operator": "In"}]})",
                            R"({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["x"]}]})",
                            R"({"matchLabels": {"k": 1}})", R"({"matchLabels": []})", R"({"futureField": {}})", R"("x")"}) {
        try {
            sel(bad);
            ADD_FAILURE() << "accepted " << bad;
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()).rfind("sel", 0), 0u) << e.what();
        }
    }
}

TEST(Labels, OneSortedListWhateverTheOrderTheyCameIn) {
    Labels a{{"tier", "fe"}, {"app", "web"}};
    Labels b;
    b["app"] = "db";
    b["tier"] = "fe";
    b["app"] = "web";  // replaced, not added
    EXPECT_EQ(a, b);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b.begin()->first, "app");
    EXPECT_EQ(b.at("tier"), "fe");
    EXPECT_EQ(b.find("zone"), b.end());
    EXPECT_THROW(b.at("zone"), std::out_of_range);
}
