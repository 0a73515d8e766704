#include "cni/CniVersion.hpp"

#include <algorithm>

namespace kovs::cni {

bool isSupportedVersion(std::string_view v) {
    return std::find(kSupportedVersions.begin(), kSupportedVersions.end(), v) != kSupportedVersions.end();
}

int compareVersions(std::string_view a, std::string_view b) {
    // Supported versions are all "x.y.z" with single digits, so text order is version order.
    return a < b ? -1 : (a == b ? 0 : 1);
}

}  // namespace kovs::cni
