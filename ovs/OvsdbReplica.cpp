#include "ovs/OvsdbReplica.hpp"

#include <algorithm>
#include <vector>

#include "base/Error.hpp"
#include "ovs/OvsdbTransaction.hpp"

namespace kovs::ovs {

void OvsdbReplica::setSchema(const Json& schema) {
    // A malformed schema must surface as kovs::Error, not a json type error.
    try {
        parseSchema(schema);
    } catch (const Json::exception& e) {
        kinds_.clear();
        throw Error(std::string("OVSDB schema: ") + e.what());
    }
}

void OvsdbReplica::parseSchema(const Json& schema) {
    kinds_.clear();
    if (!schema.is_object() || !schema.contains("tables") || !schema["tables"].is_object())
        throw Error("OVSDB schema: no \"tables\" object");
    for (const auto& [tname, table] : schema["tables"].items()) {
        if (!table.is_object() || !table.contains("columns") || !table["columns"].is_object()) continue;
        for (const auto& [cname, col] : table["columns"].items()) {
            if (!col.is_object()) throw Error("OVSDB schema: column " + tname + "." + cname + " is not an object");
            const auto& type = col.value("type", Json());
            ColumnKind k = ColumnKind::Scalar;
            if (type.is_object()) {
                auto maxv = type.value("max", Json(1));
                bool maxOne = maxv.is_number() && maxv.get<int64_t>() == 1;
                // ovsdb-server diffs only columns that can hold several
                // values; an optional column (min 0, max 1) comes whole.
                if (type.contains("value")) k = ColumnKind::Map;
                else if (!maxOne) k = ColumnKind::Set;
            }
            kinds_[tname][cname] = k;
        }
    }
}

OvsdbReplica::ColumnKind OvsdbReplica::kind(const std::string& table, const std::string& column) const {
    auto t = kinds_.find(table);
    if (t == kinds_.end()) return ColumnKind::Scalar;
    auto c = t->second.find(column);
    return c == t->second.end() ? ColumnKind::Scalar : c->second;
}

void OvsdbReplica::applyModify(const std::string& table, Row& row, const Json& diff) const {
    for (const auto& [col, value] : diff.items()) {
        switch (kind(table, col)) {
        case ColumnKind::Scalar: row[col] = value; break;
        case ColumnKind::Set: {
            // update2 sends the symmetric difference: toggle every element.
            std::vector<Json> elems = row.contains(col) ? ovsdb::setElements(row[col]) : std::vector<Json>{};
            for (const auto& e : ovsdb::setElements(value)) {
                auto it = std::find(elems.begin(), elems.end(), e);
                if (it == elems.end()) elems.push_back(e);
                else elems.erase(it);
            }
            row[col] = ovsdb::set(elems);
            break;
        }
        case ColumnKind::Map: {
            // Pairs: a new key is added, an equal pair removed, a new value replaces.
            Json pairs = row.contains(col) && row[col].is_array() && row[col].size() == 2 ? row[col][1] : Json::array();
            if (!value.is_array() || value.size() != 2 || value[0] != "map" || !value[1].is_array())
                throw Error("OVSDB update2 " + table + "." + col + ": map diff is not [\"map\", [...]]");
            for (const auto& p : value[1]) {
                if (!p.is_array() || p.size() != 2) throw Error("OVSDB update2 " + table + "." + col + ": bad pair");
                auto it = std::find_if(pairs.begin(), pairs.end(),
                                       [&](const Json& q) { return q.is_array() && !q.empty() && q[0] == p[0]; });
                if (it == pairs.end()) pairs.push_back(p);
                else if ((*it)[1] == p[1]) pairs.erase(it);
                else (*it)[1] = p[1];
            }
            row[col] = Json::array({"map", pairs});
            break;
        }
        }
    }
}

void OvsdbReplica::apply(const Json& updates) {
    // Applied in place: on error the replica may be half-updated, and the
    // client resynchronizes from scratch (reconnect + fresh monitor).
    try {
        applyUpdates(updates);
    } catch (const Json::exception& e) {
        throw Error(std::string("OVSDB update2: ") + e.what());
    }
}

void OvsdbReplica::applyUpdates(const Json& updates) {
    if (!updates.is_object()) throw Error("OVSDB update2: table-updates is not an object");
    for (const auto& titem : updates.items()) {
        const std::string& tname = titem.key();
        const Json& rows = titem.value();
        if (!rows.is_object()) throw Error("OVSDB update2 " + tname + ": rows are not an object");
        auto& table = tables_[tname];
        for (const auto& item : rows.items()) {
            // Plain names, not structured bindings: clang 14 cannot capture those.
            const std::string& uuid = item.key();
            const Json& upd = item.value();
            if (!upd.is_object()) throw Error("OVSDB update2 " + tname + " " + uuid + ": not an object");
            auto rowOf = [&](const char* key) {
                if (!upd[key].is_object()) throw Error("OVSDB update2 " + tname + " " + uuid + ": " + key + " is not a row");
                return upd[key];
            };
            if (upd.contains("initial")) table[uuid] = rowOf("initial");
            else if (upd.contains("insert")) table[uuid] = rowOf("insert");
            else if (upd.contains("delete")) table.erase(uuid);
            else if (upd.contains("modify")) {
                auto it = table.find(uuid);
                if (it == table.end()) throw Error("OVSDB update2 " + tname + ": modify of unknown row " + uuid);
                if (!upd["modify"].is_object()) throw Error("OVSDB update2 " + tname + " " + uuid + ": modify is not a row");
                applyModify(tname, it->second, upd["modify"]);
            } else {
                throw Error("OVSDB update2 " + tname + " " + uuid + ": no initial/insert/modify/delete");
            }
        }
    }
}

const OvsdbReplica::Table& OvsdbReplica::table(const std::string& name) const {
    static const Table empty;
    auto it = tables_.find(name);
    return it == tables_.end() ? empty : it->second;
}

const OvsdbReplica::Row* OvsdbReplica::row(const std::string& t, const std::string& uuid) const {
    const auto& tbl = table(t);
    auto it = tbl.find(uuid);
    return it == tbl.end() ? nullptr : &it->second;
}

std::optional<std::pair<std::string, OvsdbReplica::Row>> OvsdbReplica::findByName(const std::string& t,
                                                                                  const std::string& name) const {
    for (const auto& [uuid, r] : table(t)) {
        auto it = r.find("name");
        if (it != r.end() && it->is_string() && *it == name) return std::make_pair(uuid, r);
    }
    return std::nullopt;
}

size_t OvsdbReplica::size() const {
    size_t n = 0;
    for (const auto& [name, t] : tables_) n += t.size();
    return n;
}

}  // namespace kovs::ovs
