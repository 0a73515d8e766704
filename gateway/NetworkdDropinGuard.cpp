#include "gateway/NetworkdDropinGuard.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <set>

#include "base/Strings.hpp"

namespace kovs::gateway {

NetworkdDropinGuard::NetworkdDropinGuard(EventLoop& loop, std::string dir, std::vector<NetworkdLink> links, RepairLog& log,
                                         std::chrono::milliseconds resync)
    : loop_(loop), dropins_(std::move(dir)), links_(std::move(links)), log_(log),
      engine_(loop, {.job = "networkd drop-ins", .resync = resync},
              [this](bool, ReconcileEngine::Done done) { pass(std::move(done)); }) {}

void NetworkdDropinGuard::start() {
    // Before any device kovs makes exists: a networkd that (re)loads its
    // configuration meanwhile must already find them marked unmanaged.
    dropins_.install(dropins_.missing(links_));
    std::set<std::string> names;
    for (const auto& l : links_) names.insert(std::filesystem::path(dropins_.pathFor(l)).filename().string());
    watch_.emplace(loop_, dropins_.dir(), std::move(names), [this] { engine_.trigger(); });
    engine_.start();
}

void NetworkdDropinGuard::pass(ReconcileEngine::Done done) {
    auto todo = dropins_.missing(links_);
    if (todo.empty()) return done(ReconcileEngine::Result::ok());
    auto what = "drop-ins " + join(todo, ", ", [](const NetworkdLink& l) -> const std::string& { return l.stem; }) + " in " +
                dropins_.dir() + " removed or changed";
    if (!engine_.admitRepair(what)) return done(ReconcileEngine::Result::ok());
    dropins_.install(todo);  // throws: a failed pass, retried with backoff
    rewritten_ += todo.size();
    spdlog::warn("networkd drop-ins: {}; written again", what);
    log_.record("networkd", what + "; written again");
    done(ReconcileEngine::Result::ok());
}

void NetworkdDropinGuard::status(nlohmann::json& out) const {
    auto& s = out["networkdDropins"];
    auto matches = nlohmann::json::array();
    for (const auto& l : links_) matches.push_back(l.match);
    s = {{"dir", dropins_.dir()}, {"interfaces", matches}, {"rewritten", rewritten_}};
    engine_.status(s);
}

void NetworkdDropinGuard::metrics(MetricsText& m) const {
    m.counter("kovs_networkd_dropins_rewritten_total",
              "systemd-networkd drop-ins (Unmanaged=yes for kovs's links) written again after they were removed or changed.",
              static_cast<double>(rewritten_));
    engine_.metrics(m);
}

}  // namespace kovs::gateway
