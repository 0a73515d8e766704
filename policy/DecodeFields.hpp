#pragma once
// The member readers the policy decoders share (NetworkPolicy, Pod,
// Namespace, AdminNetworkPolicy, BaselineAdminNetworkPolicy). Each throws
// kovs::Error naming `what` when a member has the wrong type.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>

#include "policy/PolicyModel.hpp"

namespace kovs::policy {

// Absent or null reads as empty: every member a policy, pod or namespace
// may leave out has its empty value as the API's default.
const nlohmann::json& objectMember(const nlohmann::json& obj, const char* key, const std::string& what);
const nlohmann::json& listMember(const nlohmann::json& obj, const char* key, const std::string& what);
std::string stringMember(const nlohmann::json& obj, const char* key, const std::string& what);
// metadata.namespace and metadata.name (the namespace only where `namespaced`).
std::pair<std::string, std::string> nameOf(const nlohmann::json& object, const char* kind, bool namespaced);
// "" is TCP, as the API defaults it; nullopt for a protocol kovs cannot match.
std::optional<Protocol> protocolOf(const std::string& name);
bool validPort(const nlohmann::json& v);  // an integer 1-65535
Labels labelsOf(const nlohmann::json& object, const std::string& what);  // metadata.labels

}  // namespace kovs::policy
