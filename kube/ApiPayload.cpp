#include "kube/ApiPayload.hpp"

#include <algorithm>
#include <functional>

#include "base/Error.hpp"
#include "base/JsonDepth.hpp"

namespace kovs::kube {
namespace {
using nlohmann::json;

const char* const kEnvelope[] = {"kind",  "metadata", "name",   "namespace", "resourceVersion",
                                 "items", "type",     "object", "code",      "message"};

// `onItem`: each element of a top-level "items" array that is an object is
// handed over as soon as it is parsed, and dropped from the document.
json parseFiltered(std::string_view text, const std::vector<std::string>& fields,
                   const std::function<void(json&&)>* onItem = nullptr) {
    if (jsonNestingDepth(text) > kMaxJsonDepth)
        throw Error("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    auto listed = [&](const std::string& key, const char* suffix) {
        return std::find(fields.begin(), fields.end(), key + suffix) != fields.end();
    };
    auto kept = [&](const std::string& key) {
        return std::any_of(std::begin(kEnvelope), std::end(kEnvelope), [&](const char* k) { return key == k; }) ||
               listed(key, "");
    };
    // Inside a member listed as "name.*" (labels: keys nobody can list in
    // advance) every key is kept; nlohmann reports a key at the depth of the
    // object holding it, and that object's end one level up.
    int wholeAt = -1;  // the depth of the "name.*" key whose value is being read
    bool inItems = false;
    return json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
        if (onItem) {
            if (event == json::parse_event_t::key && depth == 1) inItems = parsed == "items";
            if (inItems && event == json::parse_event_t::object_end && depth == 2) {
                (*onItem)(std::move(parsed));
                return false;
            }
        }
        if (wholeAt >= 0 && (event == json::parse_event_t::object_end || event == json::parse_event_t::array_end) &&
            depth <= wholeAt) {
            wholeAt = -1;
            return true;
        }
        if (wholeAt >= 0 && event == json::parse_event_t::value && depth == wholeAt) wholeAt = -1;  // "labels": null
        if (event != json::parse_event_t::key) return true;
        if (wholeAt >= 0 && depth > wholeAt) return true;
        const auto& key = parsed.get_ref<const std::string&>();
        if (listed(key, ".*")) {
            wholeAt = depth;
            return true;
        }
        return kept(key);
    }, false);
}

const std::string* stringMember(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

std::string resourceVersionOf(const json& obj) {
    auto meta = obj.find("metadata");
    if (meta == obj.end() || !meta->is_object()) return "";
    auto* rv = stringMember(*meta, "resourceVersion");
    return rv ? *rv : "";
}

const char* typeName(json::value_t type) {
    switch (type) {
        case json::value_t::object: return "an object";
        case json::value_t::array: return "a list";
        case json::value_t::string: return "a string";
        case json::value_t::boolean: return "a boolean";
        default: return "another JSON type";
    }
}

}  // namespace

const json* optionalMember(const json& obj, const char* key, json::value_t type, const std::string& what) {
    auto it = obj.is_object() ? obj.find(key) : obj.end();
    if (it == obj.end() || it->is_null()) return nullptr;
    if (it->type() != type) throw Error(what + "." + key + ": expected " + typeName(type));
    return &*it;
}

const json& member(const json& obj, const char* key, json::value_t type, const std::string& what) {
    if (!obj.is_object()) throw Error(what + ": expected an object");
    if (!obj.contains(key)) throw Error(what + ": missing '" + key + "'");
    auto* m = optionalMember(obj, key, type, what);
    if (!m) throw Error(what + "." + key + ": expected " + typeName(type));
    return *m;
}

std::string objectKey(const json& object) {
    auto meta = object.is_object() ? object.find("metadata") : object.end();
    if (meta == object.end() || !meta->is_object()) throw Error("an object without metadata");
    auto* name = stringMember(*meta, "name");
    if (!name || name->empty()) throw Error("an object without metadata.name");
    auto* ns = stringMember(*meta, "namespace");
    return ns && !ns->empty() ? *ns + "/" + *name : *name;
}

std::string parseListPayload(std::string_view body, const std::vector<std::string>& fields,
                             const std::function<void(nlohmann::json&& item)>& onItem) {
    json doc = parseFiltered(body, fields, &onItem);
    if (doc.is_discarded() || !doc.is_object()) throw Error("the response is not a JSON object");
    auto* kind = stringMember(doc, "kind");
    if (!kind || kind->size() <= 4 || kind->compare(kind->size() - 4, 4, "List") != 0)
        throw Error("the response is not a list (kind " + (kind ? "'" + *kind + "'" : std::string("missing")) + ")");
    auto resourceVersion = resourceVersionOf(doc);
    if (resourceVersion.empty()) throw Error("the list has no metadata.resourceVersion");
    auto items = doc.find("items");
    if (items == doc.end() || items->is_null()) return resourceVersion;
    if (!items->is_array()) throw Error("the list's items is not an array");
    for (auto& item : *items) onItem(std::move(item));  // what was not an object: the store skips it
    return resourceVersion;
}

ListPayload parseListPayload(std::string_view body, const std::vector<std::string>& fields) {
    ListPayload out;
    out.resourceVersion = parseListPayload(body, fields, [&](json&& item) { out.items.push_back(std::move(item)); });
    return out;
}

WatchEventPayload parseWatchLine(std::string_view line, const std::vector<std::string>& fields) {
    json doc = parseFiltered(line, fields);
    if (doc.is_discarded() || !doc.is_object()) throw Error("not a JSON object");
    auto* type = stringMember(doc, "type");
    if (!type) throw Error("an event without a type");
    auto object = doc.find("object");
    if (object == doc.end() || !object->is_object()) throw Error("an event without an object");
    WatchEventPayload ev;
    if (*type == "ERROR") {
        ev.type = WatchEventPayload::Type::Error;
        auto code = object->find("code");
        ev.errorCode = code != object->end() && code->is_number_integer() ? code->get<int>() : 0;
        auto* msg = stringMember(*object, "message");
        ev.errorMessage = msg ? *msg : "";
        return ev;
    }
    static const std::pair<const char*, WatchEventPayload::Type> kTypes[] = {
        {"ADDED", WatchEventPayload::Type::Added},
        {"MODIFIED", WatchEventPayload::Type::Modified},
        {"DELETED", WatchEventPayload::Type::Deleted},
        {"BOOKMARK", WatchEventPayload::Type::Bookmark}};
    auto t = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const auto& k) { return *type == k.first; });
    if (t == std::end(kTypes)) throw Error("unknown event type '" + *type + "'");
    ev.type = t->second;
    ev.resourceVersion = resourceVersionOf(*object);
    if (ev.resourceVersion.empty()) throw Error("a " + *type + " event without metadata.resourceVersion");
    ev.object = std::move(*object);
    return ev;
}

}  // namespace kovs::kube
