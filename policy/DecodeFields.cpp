#include "policy/DecodeFields.hpp"

#include "base/Error.hpp"
#include "kube/ApiPayload.hpp"

namespace kovs::policy {

using kube::optionalMember;

const nlohmann::json& objectMember(const nlohmann::json& obj, const char* key, const std::string& what) {
    static const nlohmann::json kEmpty = nlohmann::json::object();
    auto* m = optionalMember(obj, key, nlohmann::json::value_t::object, what);
    return m ? *m : kEmpty;
}

const nlohmann::json& listMember(const nlohmann::json& obj, const char* key, const std::string& what) {
    static const nlohmann::json kEmpty = nlohmann::json::array();
    auto* m = optionalMember(obj, key, nlohmann::json::value_t::array, what);
    return m ? *m : kEmpty;
}

std::string stringMember(const nlohmann::json& obj, const char* key, const std::string& what) {
    auto* m = optionalMember(obj, key, nlohmann::json::value_t::string, what);
    return m ? m->get<std::string>() : "";
}

std::pair<std::string, std::string> nameOf(const nlohmann::json& object, const char* kind, bool namespaced) {
    if (!object.is_object()) throw Error(std::string(kind) + ": expected an object");
    const auto& meta = objectMember(object, "metadata", kind);
    auto name = stringMember(meta, "name", std::string(kind) + ".metadata");
    auto ns = namespaced ? stringMember(meta, "namespace", std::string(kind) + ".metadata") : "";
    if (name.empty() || (namespaced && ns.empty())) throw Error(std::string(kind) + ": no metadata.name or namespace");
    return {ns, name};
}

std::optional<Protocol> protocolOf(const std::string& name) {
    if (name.empty() || name == "TCP") return Protocol::TCP;
    if (name == "UDP") return Protocol::UDP;
    if (name == "SCTP") return Protocol::SCTP;
    return std::nullopt;
}

bool validPort(const nlohmann::json& v) { return v.is_number_integer() && v.get<long>() >= 1 && v.get<long>() <= 65535; }

Labels labelsOf(const nlohmann::json& object, const std::string& what) {
    Labels labels;
    for (const auto& [k, v] : objectMember(objectMember(object, "metadata", what), "labels", what + ".metadata").items()) {
        if (!v.is_string()) throw Error(what + ".metadata.labels." + k + ": expected a string");
        labels[k] = v.get<std::string>();
    }
    labels.shrinkToFit();
    return labels;
}

}  // namespace kovs::policy
