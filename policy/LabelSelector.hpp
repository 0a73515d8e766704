#pragma once
// A Kubernetes label selector (metav1.LabelSelector): matchLabels and
// matchExpressions (In, NotIn, Exists, DoesNotExist), all ANDed. An empty
// selector selects everything.
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace kovs::policy {

using Labels = std::map<std::string, std::string>;

struct LabelSelector {
    enum class Op { In, NotIn, Exists, DoesNotExist };
    struct Requirement {
        std::string key;
        Op op = Op::Exists;
        std::vector<std::string> values;
        bool operator==(const Requirement&) const = default;
    };
    std::vector<Requirement> requirements;  // matchLabels become In with one value

    bool matches(const Labels& labels) const;
    bool operator==(const LabelSelector&) const = default;

    // Throws kovs::Error naming `what` on a malformed selector or an
    // operator this version does not know (a future one: what it selects
    // cannot be known, so the caller decides what that means).
    static LabelSelector decode(const nlohmann::json& selector, const std::string& what);
};

}  // namespace kovs::policy
