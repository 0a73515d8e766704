#pragma once
// Undo steps for a multi-step change that must not be left half done (a CNI
// ADD, the uplink migration): each step registers its undo once it
// succeeded; unwind() runs them newest first, and so does the destructor if
// nothing committed. An undo that itself fails is logged and the others still
// run, so one stuck step never strands the rest.
#include <spdlog/spdlog.h>

#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kovs {

class UndoStack {
public:
    // `who` prefixes the log lines ("uplink rollback: ...").
    explicit UndoStack(std::string who = "rollback") : who_(std::move(who)) {}
    ~UndoStack() { unwind(); }
    UndoStack(const UndoStack&) = delete;
    UndoStack& operator=(const UndoStack&) = delete;

    void push(std::string what, std::function<void()> undo) { steps_.emplace_back(std::move(what), std::move(undo)); }
    void unwind() {
        while (!steps_.empty()) {
            auto [what, undo] = std::move(steps_.back());
            steps_.pop_back();
            try {
                undo();
                spdlog::info("{}: undid {}", who_, what);
            } catch (const std::exception& e) {
                spdlog::error("{}: undoing {} failed: {}", who_, what, e.what());
            }
        }
    }
    // The change is complete: forget the undo steps.
    void commit() { steps_.clear(); }
    size_t size() const { return steps_.size(); }

private:
    std::string who_;
    std::vector<std::pair<std::string, std::function<void()>>> steps_;
};

}  // namespace kovs
