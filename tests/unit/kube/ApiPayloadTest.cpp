// The list and watch envelopes, read without knowing the resource.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "kube/ApiPayload.hpp"

using kovs::Error;
using namespace kovs::kube;
using nlohmann::json;

namespace {

json node(const std::string& name) {
    return {{"kind", "Node"}, {"metadata", {{"name", name}, {"resourceVersion", "7"}}}, {"spec", {{"podCIDR", "x"}}}};
}

}  // namespace

TEST(ApiPayload, ListKeepsOnlyTheFieldsAskedForWhereverTheySit) {
    json kindNode = {
        {"kind", "Node"},
        {"apiVersion", "v1"},
        {"metadata",
         {{"name", "kind-worker"},
          {"resourceVersion", "88"},
          {"labels", {{"kubernetes.io/hostname", "kind-worker"}, {"name", "not-this"}}},
          {"managedFields", json::array({{{"manager", "kubelet"}, {"fieldsV1", {{"f:status", json::object()}}}}})}}},
        {"spec", {{"podCIDRs", {"10.244.1.0/24"}}, {"providerID", "kind://docker/kind/kind-worker"}}},
        {"status", {{"images", json::array({{{"names", {"registry.k8s.io/pause:3.9"}}, {"sizeBytes", 1}}})}}}};
    json list = {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "90"}}},
                 {"items", {kindNode}}};
    auto l = parseListPayload(list.dump(), {"spec", "podCIDRs"});
    EXPECT_EQ(l.resourceVersion, "90");
    ASSERT_EQ(l.items.size(), 1u);
    const auto& item = l.items[0];
    EXPECT_EQ(objectKey(item), "kind-worker");
    EXPECT_EQ(item["spec"]["podCIDRs"], json({"10.244.1.0/24"}));
    EXPECT_FALSE(item["spec"].contains("providerID"));
    EXPECT_FALSE(item.contains("status")) << "not asked for";
    EXPECT_FALSE(item["metadata"].contains("labels"));
    EXPECT_FALSE(item["metadata"].contains("managedFields"));
}

TEST(ApiPayload, AWholeMemberKeepsEverythingInsideItAndNothingAfterIt) {
    json pod = {{"kind", "Pod"},
                {"metadata", {{"name", "a"}, {"namespace", "x"}, {"resourceVersion", "5"},
                              {"labels", {{"app", "web"}, {"pod", "a"}}},
                              {"annotations", {{"note", "dropped"}}},
                              {"managedFields", json::array({{{"manager", "kubelet"}, {"fieldsV1", {{"f:labels", {{"f:app", 1}}}}}}})}}},
                {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"},
                                                       {"ports", json::array({{{"name", "http"}, {"containerPort", 80}}})}}})}}}};
    auto l = parseListPayload(json{{"kind", "PodList"}, {"metadata", {{"resourceVersion", "9"}}}, {"items", {pod}}}.dump(),
                              {"labels.*", "spec", "containers", "ports", "containerPort"});
    const auto& item = l.items.at(0);
    EXPECT_EQ(item["metadata"]["labels"], json({{"app", "web"}, {"pod", "a"}}));
    EXPECT_FALSE(item["metadata"].contains("annotations"));
    EXPECT_FALSE(item["metadata"].contains("managedFields")) << "keys after the whole member are filtered again";
    EXPECT_EQ(item["spec"]["containers"][0], json({{"name", "c"}, {"ports", json::array({{{"name", "http"}, {"containerPort", 80}}})}}))
        << "'image' was not asked for";

    json nullLabels = {{"kind", "Pod"}, {"metadata", {{"labels", nullptr}, {"resourceVersion", "5"}}},
                       {"spec", {{"x", {{"y", 1}}}}}};
    auto ev = parseWatchLine(json{{"type", "ADDED"}, {"object", nullLabels}}.dump(), {"labels.*", "spec"});
    EXPECT_EQ(ev.object["spec"], json::object()) << "a null whole member ends where it stands";
}

TEST(ApiPayload, AnyListKindAndAnEmptyList) {
    auto l = parseListPayload(R"({"kind":"NetworkPolicyList","metadata":{"resourceVersion":"3"},"items":null})", {});
    EXPECT_EQ(l.resourceVersion, "3");
    EXPECT_TRUE(l.items.empty());
}

