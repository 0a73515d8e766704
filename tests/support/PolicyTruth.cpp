// policy_truth: the evaluator (policy/PolicyEvaluator) as a command, for the
// e2e tests' truth tables. Reads one JSON object on stdin:
//   {"namespaces": [Namespace...], "pods": [Pod...], "policies": [NetworkPolicy...],
//    "probes": [{"from": "x/a", "to": "y/b", "protocol": "TCP", "port": 80[, "family": 6]}, ...]}
// (the objects as the API server returns them) and prints one line per
// probe: "x/a y/b TCP 80 allow" or "... deny". Exit 2 on bad input.
//   policy_truth cases SEED COUNT      COUNT generated cases
//   policy_truth cases upstream        the cases after the upstream suite
// print tests/support/PolicyCluster's cases, as the integration test runs
// them, one a line: {"name": "...", "policies": [NetworkPolicy...]}.
//   policy_truth addresses             "x/a 10.244.1.10 fd00:10:244:1::a", a line a pod:
// the addresses those cases' ipBlocks name, for the e2e test to map to its pods' own.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "base/Error.hpp"
#include "policy/PolicyEvaluator.hpp"
#include "tests/support/AdminPolicyCases.hpp"
#include "tests/support/PolicyCluster.hpp"

using namespace kovs::policy;
using nlohmann::json;

int main(int argc, char** argv) {
    try {
        if (argc == 2 && std::string(argv[1]) == "addresses") {
            for (const auto& p : kovs::test::netpolPods(true))
                std::printf("%s/%s %s %s\n", p.ns.c_str(), p.name.c_str(), p.ip.c_str(), p.ip6.c_str());
            return 0;
        }
        if (argc > 1) {
            const std::string which = argc == 3 ? argv[2] : "";
            if (std::string(argv[1]) != "cases" || (argc != 4 && which != "upstream" && which != "admin"))
                throw kovs::Error("usage: policy_truth [cases SEED COUNT | cases upstream | cases admin | addresses] (without: probes on stdin)");
            if (which == "admin") {
                for (const auto& c : kovs::test::adminCases())
                    std::printf("%s\n", json{{"name", c.name}, {"policies", c.policies}, {"admin", c.admin}}.dump().c_str());
                return 0;
            }
            const bool upstream = which == "upstream";
            auto cases = upstream ? kovs::test::netpolCases()
                                  : kovs::test::randomPolicyCases(static_cast<unsigned>(std::stoul(argv[2])), std::stoi(argv[3]));
            for (const auto& c : cases) std::printf("%s\n", json{{"name", c.name}, {"policies", c.policies}}.dump().c_str());
            return 0;
        }
        json in = json::parse(std::cin);
        PolicyCluster c;
        for (const auto& o : in.at("namespaces")) {
            auto ns = decodeNamespace(o);
            c.namespaces[ns.name] = ns;
        }
        for (const auto& o : in.at("pods")) {
            if (auto pod = decodePod(o)) c.pods[pod->key()] = *pod;
        }
        for (const auto& o : in.at("policies")) {
            auto np = decodeNetworkPolicy(o);
            c.policies[np.key()] = np;
        }
        auto tiers = kovs::test::decodeAdminObjects(in.value("admin", json::array()).get<std::vector<json>>());
        for (const auto& o : in.value("nodes", json::array())) tiers.nodes[o.at("metadata").at("name").get<std::string>()] = decodePolicyNode(o);
        // The pod's address of the probe's family (4 unless it says 6).
        auto endpoint = [&](const std::string& key, int family) {
            const auto& pod = c.pods.at(key);
            for (const auto& ip : pod.ips) {
                if (ip.family == (family == 6 ? AF_INET6 : AF_INET)) return Endpoint{key, ip, pod.nodeName};
            }
            throw kovs::Error("pod " + key + " has no IPv" + std::to_string(family) + " address");
        };
        for (const auto& p : in.at("probes")) {
            auto from = p.at("from").get<std::string>(), to = p.at("to").get<std::string>();
            auto proto = p.at("protocol").get<std::string>();
            int port = p.at("port").get<int>();
            Protocol protocol = proto == "TCP" ? Protocol::TCP : proto == "UDP" ? Protocol::UDP : Protocol::SCTP;
            int family = p.value("family", 4);
            bool ok = decide(c, tiers, endpoint(from, family), endpoint(to, family), protocol, port).allowed;
            std::printf("%s %s %s %d %s\n", from.c_str(), to.c_str(), proto.c_str(), port, ok ? "allow" : "deny");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "policy_truth: %s\n", e.what());
        return 2;
    }
    return 0;
}
