#include "uplink/Uplink.hpp"

#include <algorithm>

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "base/UndoStack.hpp"
#include "base/Strings.hpp"

namespace kovs::uplink {
namespace {

// A migration needs two passes (the shim, then everything after OVS is
// ready); more means something keeps undoing the work.
constexpr int kMaxPasses = 5;


}  // namespace

Uplink::Uplink(UplinkOptions opts) : opts_(opts), kernel_(std::move(opts)) {}

UplinkOvsSide Uplink::ovsSide(const ovs::OvsdbReplica& replica) { return uplink::ovsSide(opts_, kernel_.observe(&replica)); }

UplinkPlan Uplink::plan(const ovs::OvsdbReplica& replica) {
    auto o = kernel_.observe(&replica);
    return planMigration(opts_, desire(opts_, o), o);
}

Uplink::Outcome Uplink::migrate(const ovs::OvsdbReplica& replica, const std::function<void()>& idle) {
    const std::string what = "uplink " + opts_.device + " -> " + opts_.bridge + " (" + modeName(opts_.mode) + ")";
    UndoStack undo("uplink rollback");
    auto deadline = std::chrono::steady_clock::now() + opts_.ovsTimeout;
    std::string step = "observe";
    bool changed = false;
    int passes = 0;
    try {
        while (true) {
            step = "observe";
            auto o = kernel_.observe(&replica);
            auto want = desire(opts_, o);
            auto plan = planMigration(opts_, want, o);
            if (!plan.blocked.empty()) {
                step = "check OVS";
                throw Error(plan.blocked);
            }
            if (plan.converged()) break;
            if (plan.steps.empty()) {
                step = "wait for " + plan.waitingFor;
                if (std::chrono::steady_clock::now() >= deadline)
                    throw Error("not done within " + std::to_string(opts_.ovsTimeout.count()) + " ms");
                idle();
                continue;
            }
            if (++passes > kMaxPasses) {
                step = "converge";
                throw Error("still not migrated after " + std::to_string(kMaxPasses) + " passes: " + join(plan.describeSteps()));
            }
            if (passes == 1) spdlog::info("uplink: moving {} to {} ({} mode, addressing from {})", opts_.device, opts_.bridge,
                                          modeName(opts_.mode), want.source);
            for (const auto& s : plan.steps) {
                step = describe(s.action);
                spdlog::debug("uplink: {}", step);
                kernel_.apply(s.action);
                if (!std::holds_alternative<step::WriteRecord>(s.action)) changed = true;
                if (s.undo) undo.push(step, [this, u = *s.undo] { kernel_.apply(u); });
            }
        }
    } catch (const std::exception& e) {
        spdlog::error("uplink: {} failed: {}; undoing {} step(s)", step, e.what(), undo.size());
        undo.unwind();
        throw Error(what + ": " + step + ": " + e.what());
    }
    undo.commit();
    if (changed) spdlog::info("uplink: {} moved to {} ({} mode, port {})", opts_.device, opts_.bridge, modeName(opts_.mode), opts_.port());
    return changed ? Outcome::Migrated : Outcome::AlreadyMigrated;
}

bool Uplink::cleanup() {
    auto o = kernel_.observe(nullptr);
    auto plan = planCleanup(opts_, o);
    auto restore = addressesToRestore(opts_, o);
    // A rescue goes as far as it can: a step that fails is logged, the next one runs.
    for (const auto& s : plan.steps) {
        try {
            kernel_.apply(s.action);
        } catch (const std::exception& e) {
            spdlog::warn("uplink cleanup: {} failed: {}", describe(s.action), e.what());
        }
    }
    auto after = kernel_.observe(nullptr);
    auto held = movableAddresses(after.deviceAddresses);
    for (const auto& a : restore) {
        bool back = std::any_of(held.begin(), held.end(), [&](const AddressInfo& h) { return h.sameAddress(a); });
        if (!back) throw Error("uplink cleanup: " + a.str() + " could not be restored on " + opts_.device + "; record kept in " + opts_.recordFile);
    }
    bool changed = !plan.steps.empty();
    if (after.record) {
        removeRecord(opts_.recordFile);
        changed = true;
    }
    if (changed) spdlog::info("uplink: {} restored from {}", opts_.device, opts_.bridge);
    return changed;
}

}  // namespace kovs::uplink
