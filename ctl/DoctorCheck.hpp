#pragma once
// One result of `kovsctl doctor` (ctl/Doctor.hpp), and the helpers every
// check file builds them with.
#include <string>

namespace kovs::ctl {

struct DoctorCheck {
    enum class Status { Ok, Fail, Skipped };
    std::string id;      // stable name, e.g. "tx-checksum"
    Status status = Status::Ok;
    std::string detail;  // what was seen
    std::string hint;    // how to fix it (failures only)
};

inline DoctorCheck ok(std::string id, std::string detail) { return {std::move(id), DoctorCheck::Status::Ok, std::move(detail), ""}; }
inline DoctorCheck fail(std::string id, std::string detail, std::string hint) {
    return {std::move(id), DoctorCheck::Status::Fail, std::move(detail), std::move(hint)};
}
inline DoctorCheck skipped(std::string id, std::string why) {
    return {std::move(id), DoctorCheck::Status::Skipped, std::move(why), ""};
}

}  // namespace kovs::ctl
