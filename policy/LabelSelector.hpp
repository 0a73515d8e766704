#pragma once
// A Kubernetes label selector (metav1.LabelSelector): matchLabels and
// matchExpressions (In, NotIn, Exists, DoesNotExist), all ANDed. An empty
// selector selects everything.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace kovs::policy {

// A pod's or a namespace's labels, sorted by key in one flat list: one
// allocation per object where a std::map takes one per label (1000 Pods
// carry some 3000 labels; docs/benchmarks.md).
class Labels {
public:
    using value_type = std::pair<std::string, std::string>;
    using const_iterator = std::vector<value_type>::const_iterator;

    Labels() = default;
    Labels(std::initializer_list<value_type> labels) {
        for (const auto& [k, v] : labels) (*this)[k] = v;
    }
    const_iterator find(const std::string& key) const {
        auto it = lowerBound(key);
        return it != items_.end() && it->first == key ? it : items_.end();
    }
    const std::string& at(const std::string& key) const;  // throws std::out_of_range
    std::string& operator[](const std::string& key) {
        auto it = items_.begin() + (lowerBound(key) - items_.cbegin());
        if (it == items_.end() || it->first != key) it = items_.insert(it, {key, ""});
        return it->second;
    }
    void shrinkToFit() { items_.shrink_to_fit(); }
    const_iterator begin() const { return items_.begin(); }
    const_iterator end() const { return items_.end(); }
    size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    bool operator==(const Labels&) const = default;

private:
    const_iterator lowerBound(const std::string& key) const {
        return std::lower_bound(items_.begin(), items_.end(), key,
                                [](const value_type& l, const std::string& k) { return l.first < k; });
    }
    std::vector<value_type> items_;
};

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
