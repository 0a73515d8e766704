#include "ovs/OvsdbTransaction.hpp"

#include "base/Error.hpp"
#include "ovs/JsonRpcConnection.hpp"

namespace kovs::ovsdb {

Json uuid(const std::string& u) { return Json::array({"uuid", u}); }
Json namedUuid(const std::string& name) { return Json::array({"named-uuid", name}); }
Json set(const std::vector<Json>& atoms) { return Json::array({"set", Json(atoms)}); }

Json map(const std::map<std::string, std::string>& kv) {
    Json pairs = Json::array();
    for (const auto& [k, v] : kv) pairs.push_back(Json::array({k, v}));
    return Json::array({"map", pairs});
}

Json cond(const std::string& column, const std::string& function, const Json& value) {
    return Json::array({column, function, value});
}

std::vector<Json> setElements(const Json& value) {
    if (value.is_array() && value.size() == 2 && value[0] == "set" && value[1].is_array())
        return value[1].get<std::vector<Json>>();
    if (value.is_null()) return {};
    return {value};
}

std::map<std::string, std::string> mapValue(const Json& value) {
    std::map<std::string, std::string> out;
    if (!(value.is_array() && value.size() == 2 && value[0] == "map" && value[1].is_array())) return out;
    for (const auto& pair : value[1]) {
        if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string())
            out[pair[0].get<std::string>()] = pair[1].get<std::string>();
    }
    return out;
}

std::vector<std::string> uuidSet(const Json& value) {
    std::vector<std::string> out;
    for (const auto& a : setElements(value)) {
        if (a.is_array() && a.size() == 2 && a[0] == "uuid" && a[1].is_string()) out.push_back(a[1].get<std::string>());
    }
    return out;
}

std::string stringOr(const Json& row, const std::string& column, const std::string& fallback) {
    auto it = row.find(column);
    if (it != row.end() && it->is_string()) return it->get<std::string>();
    // An optional string column (min 0) holds ["set", []] when empty or a bare string.
    if (it != row.end()) {
        auto elems = setElements(*it);
        if (elems.size() == 1 && elems[0].is_string()) return elems[0].get<std::string>();
    }
    return fallback;
}

Transaction& Transaction::add(Json op, const std::string& kind, const std::string& table, const std::string& label) {
    ops_.push_back(std::move(op));
    labels_.push_back(kind + " " + table + (label.empty() ? "" : " " + label));
    tables_.push_back(table);
    rowNames_.push_back(label);
    return *this;
}

Transaction& Transaction::insert(const std::string& table, const Json& row, const std::string& uuidName,
                                 const std::string& label) {
    Json op = {{"op", "insert"}, {"table", table}, {"row", row}};
    if (!uuidName.empty()) op["uuid-name"] = uuidName;
    std::string l = label;
    if (l.empty() && row.contains("name") && row["name"].is_string()) l = row["name"].get<std::string>();
    return add(std::move(op), "insert", table, l);
}

Transaction& Transaction::update(const std::string& table, const Json& where, const Json& row,
                                 const std::string& label) {
    return add({{"op", "update"}, {"table", table}, {"where", where}, {"row", row}}, "update", table, label);
}

Transaction& Transaction::mutate(const std::string& table, const Json& where, const Json& mutations,
                                 const std::string& label) {
    return add({{"op", "mutate"}, {"table", table}, {"where", where}, {"mutations", mutations}}, "mutate", table,
               label);
}

Transaction& Transaction::remove(const std::string& table, const Json& where, const std::string& label) {
    return add({{"op", "delete"}, {"table", table}, {"where", where}}, "delete", table, label);
}

Transaction& Transaction::wait(const std::string& table, const Json& where, const std::vector<std::string>& columns,
                               const Json& rows, const std::string& until, const std::string& label) {
    return add({{"op", "wait"},
                {"timeout", 0},
                {"table", table},
                {"where", where},
                {"columns", columns},
                {"until", until},
                {"rows", rows}},
               "wait", table, label);
}

Transaction& Transaction::select(const std::string& table, const Json& where, const std::vector<std::string>& columns,
                                 const std::string& label) {
    Json op = {{"op", "select"}, {"table", table}, {"where", where}};
    if (!columns.empty()) op["columns"] = columns;
    return add(std::move(op), "select", table, label);
}

Transaction& Transaction::comment(const std::string& text) {
    ops_.push_back({{"op", "comment"}, {"comment", text}});
    labels_.push_back("comment");
    tables_.emplace_back();
    rowNames_.emplace_back();
    ++comments_;
    return *this;
}

Json Transaction::params() const {
    Json p = Json::array({db_});
    for (const auto& op : ops_) p.push_back(op);
    return p;
}

std::string Transaction::describeAll() const {
    std::string s;
    for (const auto& l : labels_) {
        if (l == "comment") continue;
        s += (s.empty() ? "" : ", ") + l;
    }
    return s;
}

std::string Transaction::blameCommit(const std::string& details) const {
    // ovsdb-server names the table ("... rows in \"Port\" table ...") and the
    // offending value; point at the operation that wrote that row if we can.
    for (size_t i = 0; i < ops_.size(); ++i) {
        if (tables_[i].empty() || rowNames_[i].empty()) continue;
        if (details.find("\"" + tables_[i] + "\" table") != std::string::npos &&
            details.find(rowNames_[i]) != std::string::npos)
            return labels_[i];
    }
    return "commit (" + describeAll() + ")";
}

std::vector<Json> Transaction::checkResult(const Json& result) const {
    if (!result.is_array())
        throw Error("transact " + db_ + " (" + describeAll() + "): reply is not an array: " + result.dump());
    for (size_t i = 0; i < result.size(); ++i) {
        const auto& r = result[i];
        if (!r.is_object() || !r.contains("error") || r["error"].is_null()) continue;
        // An element past the operations reports a commit failure (constraint
        // violation, referential integrity): no single operation is to blame.
        std::string who = i < labels_.size() ? labels_[i] : blameCommit(r.contains("details") && r["details"].is_string() ? r["details"].get<std::string>() : "");
        throw Error(who + ": " + ovs::jsonRpcErrorText(r));
    }
    if (result.size() < ops_.size())
        throw Error("transact " + db_ + " (" + describeAll() + "): " + std::to_string(result.size()) +
                    " results for " + std::to_string(ops_.size()) + " operations");
    return result.get<std::vector<Json>>();
}

}  // namespace kovs::ovsdb
