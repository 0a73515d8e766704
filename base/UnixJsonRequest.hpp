#pragma once
// The client side of the agent's status socket protocol (agent/StatusServer):
// one JSON request line on a unix stream socket, one JSON reply, then the
// connection closes. kovsctl and kovs-cni speak it. Throws kovs::Error naming
// the socket; a reply carrying "error" is thrown as that error.
#include <nlohmann/json.hpp>

#include <string>

namespace kovs {

nlohmann::json unixJsonRequest(const std::string& path, const nlohmann::json& request, int timeoutMs = 5000);

}  // namespace kovs
