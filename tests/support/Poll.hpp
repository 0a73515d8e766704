#pragma once
// Waits for state without fixed sleeps: polls `check` until it returns true
// or the deadline passes.
#include <chrono>
#include <functional>
#include <thread>

namespace kovs::test {

inline bool pollUntil(const std::function<bool()>& check,
                      std::chrono::milliseconds timeout = std::chrono::seconds(5),
                      std::chrono::milliseconds interval = std::chrono::milliseconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        if (check()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(interval);
    }
}

}  // namespace kovs::test
