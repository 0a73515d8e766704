#include "flows/PolicyLogger.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kovs::flows {
namespace {

const char* verdict(const LoggedDecision& d) { return d.allowed ? "allow" : "deny"; }

std::string withPod(const std::string& endpoint, const std::string& pod) { return pod.empty() ? endpoint : endpoint + " (" + pod + ")"; }

std::string decidedBy(const LoggedDecision& d) {
    if (d.rule.empty()) return fmt::format("{} {}: isolated by {}, no rule allowed it", d.ingress ? "ingress" : "egress", d.tier, d.policy);
    return fmt::format("{} {} {} rule {}", d.ingress ? "ingress" : "egress", d.tier, d.policy, d.rule);
}

}  // namespace

nlohmann::json PolicyLogEntry::json() const {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
    return {{"seq", seq},
            {"time", fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(time)), ms % 1000)},
            {"unixMs", ms},
            {"verdict", verdict(decision)},
            {"direction", decision.ingress ? "ingress" : "egress"},
            {"tier", decision.tier},
            {"policy", decision.policy},
            {"rule", decision.rule},
            {"protocol", protocol},
            {"source", source},
            {"sourcePod", sourcePod},
            {"destination", destination},
            {"destinationPod", destinationPod},
            {"packets", packets}};
}

std::string PolicyLogEntry::line() const {
    return fmt::format("{} {} {} -> {} {}{}", verdict(decision), protocol, withPod(source, sourcePod), withPod(destination, destinationPod),
                       decidedBy(decision), packets > 1 ? fmt::format(" ({} packets)", packets) : "");
}

PolicyLogger::PolicyLogger(EventLoop& loop, PolicyLogFlows flows, PolicyLoggerOptions opts, PodAt podAt)
    : flows_(flows), opts_(std::move(opts)), podAt_(std::move(podAt)),
      client_(loop, ovs::PacketInClientOptions{.socketPath = opts_.socketPath,
                                            .meters = {{opts_.meterId, opts_.ratePktps}},
                                            .statsInterval = opts_.meterStatsInterval},
              [this](const ovs::openflow::PacketIn& p) { onPacketIn(p); }) {
    client_.setReadyHandler([this](bool ready, uint32_t generation) {
        // Controller actions only while this vswitchd has the meter (PolicyLog.hpp).
        flows_.setLogging(ready ? PolicyLogging{opts_.meterId, generation} : PolicyLogging{});
    });
}

void PolicyLogger::start() { client_.start(); }

bool PolicyLogger::fold(const std::string& key, std::chrono::steady_clock::time_point now) {
    while (!recentOrder_.empty() &&
           (now - recentOrder_.front().first > opts_.foldWindow || recent_.size() > opts_.foldMax || recentOrder_.size() > 4 * opts_.foldMax)) {
        auto it = recent_.find(recentOrder_.front().second);
        if (it != recent_.end() && it->second.second == recentOrder_.front().first) recent_.erase(it);
        recentOrder_.pop_front();
    }
    recentOrder_.emplace_back(now, key);
    auto it = recent_.find(key);
    if (it == recent_.end()) {
        recent_[key] = {nextSeq_, now};
        return false;
    }
    it->second.second = now;
    const uint64_t seq = it->second.first;
    if (!ring_.empty() && seq >= ring_.front().seq && seq - ring_.front().seq < ring_.size()) ++ring_[seq - ring_.front().seq].packets;
    ++folded_;
    return true;
}

void PolicyLogger::onPacketIn(const ovs::openflow::PacketIn& p) {
    const auto decisions = flows_.decisions();
    auto d = decisions->find(p.cookie);
    if (d == decisions->end()) {
        // A flow of a table rendered before the last: its rule may be another's now.
        ++unknownCookie_;
        return;
    }
    const auto h = ovs::parsePacketHeaders(p.data);
    if (!h) {
        ++unreadable_;
        return;
    }
    const auto key = fmt::format("{:x} {} {} {}", p.cookie, h->protocol, h->sourceText(), h->destinationText());
    if (fold(key, std::chrono::steady_clock::now())) return;
    PolicyLogEntry e;
    e.seq = nextSeq_++;
    e.time = std::chrono::system_clock::now();
    e.decision = d->second;
    e.protocol = h->protocolName();
    e.source = h->sourceText();
    e.destination = h->destinationText();
    if (podAt_) {
        e.sourcePod = podAt_(h->source);
        e.destinationPod = podAt_(h->destination);
    }
    spdlog::info("policy log: {}", e.line());
    ++counts_[{e.decision.tier, e.decision.policy, verdict(e.decision)}];
    ring_.push_back(std::move(e));
    while (ring_.size() > opts_.entries) ring_.pop_front();
}

nlohmann::json PolicyLogger::entries(uint64_t after, size_t limit) const {
    // A seq past the last one: the agent restarted since, and counts from 1 again.
    if (after >= nextSeq_) after = 0;
    auto out = nlohmann::json::array();
    uint64_t last = after;
    for (const auto& e : ring_) {
        if (e.seq <= after) continue;
        if (out.size() == limit) break;
        out.push_back(e.json());
        last = e.seq;
    }
    return {{"entries", std::move(out)}, {"last", last}, {"first", ring_.empty() ? nextSeq_ : ring_.front().seq}};
}

void PolicyLogger::status(nlohmann::json& out) const {
    auto& s = out["policyLog"];
    s["connected"] = client_.connected();
    s["meterSet"] = client_.metersReady();
    s["generation"] = client_.connects();  // of the connection: in the flows' controller(userdata=...)
    s["meter"] = {{"id", opts_.meterId}, {"ratePktps", opts_.ratePktps}};
    if (const auto* m = client_.meterStats(opts_.meterId)) {
        s["meter"]["packets"] = m->packetsIn;
        s["meter"]["dropped"] = m->bandDrops.empty() ? 0 : m->bandDrops[0];
    }
    s["entries"] = nextSeq_ - 1;
    s["kept"] = ring_.size();
    s["folded"] = folded_;
    s["packetIns"] = client_.packetIns();
    s["unknownCookie"] = unknownCookie_;
    s["unreadable"] = unreadable_ + client_.malformed();
    s["loggedFlows"] = flows_.decisions()->size();
    if (!client_.lastError().empty()) s["lastError"] = client_.lastError();
}

void PolicyLogger::metrics(MetricsText& out) const {
    for (const auto& [k, n] : counts_) {
        const auto& [tier, policy, verdict] = k;
        out.counter("kovs_policy_log_entries_total", "New connections a logged policy decided, logged (kovs.dev/log)", double(n),
                    {{"tier", tier}, {"policy", policy}, {"verdict", verdict}});
    }
    out.counter("kovs_policy_log_packet_ins_total", "Packets of logged decisions that reached the agent (past the meter)",
                double(client_.packetIns()));
    out.counter("kovs_policy_log_folded_total", "Packets folded into the entry of their connection (retries)", double(folded_));
    if (const auto* m = client_.meterStats(opts_.meterId)) {
        out.counter("kovs_policy_log_meter_dropped_total", "Packets of logged decisions the meter kept from the agent (a flood)",
                    double(m->bandDrops.empty() ? 0 : m->bandDrops[0]));
    }
    out.gauge("kovs_policy_log_connected", "The OpenFlow connection that receives the policy log is up, its meter set",
              client_.metersReady() ? 1 : 0);
}

}  // namespace kovs::flows