TEST(ApiPayload, AListIsHandedOverItemByItemAsItIsParsed) {
    // Nested objects inside an item, and an "items" member elsewhere, are not items.
    std::string body = R"({"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[)"
                       R"({"metadata":{"name":"a","items":[{"metadata":{"name":"inner"}}]},"spec":{"x":{"y":1}}},)"
                       R"("not an object",{"metadata":{"name":"b"}}]})";
    std::vector<json> seen;
    auto rv = parseListPayload(body, {"spec", "x", "y"}, [&](json&& item) { seen.push_back(std::move(item)); });
    EXPECT_EQ(rv, "7");
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[0]["metadata"]["name"], "a");
    EXPECT_EQ(seen[0]["spec"], json({{"x", {{"y", 1}}}}));
    EXPECT_EQ(seen[1]["metadata"]["name"], "b");
    EXPECT_EQ(seen[2], "not an object") << "handed over last, for the store to skip";

    // A body that breaks off after an item: that item was handed over, and
    // the list is an error (the store discards what it got).
    seen.clear();
    EXPECT_THROW(parseListPayload(body.substr(0, body.find("\"not")), {}, [&](json&& item) { seen.push_back(std::move(item)); }),
                 Error);
    EXPECT_EQ(seen.size(), 1u);
}

TEST(ApiPayload, BadListsAreErrors) {
    for (const char* body : {"", "{\"kind\":\"NodeList\"", R"({"kind":"Status","code":403})", R"({"kind":5})",
                             R"({"kind":"List"})", R"({"kind":"NodeList","metadata":{}})",
                             R"({"kind":"NodeList","metadata":{"resourceVersion":"1"},"items":{}})"}) {
        EXPECT_THROW(parseListPayload(body, {}), Error) << body;
    }
}

TEST(ApiPayload, ObjectKeys) {
    EXPECT_EQ(objectKey(node("b")), "b");
    EXPECT_EQ(objectKey({{"metadata", {{"name", "a"}, {"namespace", "x"}}}}), "x/a");
    EXPECT_THROW(objectKey({{"metadata", {{"name", ""}}}}), Error);
    EXPECT_THROW(objectKey({{"metadata", json::object()}}), Error);
    EXPECT_THROW(objectKey(json::array()), Error);
}

TEST(ApiPayload, WatchEvents) {
    auto added = parseWatchLine(json{{"type", "ADDED"}, {"object", node("b")}}.dump(), {"spec", "podCIDR"});
    EXPECT_EQ(added.type, WatchEventPayload::Type::Added);
    EXPECT_EQ(added.resourceVersion, "7");
    EXPECT_EQ(objectKey(added.object), "b");
    EXPECT_EQ(added.object["spec"]["podCIDR"], "x");

    auto bookmark = parseWatchLine(
        R"({"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"99","annotations":{"k8s.io/initial-events-end":"true"}}}})",
        {});
    EXPECT_EQ(bookmark.type, WatchEventPayload::Type::Bookmark);
    EXPECT_EQ(bookmark.resourceVersion, "99");

    auto gone = parseWatchLine(
        R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}})j",
        {});
    EXPECT_EQ(gone.type, WatchEventPayload::Type::Error);
    EXPECT_EQ(gone.errorCode, 410);
    EXPECT_EQ(gone.errorMessage, "too old resource version: 1 (5)");

    auto deleted = parseWatchLine(json{{"type", "DELETED"}, {"object", node("b")}}.dump(), {});
    EXPECT_EQ(deleted.type, WatchEventPayload::Type::Deleted);
}

TEST(ApiPayload, BadWatchLinesAreErrors) {
    for (const char* line : {"", "garbage", "{\"type\":\"ADDED\",\"obj", "[]", "{\"type\":\"ADDED\"}",
                             "{\"type\":\"ADDED\",\"object\":[]}", "{\"type\":\"EXPLODED\",\"object\":{}}",
                             "{\"type\":1,\"object\":{}}", "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}"}) {
        EXPECT_THROW(parseWatchLine(line, {}), Error) << line;
    }
}

// A well-formed event whose object has no name is not garbage: the stream
// goes on, and ListWatch skips that object (objectKey throws).
TEST(ApiPayload, AnEventForAnUnnamedObjectStillParses) {
    auto ev = parseWatchLine(R"({"type":"MODIFIED","object":{"metadata":{"resourceVersion":"3"}}})", {});
    EXPECT_EQ(ev.resourceVersion, "3");
    EXPECT_THROW(objectKey(ev.object), Error);
}
