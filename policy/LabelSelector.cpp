#include "policy/LabelSelector.hpp"

#include <algorithm>
#include <stdexcept>

#include "base/Error.hpp"

namespace kovs::policy {

const std::string& Labels::at(const std::string& key) const {
    auto it = find(key);
    if (it == end()) throw std::out_of_range("no label " + key);
    return it->second;
}

bool LabelSelector::matches(const Labels& labels) const {
    return std::all_of(requirements.begin(), requirements.end(), [&](const Requirement& r) {
        auto it = labels.find(r.key);
        bool has = it != labels.end();
        bool in = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
        switch (r.op) {
            case Op::In: return in;
            case Op::NotIn: return !in;
            case Op::Exists: return has;
            case Op::DoesNotExist: return !has;
        }
        return false;
    });
}

LabelSelector LabelSelector::decode(const nlohmann::json& selector, const std::string& what) {
    LabelSelector s;
    if (selector.is_null()) return s;
    if (!selector.is_object()) throw Error(what + ": expected an object");
    for (const auto& [key, _] : selector.items()) {
        if (key != "matchLabels" && key != "matchExpressions") throw Error(what + ": unknown field '" + key + "'");
    }
    if (auto it = selector.find("matchLabels"); it != selector.end() && !it->is_null()) {
        if (!it->is_object()) throw Error(what + ".matchLabels: expected an object");
        for (const auto& [key, value] : it->items()) {
            if (!value.is_string()) throw Error(what + ".matchLabels." + key + ": expected a string");
            s.requirements.push_back({key, Op::In, {value.get<std::string>()}});
        }
    }
    if (auto it = selector.find("matchExpressions"); it != selector.end() && !it->is_null()) {
        if (!it->is_array()) throw Error(what + ".matchExpressions: expected a list");
        for (const auto& e : *it) {
            if (!e.is_object() || !e.contains("key") || !e["key"].is_string() || !e.contains("operator") ||
                !e["operator"].is_string())
                throw Error(what + ".matchExpressions: each needs a string key and operator");
            Requirement r{e["key"].get<std::string>(), Op::Exists, {}};
            const auto op = e["operator"].get<std::string>();
            if (op == "In") r.op = Op::In;
            else if (op == "NotIn") r.op = Op::NotIn;
            else if (op == "Exists") r.op = Op::Exists;
            else if (op == "DoesNotExist") r.op = Op::DoesNotExist;
            else throw Error(what + ".matchExpressions: unknown operator '" + op + "'");
            if (auto v = e.find("values"); v != e.end() && !v->is_null()) {
                if (!v->is_array()) throw Error(what + ".matchExpressions." + r.key + ".values: expected a list");
                for (const auto& x : *v) {
                    if (!x.is_string()) throw Error(what + ".matchExpressions." + r.key + ".values: expected strings");
                    r.values.push_back(x.get<std::string>());
                }
            }
            bool needsValues = r.op == Op::In || r.op == Op::NotIn;
            if (needsValues == r.values.empty())
                throw Error(what + ".matchExpressions." + r.key + ": operator " + op +
                            (needsValues ? " needs values" : " takes no values"));
            s.requirements.push_back(std::move(r));
        }
    }
    return s;
}

}  // namespace kovs::policy
