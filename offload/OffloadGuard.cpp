#include "offload/OffloadGuard.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/Error.hpp"
#include "base/Ethtool.hpp"
#include "base/HostVeth.hpp"
#include "base/Netns.hpp"

namespace kovs::offload {

OffloadGuard::OffloadGuard(std::vector<std::string> hostDevices, PodLister pods)
    : hostDevices_(hostDevices.begin(), hostDevices.end()), pods_(std::move(pods)) {}

OffloadGuard::~OffloadGuard() {
    if (!loop_) return;
    if (resyncTimer_) loop_->cancel(resyncTimer_);
    if (newPodsTimer_) loop_->cancel(newPodsTimer_);
    if (linkEvents_) loop_->unwatch(linkEvents_.get());
}

bool OffloadGuard::check(const std::string& where, Repair kind, const std::function<bool()>& repair) {
    ++stats_.checks;
    try {
        if (!repair()) return false;
        ++stats_.repairs;
        if (kind == Repair::HostVeth) ++stats_.hostVethRepairs;
        spdlog::info("offload guard: {}: {} (repair #{})", where,
                     kind == Repair::HostVeth ? "host end of a pod veth was on the node's IP stack, isolated it"
                                              : "tx-checksumming was on, turned it off",
                     stats_.repairs);
        return true;
    } catch (const Error& e) {
        ++stats_.errors;
        stats_.lastError = where + ": " + e.what();
        spdlog::warn("offload guard: {}", stats_.lastError);
        return false;
    }
}

bool OffloadGuard::checkHostDevice(const std::string& name) {
    return check(name, Repair::TxChecksum, [&] { return Ethtool().ensureTxChecksumOff(name); });
}

std::vector<PodInterface> OffloadGuard::listPods() {
    if (!pods_) return {};
    try {
        auto pods = pods_();
        known_ = std::set<PodInterface>(pods.begin(), pods.end());
        return pods;
    } catch (const Error& e) {
        ++stats_.errors;
        stats_.lastError = std::string("listing pod interfaces: ") + e.what();
        spdlog::warn("offload guard: {}", stats_.lastError);
        return {};
    }
}

void OffloadGuard::checkPod(const PodInterface& pod) {
    auto where = (pod.pod.empty() ? "" : "pod " + pod.pod + " ") + "(" + pod.netns + ":" + pod.ifname + ")";
    check(where, Repair::TxChecksum, [&] {
        Netns in(pod.netns);
        return Ethtool().ensureTxChecksumOff(pod.ifname);
    });
    // A foreign pod's host end is its CNI's: hostIfname is empty for those.
    if (!pod.hostIfname.empty()) check(pod.hostIfname, Repair::HostVeth, [&] { return isolateHostVeth(pod.hostIfname); });
}

uint64_t OffloadGuard::sweep() {
    ++stats_.sweeps;
    uint64_t before = stats_.repairs;
    for (const auto& dev : hostDevices_) checkHostDevice(dev);
    for (const auto& pod : listPods()) checkPod(pod);
    return stats_.repairs - before;
}

void OffloadGuard::portsChanged() {
    if (!loop_ || newPodsTimer_) return;
    // A CNI adds the port and moves the veth's peer in separate steps; a short
    // delay also coalesces the updates of one ADD.
    newPodsTimer_ = loop_->after(std::chrono::milliseconds(200), [this] {
        newPodsTimer_ = 0;
        checkNewPods();
    });
}

void OffloadGuard::checkNewPods() {
    auto before = known_;
    for (const auto& pod : listPods()) {
        if (!before.count(pod)) checkPod(pod);
    }
}

void OffloadGuard::attach(EventLoop& loop, std::chrono::milliseconds resync) {
    if (loop_) throw Error("offload guard: already attached to a loop");
    loop_ = &loop;
    resync_ = resync;
    linkEvents_.reset(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE));
    if (!linkEvents_) throwErrno("offload guard: netlink socket");
    sockaddr_nl sa{};
    sa.nl_family = AF_NETLINK;
    sa.nl_groups = RTMGRP_LINK;
    if (::bind(linkEvents_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
        throwErrno("offload guard: bind RTMGRP_LINK");
    }
    loop.watch(linkEvents_.get(), EPOLLIN, [this](uint32_t) { onLinkEvents(); });
    scheduleResync();
}

void OffloadGuard::scheduleResync() {
    resyncTimer_ = loop_->after(resync_, [this] {
        resyncTimer_ = 0;
        sweep();
        scheduleResync();
    });
}

void OffloadGuard::onLinkEvents() {
    alignas(nlmsghdr) char buf[32768];
    std::set<std::string> seen;
    while (true) {
        ssize_t n = ::recv(linkEvents_.get(), buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOBUFS) {
                // Notifications were lost: we cannot know which device changed.
                spdlog::warn("offload guard: link notifications overflowed; sweeping");
                sweep();
                continue;
            }
            break;  // EAGAIN: drained
        }
        auto len = static_cast<size_t>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg))) continue;
            auto* ifi = static_cast<ifinfomsg*>(NLMSG_DATA(h));
            auto attrLen = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(ifinfomsg)));
            for (auto* a = IFLA_RTA(ifi); RTA_OK(a, attrLen); a = RTA_NEXT(a, attrLen)) {
                if (a->rta_type != IFLA_IFNAME || RTA_PAYLOAD(a) == 0) continue;
                std::string name(static_cast<const char*>(RTA_DATA(a)), strnlen(static_cast<const char*>(RTA_DATA(a)), RTA_PAYLOAD(a)));
                if (hostDevices_.count(name)) seen.insert(name);
            }
        }
    }
    for (const auto& name : seen) checkHostDevice(name);
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
                      {"lastError", stats_.lastError}};
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
}

}  // namespace kovs::offload
