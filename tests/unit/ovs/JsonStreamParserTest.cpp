#include "ovs/JsonStreamParser.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"

using kovs::ovs::JsonStreamParser;
using nlohmann::json;

namespace {

// Three messages back to back, as ovsdb-server sends them: braces and
// brackets inside strings, escaped quotes and backslashes, unicode escapes
// and raw UTF-8, nested containers.
const std::string kStream =
    R"({"id":1,"result":"a{b}[c]\"}{\\","error":null})"
    R"(  [1,{"k":"\u00e9\ud83d\ude00 ü 😀 }]"},[[]]])"
    "\n"
    R"({"method":"update2","params":["kovs",{"Port":{"u":{"modify":{"name":"x\\\"{"}}}}],"id":null})";

std::vector<json> expected() {
    return {json::parse(R"({"id":1,"result":"a{b}[c]\"}{\\","error":null})"),
            json::parse(R"([1,{"k":"\u00e9\ud83d\ude00 ü 😀 }]"},[[]]])"),
            json::parse(R"({"method":"update2","params":["kovs",{"Port":{"u":{"modify":{"name":"x\\\"{"}}}}],"id":null})")};
}

}  // namespace

TEST(JsonStreamParser, WholeStreamAtOnce) {
    JsonStreamParser p;
    EXPECT_EQ(p.feed(kStream), expected());
    EXPECT_EQ(p.pending(), 0u);
}

TEST(JsonStreamParser, SplitAtEveryByteOffset) {
    for (size_t cut = 0; cut <= kStream.size(); ++cut) {
        JsonStreamParser p;
        auto a = p.feed(std::string_view(kStream).substr(0, cut));
        auto b = p.feed(std::string_view(kStream).substr(cut));
        a.insert(a.end(), b.begin(), b.end());
        ASSERT_EQ(a, expected()) << "split at byte " << cut;
    }
}

TEST(JsonStreamParser, SplitAtEveryTwoOffsets) {
    // Two cuts: a value may be spread over three reads, the middle one tiny.
    for (size_t i = 0; i <= kStream.size(); i += 3) {
        for (size_t j = i; j <= kStream.size(); ++j) {
            JsonStreamParser p;
            std::vector<json> all;
            for (auto piece : {std::string_view(kStream).substr(0, i), std::string_view(kStream).substr(i, j - i),
                               std::string_view(kStream).substr(j)}) {
                auto got = p.feed(piece);
                all.insert(all.end(), got.begin(), got.end());
            }
            ASSERT_EQ(all, expected()) << "cuts at " << i << " and " << j;
        }
    }
}

TEST(JsonStreamParser, OneByteAtATimeKeepsOnlyThePartialValue) {
    JsonStreamParser p;
    std::vector<json> all;
    for (char c : kStream) {
        auto got = p.feed(std::string_view(&c, 1));
        all.insert(all.end(), got.begin(), got.end());
        EXPECT_LT(p.pending(), 120u);
    }
    EXPECT_EQ(all, expected());
}

TEST(JsonStreamParser, UnicodeSurvives) {
    JsonStreamParser p;
    auto v = p.feed(R"(["\u00e9", "ü", "\ud83d\ude00"])");
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0][0], "\xc3\xa9");
    EXPECT_EQ(v[0][1], "\xc3\xbc");
    EXPECT_EQ(v[0][2], "\xf0\x9f\x98\x80");
}

static std::string errorOf(const std::string& input) {
    JsonStreamParser p;
    try {
        p.feed(input);
    } catch (const kovs::Error& e) {
        // Once failed, the parser refuses more input.
        EXPECT_THROW(p.feed("{}"), kovs::Error);
        return e.what();
    }
    return "";
}

TEST(JsonStreamParser, GarbageBetweenValuesIsAnError) {
    EXPECT_EQ(errorOf(R"({"a":1} x {"b":2})"),
              "JSON-RPC stream at byte 8: expected '{' or '[' to start a message, got 'x'");
    EXPECT_EQ(errorOf("42"), "JSON-RPC stream at byte 0: expected '{' or '[' to start a message, got '4'");
    EXPECT_EQ(errorOf(std::string("\x01{}", 3)),
              "JSON-RPC stream at byte 0: expected '{' or '[' to start a message, got 0x01");
}

TEST(JsonStreamParser, GarbageInsideValueIsAnError) {
    auto e = errorOf(R"({"a": tru})");
    EXPECT_NE(e.find("invalid JSON message"), std::string::npos) << e;
    e = errorOf(R"({"a": 1]})");
    EXPECT_NE(e.find("invalid JSON message"), std::string::npos) << e;
    e = errorOf("[\"\xff\xfe\"]");  // invalid UTF-8
    EXPECT_NE(e.find("invalid JSON message"), std::string::npos) << e;
}

TEST(JsonStreamParser, ErrorOffsetCountsDroppedBytes) {
    JsonStreamParser p;
    EXPECT_EQ(p.feed("{}[]").size(), 2u);
    try {
        p.feed("  ?");
        FAIL() << "no error";
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "JSON-RPC stream at byte 6: expected '{' or '[' to start a message, got '?'");
    }
}

TEST(JsonStreamParser, RejectsAbsurdNesting) {
    auto e = errorOf(std::string(10000, '['));
    EXPECT_NE(e.find("nesting deeper than 512"), std::string::npos) << e;
}

TEST(JsonStreamParser, IncompleteValueWaits) {
    JsonStreamParser p;
    EXPECT_TRUE(p.feed(R"({"a": "})").empty());
    EXPECT_EQ(p.pending(), 8u);
    auto v = p.feed(R"("})");
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0]["a"], "}");
}
