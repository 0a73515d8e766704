// Where kind/manifests/kovs.yaml's objects live (kovs-system, or cluster
// scope) and what the agent's service account may do (read Nodes).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

TEST_F(KindFiles, EveryManifestIsNamedAndNamespacedInKovsSystem) {
    static const std::set<std::string> clusterScoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"};
    ASSERT_TRUE(docs_.count("Namespace/kovs-system"));
    for (const auto& [key, doc] : docs_) {
        EXPECT_TRUE(doc["apiVersion"]) << key << ": no apiVersion";
        if (clusterScoped.count(doc["kind"].as<std::string>())) {
            EXPECT_FALSE(doc["metadata"]["namespace"]) << key << " is cluster-scoped";
        } else {
            ASSERT_TRUE(doc["metadata"]["namespace"]) << key << ": no namespace";
            EXPECT_EQ(doc["metadata"]["namespace"].as<std::string>(), "kovs-system") << key;
        }
    }
}

TEST_F(KindFiles, ServiceAccountIsTheOneBoundToTheNodeReaderRole) {
    ASSERT_TRUE(docs_.count("ServiceAccount/kovs-agent"));
    auto sa = docs_["ServiceAccount/kovs-agent"];
    EXPECT_EQ(podSpec_["serviceAccountName"].as<std::string>(), sa["metadata"]["name"].as<std::string>());

    ASSERT_TRUE(docs_.count("ClusterRoleBinding/kovs-agent"));
    auto binding = docs_["ClusterRoleBinding/kovs-agent"];
    ASSERT_EQ(binding["subjects"].size(), 1u);
    EXPECT_EQ(binding["subjects"][0]["kind"].as<std::string>(), "ServiceAccount");
    EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), sa["metadata"]["name"].as<std::string>());
    EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(), sa["metadata"]["namespace"].as<std::string>());
    auto roleName = binding["roleRef"]["name"].as<std::string>();
    EXPECT_EQ(binding["roleRef"]["kind"].as<std::string>(), "ClusterRole");

    ASSERT_TRUE(docs_.count("ClusterRole/" + roleName)) << "roleRef names a missing ClusterRole " << roleName;
    auto rules = docs_["ClusterRole/" + roleName]["rules"];
    ASSERT_EQ(rules.size(), 4u) << "nodes get/list/watch; namespaces, pods, networkpolicies and the admin tiers list/watch: all kovs needs";
    EXPECT_EQ(strings(rules[0]["apiGroups"]), std::vector<std::string>{""});
    EXPECT_EQ(strings(rules[0]["resources"]), std::vector<std::string>{"nodes"});
    EXPECT_EQ(strings(rules[0]["verbs"]), (std::vector<std::string>{"get", "list", "watch"}));
    // NetworkPolicy's inputs (policy/PolicySource): read-only, exactly these.
    EXPECT_EQ(strings(rules[1]["apiGroups"]), std::vector<std::string>{""});
    EXPECT_EQ(strings(rules[1]["resources"]), (std::vector<std::string>{"namespaces", "pods"}));
    EXPECT_EQ(strings(rules[1]["verbs"]), (std::vector<std::string>{"list", "watch"}));
    EXPECT_EQ(strings(rules[2]["apiGroups"]), std::vector<std::string>{"networking.k8s.io"});
    EXPECT_EQ(strings(rules[2]["resources"]), std::vector<std::string>{"networkpolicies"});
    EXPECT_EQ(strings(rules[2]["verbs"]), (std::vector<std::string>{"list", "watch"}));
    EXPECT_EQ(strings(rules[3]["apiGroups"]), std::vector<std::string>{"policy.networking.k8s.io"});
    EXPECT_EQ(strings(rules[3]["resources"]), (std::vector<std::string>{"adminnetworkpolicies", "baselineadminnetworkpolicies"}));
    EXPECT_EQ(strings(rules[3]["verbs"]), (std::vector<std::string>{"list", "watch"}));
}

}  // namespace
