#pragma once
// The CNI spec versions kovs-cni speaks and what each allows.
#include <array>
#include <string>
#include <string_view>

namespace kovs::cni {

inline constexpr std::string_view kCurrentVersion = "1.1.0";
inline constexpr std::array<std::string_view, 5> kSupportedVersions = {"0.3.0", "0.3.1", "0.4.0", "1.0.0",
                                                                        "1.1.0"};

bool isSupportedVersion(std::string_view v);
// Compares dotted versions ("0.4.0" < "1.0.0"); both must be supported ones.
int compareVersions(std::string_view a, std::string_view b);
inline bool versionAtLeast(std::string_view v, std::string_view min) { return compareVersions(v, min) >= 0; }

}  // namespace kovs::cni
