// kind/cluster*.yaml (the clusters kovs-kind creates, one a family) and
// kind/github-actions-e2e.yml (the CI job that runs kovs-kind).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

TEST_F(KindFiles, ClusterConfigLeavesThePodNetworkToKovs) {
    auto cluster = YAML::LoadFile((src_ / "kind/cluster.yaml").string());
    EXPECT_EQ(cluster["apiVersion"].as<std::string>(), "kind.x-k8s.io/v1alpha4");
    EXPECT_EQ(cluster["kind"].as<std::string>(), "Cluster");
    EXPECT_TRUE(cluster["networking"]["disableDefaultCNI"].as<bool>());
    EXPECT_EQ(cluster["networking"]["podSubnet"].as<std::string>(), "10.244.0.0/16");
    std::map<std::string, int> roles;
    for (const auto& n : cluster["nodes"]) roles[n["role"].as<std::string>()]++;
    EXPECT_EQ(roles, (std::map<std::string, int>{{"control-plane", 1}, {"worker", 2}}));
}

// kovs-kind up --ip-family dual|ipv6: the same cluster in kind's other
// families, with kubeadm's defaults as kind sets them; every Node's /64 from
// the /56 is a pod CIDR the peer filter accepts (not wider than /36).
TEST_F(KindFiles, ClusterConfigsOfTheOtherFamiliesDifferOnlyInTheirNetworking) {
    auto v4 = YAML::LoadFile((src_ / "kind/cluster.yaml").string());
    struct Case {
        const char* file;
        const char* family;
        const char* pods;
        const char* services;
    };
    for (auto c : {Case{"kind/cluster-dual.yaml", "dual", "10.244.0.0/16,fd00:10:244::/56", "10.96.0.0/16,fd00:10:96::/112"},
                   Case{"kind/cluster-ipv6.yaml", "ipv6", "fd00:10:244::/56", "fd00:10:96::/112"}}) {
        auto cluster = YAML::LoadFile((src_ / c.file).string());
        EXPECT_EQ(cluster["apiVersion"].as<std::string>(), v4["apiVersion"].as<std::string>()) << c.file;
        EXPECT_EQ(cluster["kind"].as<std::string>(), "Cluster") << c.file;
        auto net = cluster["networking"];
        EXPECT_EQ(net["ipFamily"].as<std::string>(), c.family) << c.file;
        EXPECT_TRUE(net["disableDefaultCNI"].as<bool>()) << c.file;
        EXPECT_EQ(net["podSubnet"].as<std::string>(), c.pods) << c.file;
        EXPECT_EQ(net["serviceSubnet"].as<std::string>(), c.services) << c.file;
        EXPECT_EQ(YAML::Dump(cluster["nodes"]), YAML::Dump(v4["nodes"])) << c.file << ": the same nodes as kind/cluster.yaml";
    }
}

TEST_F(KindFiles, CiWorkflowRunsKovsKindAndCollectsDoctorFromTheAgents) {
    auto wf = YAML::LoadFile((src_ / "kind/github-actions-e2e.yml").string());
    ASSERT_TRUE(wf["jobs"] && wf["jobs"].size() == 1);
    auto steps = wf["jobs"].begin()->second["steps"];
    bool up = false, smoke = false, doctorOnFailure = false, down = false;
    auto labels = ds_["spec"]["template"]["metadata"]["labels"];
    auto selector = "app.kubernetes.io/name=" + labels["app.kubernetes.io/name"].as<std::string>();
    for (const auto& st : steps) {
        if (!st["run"]) continue;
        auto run = st["run"].as<std::string>();
        auto onFailure = st["if"] && st["if"].as<std::string>() == "failure()";
        up |= run.find("kind/kovs-kind up --name") != std::string::npos;
        smoke |= run.find("nodeName:") != std::string::npos && run.find("ping") != std::string::npos;
        down |= run.find("kind/kovs-kind down") != std::string::npos && st["if"].as<std::string>("") == "always()";
        if (onFailure && run.find("kovsctl doctor") != std::string::npos) {
            doctorOnFailure = true;
            // It finds the agent pods and container the DaemonSet really makes.
            EXPECT_NE(run.find("-n kovs-system"), std::string::npos);
            EXPECT_NE(run.find(selector), std::string::npos) << "pods are selected by another label than " << selector;
            EXPECT_NE(run.find("-c kovs-agent"), std::string::npos);
        }
    }
    EXPECT_TRUE(up) << "the workflow must run kind/kovs-kind up, as docs/kind.md does";
    EXPECT_TRUE(smoke) << "no cross-node smoke test (pods pinned with nodeName, ping between them)";
    EXPECT_TRUE(doctorOnFailure) << "no failure() step collecting kovsctl doctor";
    EXPECT_TRUE(down) << "the cluster must be deleted in an always() step";
}

}  // namespace
