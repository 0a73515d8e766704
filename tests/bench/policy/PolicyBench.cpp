// bench_policy: NetworkPolicy at the size issue 25 names, on one node of it:
// 1000 pods over 5 nodes in 50 namespaces, 200 policies (selectors, named
// ports, an ipBlock with except, both directions). Prints, against the
// targets, asserting nothing about time:
//   - the full compile for one node (start-up) and the flows it makes, next
//     to what one flow per (pod, peer, port) would cost (the conjunctions'
//     saving);
//   - a pod's label change and a policy added, each carried all the way onto
//     a real vswitchd's br-int as the flow job does it (compile + render +
//     the flow mods of the difference in one bundle), next to sending the
//     whole table (replace-flows, which reads the table back first): p50 /
//     p99 of the node's side of "enforced after the API event".
// Runs in a private network + mount namespace of its own.
//   KOVS_BENCH_POLICY_CHANGES (default 40 of each kind)
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "flows/FlowTable.hpp"
#include "flows/OpenFlowBridge.hpp"
#include "policy/PolicyCompiler.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/PrivateNamespaces.hpp"

using namespace kovs;
using namespace kovs::policy;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kPods = 1000, kNodes = 5, kNamespaces = 50, kPolicies = 200;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

PolicyPod pod(int i) {
    const int node = i % kNodes + 1, host = i / kNodes + 2;
    PolicyPod p;
    p.namespaceName = fmt::format("ns{}", i % kNamespaces);
    p.name = fmt::format("pod{}", i);
    p.nodeName = fmt::format("n{}", node);
    p.labels = {{"app", fmt::format("a{}", i % 20)}, {"tier", i % 3 == 0 ? "fe" : i % 3 == 1 ? "be" : "db"}};
    p.ips = {IpPrefix::parse(fmt::format("10.244.{}.{}", node, host))};
    p.ports = {{"http", Protocol::TCP, 8080}, {"metrics", Protocol::TCP, 9000 + i % 4}};
    return p;
}

NetworkPolicy policyNumber(int k) {
    json spec = {{"podSelector", {{"matchLabels", {{"app", fmt::format("a{}", k % 20)}}}}},
                 {"ingress", {{{"from", {{{"namespaceSelector", {{"matchLabels", {{"team", fmt::format("t{}", k % 5)}}}}},
                                          {"podSelector", {{"matchExpressions", {{{"key", "tier"}, {"operator", "In"}, {"values", {"fe", "be"}}}}}}}}}},
                               {"ports", {{{"protocol", "TCP"}, {"port", 8080}}, {{"protocol", "TCP"}, {"port", "metrics"}}}}}}}};
    if (k % 2) {
        spec["policyTypes"] = {"Ingress", "Egress"};
        spec["egress"] = {{{"to", {{{"ipBlock", {{"cidr", "10.0.0.0/8"}, {"except", {"10.244.0.0/16"}}}}}}},
                           {"ports", {{{"protocol", "UDP"}, {"port", 53}}}}},
                          {{"to", {{{"podSelector", {{"matchLabels", {{"tier", "db"}}}}}}}}, {"ports", {{{"protocol", "TCP"}, {"port", 5432}, {"endPort", 5439}}}}}};
    }
    return decodeNetworkPolicy({{"metadata", {{"name", fmt::format("p{}", k)}, {"namespace", fmt::format("ns{}", k % kNamespaces)}}},
                                {"spec", spec}});
}

PolicyCluster cluster() {
    PolicyCluster c;
    for (int n = 0; n < kNamespaces; ++n) {
        auto name = fmt::format("ns{}", n);
        c.namespaces[name] = {name, {{"team", fmt::format("t{}", n % 5)}, {"kubernetes.io/metadata.name", name}}};
    }
    for (int i = 0; i < kPods; ++i) {
        auto p = pod(i);
        c.pods[p.key()] = p;
    }
    for (int k = 0; k < kPolicies; ++k) {
        auto np = policyNumber(k);
        c.policies[np.key()] = np;
    }
    return c;
}

flows::FlowInputs inputs(const PolicyCluster& c, CompiledPolicy compiled) {
    flows::FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"aa:bb:cc:00:00:01", 1};
    in.gatewayAddresses = {IpPrefix::parse("10.244.1.1/24")};
    int ofport = 10;
    for (const auto& [_, p] : c.pods) {
        if (p.nodeName != "n1") continue;
        const auto& b = p.ips[0].bytes;
        in.pods.push_back({p.name, fmt::format("0a:58:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3]), {p.ips[0].str()}, ofport++});
    }
    for (int n = 2; n <= kNodes; ++n) {
        auto ip = IpPrefix::parse(fmt::format("172.18.0.{}", n + 1));
        in.peers.push_back({ip, {IpPrefix::parse(fmt::format("10.244.{}.0/24", n))}, {ip}});
    }
    in.serviceCIDRs = {IpPrefix::parse("10.96.0.0/16")};
    in.policy = std::move(compiled);
    return in;
}

struct Percentiles {
    double p50, p99, max;
};
Percentiles percentiles(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))]; };
    return {at(0.5), at(0.99), v.back()};
}

}  // namespace

