#pragma once
// Builds one OVSDB "transact" (RFC 7047 section 5.2) from typed operations and
// turns its reply into results or an Error naming the failed operation:
// "insert Port gw0: constraint violation: ...".
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace kovs::ovsdb {

using Json = nlohmann::json;

// OVSDB wire values (RFC 7047 section 5.1).
Json uuid(const std::string& u);            // ["uuid", u]
Json namedUuid(const std::string& name);     // ["named-uuid", name]
Json set(const std::vector<Json>& atoms);    // ["set", [...]]
Json map(const std::map<std::string, std::string>& kv);  // ["map", [[k, v], ...]]

// A condition: [column, function, value].
Json cond(const std::string& column, const std::string& function, const Json& value);
inline Json whereUuid(const std::string& u) { return Json::array({cond("_uuid", "==", uuid(u))}); }
inline Json whereName(const std::string& name) { return Json::array({cond("name", "==", name)}); }

// Reading rows back: a set may come as a bare atom when it has one element.
std::vector<Json> setElements(const Json& value);
std::map<std::string, std::string> mapValue(const Json& value);
std::vector<std::string> uuidSet(const Json& value);  // uuids of a set-of-uuid column
std::string stringOr(const Json& row, const std::string& column, const std::string& fallback = "");

class Transaction {
public:
    explicit Transaction(std::string database = "Open_vSwitch") : db_(std::move(database)) {}

    // `label` names the row in error messages (its name, usually).
    Transaction& insert(const std::string& table, const Json& row, const std::string& uuidName = "",
                        const std::string& label = "");
    Transaction& update(const std::string& table, const Json& where, const Json& row, const std::string& label = "");
    // mutations: [[column, mutator, value], ...] ("insert"/"delete" for sets and maps).
    Transaction& mutate(const std::string& table, const Json& where, const Json& mutations,
                        const std::string& label = "");
    Transaction& remove(const std::string& table, const Json& where, const std::string& label = "");
    // Fails the whole transaction unless the rows matching `where`, projected to
    // `columns`, equal (until "==") or differ from (until "!=") `rows` now.
    Transaction& wait(const std::string& table, const Json& where, const std::vector<std::string>& columns,
                      const Json& rows, const std::string& until = "==", const std::string& label = "");
    Transaction& select(const std::string& table, const Json& where, const std::vector<std::string>& columns = {},
                        const std::string& label = "");
    Transaction& comment(const std::string& text);

    bool empty() const { return ops_.empty(); }
    size_t size() const { return ops_.size(); }
    const std::string& database() const { return db_; }
    // The "params" of the transact request: [db, op, op, ...].
    Json params() const;
    // "insert Port gw0", for messages.
    const std::string& describe(size_t op) const { return labels_.at(op); }
    std::string describeAll() const;

    // Checks a transact result; throws kovs::Error naming the first failed
    // operation (or the commit) and returns the per-operation results.
    std::vector<Json> checkResult(const Json& result) const;

private:
    std::string blameCommit(const std::string& details) const;
    Transaction& add(Json op, const std::string& kind, const std::string& table, const std::string& label);

    std::string db_;
    std::vector<Json> ops_;
    std::vector<std::string> labels_;
    std::vector<std::string> tables_;
    std::vector<std::string> rowNames_;
    size_t comments_ = 0;
};

}  // namespace kovs::ovsdb
