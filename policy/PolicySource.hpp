#pragma once
// The policy stage's inputs from the Kubernetes API, each listed and watched
// by a kube::Informer that keeps only what the decoders read
// (policy/PolicyModel, policy/AdminPolicyModel): Namespaces, Pods and
// NetworkPolicies, and the policy API's tiers, AdminNetworkPolicies and the
// BaselineAdminNetworkPolicy (with the Nodes their egress `nodes` peers
// select). Viewed as one cluster and compiled for this node
// (PolicyCompiler) on the loop, once per burst of changes. An object that
// does not decode is skipped and counted
// (kovs_kube_objects_rejected_total{resource}); a policy with parts this
// version cannot express is compiled to allow less (an admin rule: left
// out), and named in status.
//
// The policy API's resources come from CRDs, which a cluster may not have:
// there a list answers 404, which counts as listed with nothing (looked for
// again every backoffMax), never as an error.
//
// Nothing is delivered before all of them have been listed once: the flow
// job keeps the table it has meanwhile, so an agent restart never opens an
// isolated pod for a moment.
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "kube/Informer.hpp"
#include "policy/PolicyCompiler.hpp"
#include "policy/PolicyModel.hpp"

namespace kovs::policy {

class PolicySource : public Job {
public:
    using Callback = std::function<void(const CompiledPolicy&)>;

    // `tuning`: backoff, timeouts and limits for the list/watches.
    PolicySource(EventLoop& loop, kube::KubeCredentials creds, std::string nodeName, kube::ListWatchOptions tuning = {});
    ~PolicySource() override { stop(); }

    void start(Callback onPolicy);
    void stop();

    // `kovsctl policy NS/POD`: the policies that select the pod, per
    // direction, and the rules realized for it on this node (a pod of
    // another node: that node's agent realizes them).
    nlohmann::json explain(const std::string& podKey) const;
    // A pod of the cluster ("namespace/name"), or null.
    const PolicyPod* pod(const std::string& key) const {
        auto it = pods_.snapshot().items.find(key);
        return it == pods_.snapshot().items.end() ? nullptr : &it->second;
    }

    // "namespace/name" of the pod (not hostNetwork) with this address (a
    // host prefix), or "": the policy log's entries name their pods.
    std::string podAt(const IpPrefix& address) const {
        for (const auto& [key, pod] : pods_.snapshot().items) {
            if (pod.hostNetwork) continue;
            for (const auto& ip : pod.ips) {
                if (ip == address) return key;
            }
        }
        return "";
    }

    std::string name() const override { return "networkPolicy"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;
    std::string notReady() const override;

private:
    // The informers' stores: the only copy of the objects.
    ClusterView cluster() const {
        return {namespaces_.snapshot().items, pods_.snapshot().items, policies_.snapshot().items};
    }
    AdminTiersView tiers() const;
    bool listed() const {
        return namespaces_.listed() && pods_.listed() && policies_.listed() && admin_.listed() && baseline_.listed() && nodes_.listed();
    }
    void changed();
    void compile();

    EventLoop& loop_;
    std::string nodeName_;
    kube::Informer<PolicyNamespace> namespaces_;
    kube::Informer<PolicyPod> pods_;
    kube::Informer<NetworkPolicy> policies_;
    kube::Informer<AdminPolicy> admin_, baseline_;
    kube::Informer<PolicyNode> nodes_;
    Callback onPolicy_;
    bool pending_ = false;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    CompiledPolicy compiled_;
    uint64_t compiles_ = 0;
    size_t compiledPolicies_ = 0;  // the NetworkPolicies the last compile saw
    std::vector<std::vector<std::string>> samePriority_;  // ANPs sharing a priority, as the last compile saw them
    double lastCompileSeconds_ = 0;
};

}  // namespace kovs::policy
