#pragma once
// Local copy of monitored OVSDB tables (uuid -> row), kept current from
// monitor_cond "update2" table-updates. Applying a "modify" needs the schema:
// a set column (max > 1) carries the elements to toggle, a map column the
// pairs to add/remove/replace, any other column (also an optional one, max 1)
// its new value.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>

namespace kovs::ovs {

class OvsdbReplica {
public:
    using Json = nlohmann::json;
    using Row = Json;                          // column -> OVSDB value (no _uuid)
    using Table = std::map<std::string, Row>;  // uuid -> row
    enum class ColumnKind { Scalar, Set, Map };

    // Learns column kinds from a get_schema reply (RFC 7047 section 3.2).
    void setSchema(const Json& schema);
    ColumnKind kind(const std::string& table, const std::string& column) const;

    void clear() { tables_.clear(); }
    // Applies a <table-updates2> object; throws kovs::Error on a malformed one.
    void apply(const Json& tableUpdates2);

    const Table& table(const std::string& name) const;
    const Row* row(const std::string& table, const std::string& uuid) const;
    // The row whose "name" column equals name: {uuid, row}.
    std::optional<std::pair<std::string, Row>> findByName(const std::string& table, const std::string& name) const;
    size_t size() const;

private:
    void parseSchema(const Json& schema);
    void applyUpdates(const Json& updates);
    void applyModify(const std::string& table, Row& row, const Json& diff) const;

    std::map<std::string, Table> tables_;
    std::map<std::string, std::map<std::string, ColumnKind>> kinds_;
};

}  // namespace kovs::ovs
