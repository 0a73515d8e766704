#pragma once
// The networkd drop-ins job (gateway/NetworkdDropins.hpp says what they are):
// written at start-up before any device kovs makes exists, and kept: a
// drop-in removed or rewritten behind the agent's back (a config management
// run that prunes /run/systemd/network, a person) is written again at once
// (inotify on the directory; the resync backs it up), so that networkd's next
// reload still finds kovs's links unmanaged. It runs on its ReconcileEngine:
// a writer that keeps undoing it is held back and reported as contested.
// networkd itself is never told to reload: a link it took over while a
// drop-in was missing stays its own until its next reload (doctor says so).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/DirectoryWatch.hpp"
#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "base/ReconcileEngine.hpp"
#include "base/RepairLog.hpp"
#include "gateway/NetworkdDropins.hpp"

namespace kovs::gateway {

class NetworkdDropinGuard : public Job {
public:
    // `log` must outlive the guard.
    NetworkdDropinGuard(EventLoop& loop, std::string dir, std::vector<NetworkdLink> links, RepairLog& log,
                        std::chrono::milliseconds resync);

    // Writes the missing drop-ins now (throws kovs::Error when it cannot:
    // the agent does not start without them), then keeps them.
    void start();

    uint64_t rewritten() const { return rewritten_; }

    std::string name() const override { return "networkdDropins"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;

private:
    void pass(ReconcileEngine::Done done);

    EventLoop& loop_;
    NetworkdDropins dropins_;
    std::vector<NetworkdLink> links_;
    RepairLog& log_;
    uint64_t rewritten_ = 0;  // after start-up
    ReconcileEngine engine_;
    std::optional<DirectoryWatch> watch_;
};

}  // namespace kovs::gateway
