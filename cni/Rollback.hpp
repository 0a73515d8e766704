#pragma once
// Undo steps for a multi-step ADD: registered as each step succeeds, run in
// reverse when the ADD fails part-way, dropped on commit(). An undo step that
// itself fails is logged and the others still run.
#include <spdlog/spdlog.h>

#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kovs::cni {

class Rollback {
public:
    Rollback() = default;
    Rollback(const Rollback&) = delete;
    Rollback& operator=(const Rollback&) = delete;
    ~Rollback() {
        for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
            try {
                it->second();
                spdlog::info("rollback: {}", it->first);
            } catch (const std::exception& e) {
                spdlog::error("rollback: {}: {}", it->first, e.what());
            }
        }
    }

    void add(std::string what, std::function<void()> undo) { steps_.emplace_back(std::move(what), std::move(undo)); }
    void commit() { steps_.clear(); }

private:
    std::vector<std::pair<std::string, std::function<void()>>> steps_;
};

}  // namespace kovs::cni
