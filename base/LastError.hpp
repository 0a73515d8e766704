#pragma once
// The last error of a job that retries, and whether a new one is news: every
// job logs an error when it first appears or changes, not on every retry,
// and says when it cleared; its status shows the error meanwhile.
#include <string>
#include <utility>

namespace kovs {

class LastError {
public:
    // Records a failure; true when it differs from the one already recorded
    // (then log it).
    bool failed(std::string error) {
        if (error == error_) return false;
        error_ = std::move(error);
        return true;
    }
    // Records a success; true when it ends a recorded failure.
    bool cleared() {
        if (error_.empty()) return false;
        error_.clear();
        return true;
    }
    const std::string& str() const { return error_; }
    bool empty() const { return error_.empty(); }

private:
    std::string error_;
};

}  // namespace kovs
