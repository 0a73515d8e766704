#pragma once
// Helpers for the gateway guard's integration tests and benchmark: the guard
// running on its own event-loop thread (as in the agent), and an independent
// observer of gw0 that reads the kernel through `ip -j`, not through the
// guard's code.
#include <sys/resource.h>

#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gateway/GatewayGuard.hpp"
#include "base/EventLoop.hpp"
#include "base/Process.hpp"

namespace kovs::test {

class GuardThread {
public:
    explicit GuardThread(gateway::GatewayGuardOptions options) {
        std::promise<void> ready;
        auto started = ready.get_future();
        thread_ = std::thread([this, options, &ready] {
            EventLoop loop;
            try {
                gateway::GatewayGuard guard(loop, options);
                loop_ = &loop;
                guard_ = &guard;
                ready.set_value();
                loop.run();
            } catch (...) {
                if (!loop_) ready.set_exception(std::current_exception());
                else throw;
            }
        });
        try {
            started.get();
        } catch (...) {
            thread_.join();
            throw;
        }
    }
    ~GuardThread() {
        loop_->stop();
        thread_.join();
    }
    GuardThread(const GuardThread&) = delete;
    GuardThread& operator=(const GuardThread&) = delete;

    gateway::GatewayGuardStats stats() const { return guard_->stats(); }
    // Runs `fn` on the guard's loop thread and waits for it; what it throws
    // is rethrown here.
    void onLoop(const std::function<void(gateway::GatewayGuard&)>& fn) {
        std::promise<void> done;
        auto f = done.get_future();
        loop_->post([&] {
            try {
                fn(*guard_);
                done.set_value();
            } catch (...) {
                done.set_exception(std::current_exception());
            }
        });
        f.get();
    }
    // CPU time (user + system) of the guard's thread, from inside it.
    std::chrono::microseconds cpuTime() {
        std::promise<std::chrono::microseconds> p;
        auto f = p.get_future();
        loop_->post([&p] {
            rusage ru{};
            ::getrusage(RUSAGE_THREAD, &ru);
            p.set_value(std::chrono::seconds(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                        std::chrono::microseconds(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec));
        });
        return f.get();
    }

private:
    std::thread thread_;
    EventLoop* loop_ = nullptr;
    gateway::GatewayGuard* guard_ = nullptr;
};

// What `ip` reports about an interface.
struct LinkView {
    bool exists = false;
    bool up = false;
    int mtu = 0;
    std::set<std::string> addresses;  // "10.244.1.1/24", IPv6 link-local left out
    struct Route {
        std::string dst, protocol, prefsrc, gateway;
    };
    std::vector<Route> routes;  // main table, both families

    static LinkView read(const std::string& dev) {
        LinkView v;
        auto link = runProcess({"ip", "-j", "addr", "show", "dev", dev});
        if (!link.ok()) return v;
        auto j = nlohmann::json::parse(link.out);
        if (j.empty()) return v;
        v.exists = true;
        for (const auto& f : j[0]["flags"]) v.up |= f == "UP";
        v.mtu = j[0]["mtu"].get<int>();
        for (const auto& a : j[0]["addr_info"]) {
            if (a["family"] == "inet6" && a["scope"] == "link") continue;
            v.addresses.insert(a["local"].get<std::string>() + "/" + std::to_string(a["prefixlen"].get<int>()));
        }
        for (const char* fam : {"-4", "-6"}) {
            auto r = runProcess({"ip", "-j", fam, "route", "show", "table", "main", "dev", dev});
            if (!r.ok() || r.out.empty()) continue;
            for (const auto& e : nlohmann::json::parse(r.out)) {
                Route rt;
                rt.dst = e.value("dst", "");
                if (e.contains("protocol")) rt.protocol = e["protocol"].is_string() ? e["protocol"].get<std::string>()
                                                                                    : std::to_string(e["protocol"].get<int>());
                rt.prefsrc = e.value("prefsrc", "");
                rt.gateway = e.value("gateway", "");
                v.routes.push_back(rt);
            }
        }
        return v;
    }

    const Route* route(const std::string& dst) const {
        for (const auto& r : routes)
            if (r.dst == dst) return &r;
        return nullptr;
    }

    std::string describe() const {
        std::string s = exists ? (up ? "up" : "down") : "absent";
        s += " mtu " + std::to_string(mtu) + " addrs [";
        for (const auto& a : addresses) s += " " + a;
        s += " ] routes [";
        for (const auto& r : routes) s += " " + r.dst + "(proto " + r.protocol + (r.prefsrc.empty() ? "" : " src " + r.prefsrc) + ")";
        return s + " ]";
    }
};

}  // namespace kovs::test
