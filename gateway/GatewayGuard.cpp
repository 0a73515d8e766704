#include "gateway/GatewayGuard.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"
#include "base/InterfaceName.hpp"

namespace kovs::gateway {
namespace {

// Retries of a failed reconcile that no event will announce: 100 ms, then
// doubling while it keeps failing, so a lasting failure (EPERM) costs one
// attempt per 5 s, not ten a second. Usually a pass fails because gw0 changed
// under it (an address flushed again between our address and route steps):
// the events of that change trigger the next pass at once, the retry never
// delays an event, and a flush racing a pass fails a few in a row, so only
// a streak of three is news.
constexpr std::chrono::milliseconds kRetryMin{100};
constexpr std::chrono::milliseconds kRetryMax{5000};
constexpr unsigned kQuietFailures = 3;

void validateRoutes(const GatewayGuardOptions& o) {
    for (const auto& r : o.routes) {
        if (r.gateway && r.gateway->family != r.dst.family)
            throw Error("gateway guard " + o.name + ": route " + r.dst.str() + " via " + r.gateway->addressString() +
                        " mixes address families");
    }
}

void validate(const GatewayGuardOptions& o) {
    checkInterfaceName("gateway guard: interface", o.name);
    if (o.mtu && (*o.mtu < 68 || *o.mtu > 65535))
        throw Error("gateway guard " + o.name + ": MTU " + std::to_string(*o.mtu) + " out of range 68..65535");
    if (!o.enabled) return;
    if (o.addresses.empty() && !o.adoptAddresses)
        throw Error("gateway guard " + o.name + ": no gateway address configured (and none to adopt from the device)");
    if (!o.addresses.empty() && o.adoptAddresses)
        throw Error("gateway guard " + o.name + ": addresses are either configured or adopted from the device, not both");
    validateRoutes(o);
    if (o.resyncInterval.count() <= 0) throw Error("gateway guard " + o.name + ": resync interval must be positive");
    if (o.coalesceDelay.count() < 0) throw Error("gateway guard " + o.name + ": coalesce delay must not be negative");
}

}  // namespace

GatewayGuard::GatewayGuard(EventLoop& loop, GatewayGuardOptions options)
    : loop_(loop), opt_(std::move(options)),
      link_(loop, opt_.name, opt_.mtu, [this] { engine_.runNow(); }), sysctls_(opt_.name),
      addresses_(opt_.name, {opt_.addresses, opt_.adoptAddresses}),
      engine_(loop,
              {.job = "gateway guard " + opt_.name, .resync = opt_.resyncInterval, .coalesce = opt_.coalesceDelay,
               .retryMin = kRetryMin, .retryMax = kRetryMax, .quietFailures = kQuietFailures},
              [this](bool, ReconcileEngine::Done done) {
                  pass();
                  done(ReconcileEngine::Result::ok());
              }) {
    validate(opt_);
    if (!opt_.enabled) {
        spdlog::info("gateway guard {}: disabled", opt_.name);
        return;
    }
    nl_.emplace();
    watcher_.emplace(loop_, opt_.name, [this] {
        if (!damageSeen_) damageSeen_ = EventLoop::Clock::now();
        engine_.trigger();
    });
    watcher_->ignoreSender(nl_->localPort());
    engine_.start();
}

GatewayGuard::~GatewayGuard() { engine_.stop(); }

GatewayGuardStats GatewayGuard::stats() const {
    std::lock_guard lock(statsMutex_);
    GatewayGuardStats s = stats_;
    s.reconciles = engine_.passes();
    s.failures = engine_.failures();
    if (watcher_) s.events = watcher_->counters();
    return s;
}

void GatewayGuard::setRoutes(std::vector<RouteInfo> routes) {
    GatewayGuardOptions next = opt_;
    next.routes = std::move(routes);
    validateRoutes(next);  // a bad route changes nothing
    opt_.routes = std::move(next.routes);
    opt_.routesComplete = true;
    engine_.trigger();
}

void GatewayGuard::setMtu(int mtu) {
    GatewayGuardOptions next = opt_;
    next.mtu = mtu;
    validate(next);
    opt_.mtu = mtu;
    link_.setMtu(mtu);
    engine_.trigger();
}

void GatewayGuard::reconcileNow() { engine_.runNow(); }

void GatewayGuard::pass() {
    auto start = damageSeen_.value_or(EventLoop::Clock::now());
    damageSeen_.reset();
    GatewayRepairs r;
    bool present = false;
    try {
        auto link = nl_->link(opt_.name);
        if (!link) {
            watcher_->setIfindex(0);
            spdlog::debug("gateway guard {}: link absent, waiting for it", opt_.name);
        } else {
            present = true;
            watcher_->setIfindex(link->index);
            link_.reconcile(*nl_, *link, r);
            if (opt_.serviceSysctls) sysctls_.reconcile(r);
            addresses_.reconcile(*nl_, r);
            reconcileGatewayRoutes(*nl_, opt_.name, desiredGatewayRoutes(addresses_.guarded(), opt_.routes), opt_.routesComplete, r);
        }
    } catch (...) {
        if (!damageSeen_) damageSeen_ = start;  // the restore is not over
        record(r, present, false, {});
        throw;
    }
    auto took = EventLoop::Clock::now() - start;
    if (r.total() > 0 && onRestore_) onRestore_(took);
    record(r, present, r.total() > 0, took);
}

void GatewayGuard::record(const GatewayRepairs& r, bool present, bool repaired, std::chrono::nanoseconds took) {
    std::lock_guard lock(statsMutex_);
    stats_.linkPresent = present;
    stats_.linkUp += r.linkUp;
    stats_.mtuFixed += r.mtu;
    stats_.addressesAdded += r.addrAdded;
    stats_.addressesRemoved += r.addrRemoved;
    stats_.routesAdded += r.routeAdded;
    stats_.routesRemoved += r.routeRemoved;
    stats_.addressesAdded6 += r.addrAdded6;
    stats_.routesAdded6 += r.routeAdded6;
    stats_.sysctlsFixed += r.sysctl;
    stats_.mtuHeld += r.mtuHeld;
    stats_.mtuContested = link_.mtuContested();
    if (!repaired) return;
    ++stats_.restores;
    stats_.lastRestore = took;
    stats_.maxRestore = std::max(stats_.maxRestore, stats_.lastRestore);
    stats_.totalRestore += took;
    restoreLatency_.observe(took);
    spdlog::info("gateway guard {}: repaired in {} us (link up {}, mtu {}, sysctl {}, +addr {}, -addr {}, +route {}, -route {})",
                 opt_.name, std::chrono::duration_cast<std::chrono::microseconds>(took).count(), r.linkUp, r.mtu, r.sysctl,
                 r.addrAdded, r.addrRemoved, r.routeAdded, r.routeRemoved);
}

void GatewayGuard::status(nlohmann::json& out) const {
    auto g = stats();
    auto addrs = nlohmann::json::array();
    for (const auto& a : addresses_.guarded()) addrs.push_back(a.str());
    out["gateway"] = {{"name", opt_.name}, {"guard", opt_.enabled}, {"present", g.linkPresent}, {"addresses", addrs},
                      {"addressesFrom", opt_.adoptAddresses ? "device" : "config"},
                      {"mtu", opt_.mtu ? nlohmann::json(*opt_.mtu) : nlohmann::json()},
                      {"mtuContested", link_.mtuContested()}, {"mtuRepairsHeld", g.mtuHeld},
                      {"restores", g.restores}, {"failures", g.failures},
                      {"lastRestoreMicros", g.lastRestore.count() / 1000}};
    engine_.status(out["gateway"]);
}

void GatewayGuard::metrics(MetricsText& m) const {
    auto g = stats();
    const char* help = "Repairs of the gateway interface, by kind (addresses and routes also by family).";
    m.counter("kovs_gateway_repairs_total", help, static_cast<double>(g.addressesAdded - g.addressesAdded6),
              {{"kind", "address"}, {"family", "ipv4"}});
    m.counter("kovs_gateway_repairs_total", help, static_cast<double>(g.addressesAdded6), {{"kind", "address"}, {"family", "ipv6"}});
    m.counter("kovs_gateway_repairs_total", help, static_cast<double>(g.routesAdded - g.routesAdded6), {{"kind", "route"}, {"family", "ipv4"}});
    m.counter("kovs_gateway_repairs_total", help, static_cast<double>(g.routesAdded6), {{"kind", "route"}, {"family", "ipv6"}});
    m.counter("kovs_gateway_repairs_total", help, static_cast<double>(g.linkUp), {{"kind", "link_up"}});
    m.counter("kovs_gateway_repairs_total", help, static_cast<double>(g.mtuFixed), {{"kind", "mtu"}});
    m.counter("kovs_gateway_repairs_total", help, static_cast<double>(g.sysctlsFixed), {{"kind", "sysctl"}});
    m.counter("kovs_gateway_restores_total", "Reconciles of the gateway that repaired something.", static_cast<double>(g.restores));
    m.gauge("kovs_gateway_contested", "1 while a value of the gateway keeps being changed under the guard (its repairs held back).",
            link_.mtuContested() ? 1 : 0, {{"kind", "mtu"}});
    m.counter("kovs_gateway_repairs_held_total", "Gateway repairs the guard held back because the value kept being changed under it.",
              static_cast<double>(g.mtuHeld), {{"kind", "mtu"}});
    engine_.metrics(m);
    std::lock_guard lock(statsMutex_);
    restoreLatency_.write(m, "kovs_gateway_restore_seconds", "Time from damage to the gateway to its repair.");
}

std::string GatewayGuard::notReady() const {
    if (opt_.enabled && !stats().linkPresent) return opt_.name + " missing";
    return "";
}

}  // namespace kovs::gateway