int main() {
    if (int rc = test::enterPrivateNamespaces("bench_policy")) return rc;
    spdlog::set_level(spdlog::level::warn);
    const int changes = std::getenv("KOVS_BENCH_POLICY_CHANGES") ? std::atoi(std::getenv("KOVS_BENCH_POLICY_CHANGES")) : 40;
    auto c = cluster();

    std::vector<double> compiles;
    CompiledPolicy compiled;
    for (int i = 0; i < 5; ++i) {
        auto t0 = Clock::now();
        compiled = compilePolicy(c, "n1");
        compiles.push_back(ms(Clock::now() - t0));
    }
    auto cp = percentiles(compiles);
    size_t product = 0;
    for (const auto& r : compiled.rules)
        product += r.appliedTo.size() * (r.anyPeer ? 1 : r.peers.size()) * (r.anyPort ? 1 : r.ports.size());
    auto t0 = Clock::now();
    auto rendered = flows::FlowTable::render(inputs(c, compiled));
    double renderMs = ms(Clock::now() - t0);
    const size_t total = rendered.flows.size();
    const auto stage = static_cast<size_t>(std::count_if(rendered.flows.begin(), rendered.flows.end(), [](const flows::Flow& f) {
        return f.table >= flows::Table::AdminEgress && f.table <= flows::Table::BaselineIngress;
    }));
    std::printf("policy: %d pods over %d nodes, %d namespaces, %d policies; node n1 has %zu pods\n", kPods, kNodes, kNamespaces,
                kPolicies, rendered.ports.size());
    std::printf("policy: full compile for one node: median %.1f ms, max %.1f ms (target <= 1000 ms)\n", cp.p50, cp.max);
    std::printf("policy: %zu rules realized; policy stage %zu flows of %zu in the table (render %.1f ms); one flow per "
                "(pod, peer, port) would be %zu: %.0fx more\n",
                compiled.rules.size(), stage, total, renderMs, product, stage ? static_cast<double>(product) / static_cast<double>(stage) : 0.0);

    // The node's side of enforcement: compile + render + replace-flows into a real vswitchd.
    test::OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev", "fail_mode=secure"});
    const auto file = ovs.dir() + "/flows";
    std::vector<flows::Flow> installed;
    auto enforce = [&](bool whole) {
        auto t = Clock::now();
        auto r = flows::FlowTable::render(inputs(c, compilePolicy(c, "n1")));
        auto mods = whole ? std::nullopt : flows::flowModsBetween(installed, r.flows);
        std::ofstream(file) << (mods ? *mods : r.text());
        if (mods) ovs.ofctl({"bundle", "br-int", file});
        else ovs.ofctl({"--bundle", "replace-flows", "br-int", file});
        installed = r.flows;
        return ms(Clock::now() - t);
    };
    std::printf("policy: first install of the whole table: %.0f ms\n", enforce(true));
    for (bool whole : {false, true}) {
        std::vector<double> relabel, added;
        for (int i = 0; i < changes; ++i) {
            auto& p = c.pods[fmt::format("ns{}/pod{}", (i * 37) % kPods % kNamespaces, (i * 37) % kPods)];
            p.labels["app"] = fmt::format("a{}", (i * 7 + (whole ? 3 : 0)) % 20);
            relabel.push_back(enforce(whole));
            auto np = policyNumber(kPolicies + i + (whole ? changes : 0));
            c.policies[np.key()] = np;
            added.push_back(enforce(whole));
        }
        auto rl = percentiles(relabel), ad = percentiles(added);
        const char* how = whole ? "the whole table (replace-flows)" : "the difference (the flow job's way)";
        std::string target = whole ? "" : fmt::format(" (target p99 <= 100 ms, with the API's delivery: {})", rl.p99 <= 100 ? "met" : "MISSED");
        std::printf("policy: a pod's label changed, %s onto br-int: p50 %.0f ms, p99 %.0f ms%s\n", how, rl.p50, rl.p99, target.c_str());
        std::printf("policy: a policy added, %s onto br-int: p50 %.0f ms, p99 %.0f ms\n", how, ad.p50, ad.p99);
    }
    return 0;
}
