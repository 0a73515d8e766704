#include "egress/EgressReconciler.hpp"

#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"
#include "base/LinkAddresses.hpp"

namespace kovs::egress {
namespace {

// Notifications come in bursts (one per rule of a transaction): one pass after them.
constexpr std::chrono::milliseconds kCoalesce{20};

}  // namespace

EgressInputs egressInputs(const EgressOptions& opts, const std::vector<IpPrefix>& peerPodCidrs,
                          const std::vector<IpPrefix>& peerNodeAddresses) {
    EgressInputs in;
    in.clusterCidrs = opts.clusterCidrs;
    in.nonMasquerade = opts.nonMasquerade;
    in.podCidrs = opts.localPodCidrs;
    in.podCidrs.insert(in.podCidrs.end(), peerPodCidrs.begin(), peerPodCidrs.end());
    in.nodeAddresses = peerNodeAddresses;
    for (const auto& dev : opts.nodeAddressDevices) {
        for (const auto& a : linkAddresses(dev)) in.nodeAddresses.push_back(a);
    }
    return in;
}

EgressReconciler::EgressReconciler(EventLoop& loop, RepairLog& repairs, EgressOptions opts)
    : loop_(loop), repairs_(repairs), opts_(std::move(opts)),
      engine_(loop, {.job = "egress", .resync = opts_.resync}, [this](bool, ReconcileEngine::Done done) {
          pass();
          done(ReconcileEngine::Result::ok());
      }) {}

EgressReconciler::~EgressReconciler() {
    if (events_) loop_.unwatch(events_.get());
}

void EgressReconciler::start() {
    if (engine_.started()) return;
    events_.reset(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_NETFILTER));
    sockaddr_nl sa{};
    sa.nl_family = AF_NETLINK;
    sa.nl_groups = 1u << (NFNLGRP_NFTABLES - 1);
    if (!events_ || ::bind(events_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
        spdlog::warn("egress: cannot watch nftables changes ({}); relying on the periodic resync", std::strerror(errno));
        events_.reset();
    } else {
        loop_.watch(events_.get(), EPOLLIN, [this](uint32_t) { onRulesetEvents(); });
    }
    engine_.start();
}

void EgressReconciler::setPeers(std::vector<IpPrefix> podCidrs, std::vector<IpPrefix> nodeAddresses) {
    peerPodCidrs_ = std::move(podCidrs);
    peerNodeAddresses_ = std::move(nodeAddresses);
    engine_.trigger();
}

void EgressReconciler::onRulesetEvents() {
    char buf[8192];
    bool any = false;
    ssize_t n;
    while ((n = ::recv(events_.get(), buf, sizeof buf, 0)) > 0 || (n < 0 && errno == ENOBUFS)) any = true;
    if (any) engine_.trigger(kCoalesce);
}

std::string EgressReconciler::Rules::describe() const {
    std::string out = v4.empty() ? "" : v4.describe();
    if (!v6.empty()) out += (out.empty() ? "" : "; ") + std::string("ip6: ") + v6.describe();
    return out;
}

std::string EgressReconciler::readBack() const { return nat4_.readBack() + "-- ip6\n" + nat6_.readBack(); }

EgressReconciler::Rules EgressReconciler::plan() const {
    auto in = egressInputs(opts_, peerPodCidrs_, peerNodeAddresses_);
    return {planEgress(in, AF_INET), planEgress(in, AF_INET6)};
}

void EgressReconciler::pass() {
    try {
        auto want = plan();
        auto have = readBack();
        bool drifted = installed_ && *installed_ == want && have != expected_;
        if (installed_ && *installed_ == want && !drifted) return;
        if (drifted) {
            // Someone removed or changed our table; put it back, but do not fight.
            if (!engine_.admitRepair("the egress tables (ip kovs, ip6 kovs)")) return;
            ++readBackRepairs_;
            repairs_.record("egress", "the egress tables differed from the rules installed: restored");
        }
        for (auto [nat, rules] : {std::pair{&nat4_, &want.v4}, {&nat6_, &want.v6}}) {
            if (rules->empty()) {
                nat->remove();
            } else {
                nat->replace(*rules);
            }
        }
        expected_ = readBack();
        if (!installed_ || !(*installed_ == want)) spdlog::info("egress: {}", want.describe());
        installed_ = want;
        ++installs_;
    } catch (...) {
        installed_.reset();  // whatever the kernel holds now, the next pass installs
        throw;
    }
}

void EgressReconciler::status(nlohmann::json& out) const {
    out["egress"] = {{"rules", installed_ ? installed_->describe() : ""},
                     {"installs", installs_},
                     {"readBackRepairs", readBackRepairs_},
                     {"contested", engine_.contested()},
                     {"error", engine_.lastError()}};
    engine_.status(out["egress"]);
}

void EgressReconciler::metrics(MetricsText& m) const {
    m.counter("kovs_egress_installs_total", "Egress masquerade rule sets installed (tables ip kovs and ip6 kovs).",
              static_cast<double>(installs_));
    m.counter("kovs_egress_readback_repairs_total", "Times an egress table was found changed or gone and restored.",
              static_cast<double>(readBackRepairs_));
    m.gauge("kovs_egress_contested", "1 while the egress tables keep being changed under the agent (repairs backed off).",
            engine_.contested() ? 1 : 0);
    engine_.metrics(m);
}

std::string EgressReconciler::notReady() const {
    auto error = engine_.lastError();
    return error.empty() ? "" : "egress: " + error;
}

}  // namespace kovs::egress
