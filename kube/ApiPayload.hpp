#pragma once
// The Kubernetes API's list and watch payloads, read without knowing the
// resource: a List's resourceVersion and items, one watch line's type,
// resourceVersion and object. Pure functions, unit-tested and fuzzed; the
// objects themselves are decoded by the resource's own decoder.
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kovs::kube {

struct ListPayload {
    std::string resourceVersion;
    nlohmann::json items = nlohmann::json::array();
};

struct WatchEventPayload {
    enum class Type { Added, Modified, Deleted, Bookmark, Error };
    Type type = Type::Added;
    std::string resourceVersion;  // all types but Error
    nlohmann::json object;        // the object (Added/Modified/Deleted/Bookmark), the Status (Error)
    int errorCode = 0;            // Error: the Status code (410 = resourceVersion too old)
    std::string errorMessage;
};

// Only the envelope's members and `fields` are kept, at any depth (the rest
// is dropped while parsing, see ListWatchOptions::fields). Throw kovs::Error
// for anything that is not a well-formed list / event (garbage, a truncated
// line, an unknown event type, a missing resourceVersion); a malformed
// object inside a well-formed envelope is the decoder's business.
//
// A list is read item by item: `onItem` gets each element of `items` as soon
// as it is parsed, and the document never holds them all (1000 kind Pods
// are ~5 MiB of JSON; only one at a time exists as a DOM). Items handed out
// before a later part of the body turns out malformed are the caller's to
// discard. Returns the list's resourceVersion.
std::string parseListPayload(std::string_view body, const std::vector<std::string>& fields,
                             const std::function<void(nlohmann::json&& item)>& onItem);
// The same, collected (tests, fuzzing).
ListPayload parseListPayload(std::string_view body, const std::vector<std::string>& fields);
WatchEventPayload parseWatchLine(std::string_view line, const std::vector<std::string>& fields);

// metadata.name, or "namespace/name" for a namespaced object; throws
// kovs::Error when the object has no usable name.
std::string objectKey(const nlohmann::json& object);

// For the resources' decoders: `obj`'s member `key` of JSON type `type`.
// optionalMember gives nullptr where it is absent or null; both throw
// kovs::Error naming it for another type ("Node x.spec.podCIDRs: expected a
// list"), member also where it is absent or `obj` is no object.
const nlohmann::json* optionalMember(const nlohmann::json& obj, const char* key, nlohmann::json::value_t type, const std::string& what);
const nlohmann::json& member(const nlohmann::json& obj, const char* key, nlohmann::json::value_t type, const std::string& what);

}  // namespace kovs::kube
