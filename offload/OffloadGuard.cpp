#include "offload/OffloadGuard.hpp"

#include <linux/rtnetlink.h>

#include <spdlog/spdlog.h>


#include "base/Error.hpp"

namespace kovs::offload {

OffloadGuard::OffloadGuard(std::vector<std::string> hostDevices, PodLister pods)
    : hostDevices_(hostDevices.begin(), hostDevices.end()), pods_(std::move(pods)) {}

OffloadGuard::~OffloadGuard() = default;

void OffloadGuard::failed(const std::string& what) {
    ++stats_.errors;
    if (stats_.lastError.failed(what)) spdlog::warn("offload guard: {}", stats_.lastError.str());
}

uint64_t OffloadGuard::repair(const std::vector<OffloadObservation>& observed) {
    stats_.checks += observed.size();
    auto plan = planOffload(observed);
    for (const auto& u : plan.unreadable) failed(u.where + ": " + u.error);
    uint64_t made = 0;
    for (const auto& r : plan.repairs) {
        try {
            applyOffloadRepair(r);
        } catch (const Error& e) {
            failed(r.where + ": " + e.what());
            continue;
        }
        ++made;
        ++stats_.repairs;
        if (r.aspect == OffloadObservation::Aspect::HostVeth) ++stats_.hostVethRepairs;
        spdlog::info("offload guard: {} (repair #{})", describe(r, false), stats_.repairs);
    }
    return made;
}

bool OffloadGuard::checkHostDevice(const std::string& name) { return repair({observeTxChecksum(name, "", name)}) > 0; }

std::vector<PodInterface> OffloadGuard::listPods() {
    if (!pods_) return {};
    try {
        auto pods = pods_();
        known_ = std::set<PodInterface>(pods.begin(), pods.end());
        return pods;
    } catch (const Error& e) {
        failed(std::string("listing pod interfaces: ") + e.what());
        return {};
    }
}

uint64_t OffloadGuard::sweep() {
    ++stats_.sweeps;
    return repair(observeOffload({hostDevices_.begin(), hostDevices_.end()}, listPods()));
}

// A CNI adds the port and moves the veth's peer in separate steps; a short
// delay also coalesces the updates of one ADD.
void OffloadGuard::portsChanged() {
    if (engine_) engine_->trigger(std::chrono::milliseconds(200));
}

void OffloadGuard::checkNewPods() {
    auto before = known_;
    std::vector<OffloadObservation> observed;
    for (const auto& pod : listPods()) {
        if (before.count(pod)) continue;
        for (auto& o : observePod(pod)) observed.push_back(std::move(o));
    }
    repair(observed);
}

void OffloadGuard::attach(EventLoop& loop, std::chrono::milliseconds resync) {
    if (engine_) throw Error("offload guard: already attached to a loop");
    // Host devices (gw0, the uplink) are re-checked when the kernel reports
    // a change of them: a re-created device comes back with offload on.
    linkEvents_.emplace(
        loop, "offload guard: link notifications", std::vector<int>{RTNLGRP_LINK},
        [this](const nlmsghdr* h) {
            std::string name(linkMessageName(h));
            if (h->nlmsg_type == RTM_NEWLINK && hostDevices_.count(name)) changedHostDevices_.insert(name);
        },
        [this](bool overflowed) { onLinkEvents(overflowed); });
    // A pass never fails: an interface that cannot be checked is counted and
    // named in the status, and the others are still checked.
    engine_.emplace(loop, ReconcileOptions{.job = "offload guard", .resync = resync}, [this](bool full, ReconcileEngine::Done done) {
        if (full) sweep();
        else checkNewPods();
        done(ReconcileEngine::Result::ok());
    });
    engine_->start();
}

void OffloadGuard::onLinkEvents(bool overflowed) {
    auto changed = std::move(changedHostDevices_);
    changedHostDevices_.clear();
    if (overflowed) {
        // Notifications were lost: we cannot know which device changed.
        spdlog::warn("offload guard: link notifications overflowed; sweeping");
        engine_->runNow(true);
        return;
    }
    for (const auto& name : changed) checkHostDevice(name);
}

void OffloadGuard::status(nlohmann::json& out) const {
    size_t foreign = 0;
    for (const auto& p : known_) foreign += p.foreign ? 1 : 0;
    out["offload"] = {{"checked", stats_.checks},
                      {"pods", known_.size()},
                      {"foreignPods", foreign},
                      {"repaired", stats_.repairs},
                      {"hostVethsIsolated", stats_.hostVethRepairs},
                      {"errors", stats_.errors},
                      {"lastError", stats_.lastError.str()}};
    if (engine_) engine_->status(out["offload"]);
}

void OffloadGuard::metrics(MetricsText& m) const {
    const char* help =
        "Repairs by the offload guard, by kind: TX checksum offload turned off again, a pod veth's host end taken off "
        "the node's IP stack.";
    m.counter("kovs_offload_repairs_total", help, static_cast<double>(stats_.repairs - stats_.hostVethRepairs),
              {{"kind", "tx_checksum"}});
    m.counter("kovs_offload_repairs_total", help, static_cast<double>(stats_.hostVethRepairs), {{"kind", "host_veth"}});
    m.counter("kovs_offload_checks_total", "Offload guard checks (TX checksum and pod veth host ends).",
              static_cast<double>(stats_.checks));
    if (engine_) engine_->metrics(m);
}

}  // namespace kovs::offload
