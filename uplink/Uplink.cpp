#include "uplink/Uplink.hpp"

#include "uplink/UplinkOvsdb.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "base/Process.hpp"
#include "base/Ethtool.hpp"

namespace kovs::tunnel {

using nlohmann::json;

namespace {

json ipJson(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"ip", "-j"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto out = runChecked(argv);
    auto j = json::parse(out, nullptr, false);
    if (j.is_discarded()) throw Error("ip -j " + args.front() + ": unparsable output");
    return j;
}

void ip(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"ip"};
    argv.insert(argv.end(), args.begin(), args.end());
    runChecked(argv);
}

// For undo and cleanup steps: failures are logged, the unwinding goes on.
bool ipQuiet(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"ip"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runProcess(argv);
    if (!r.ok()) spdlog::debug("uplink: ip {}: {}", args.size() > 1 ? args[0] + " " + args[1] : args[0], r.err);
    return r.ok();
}

bool linkExists(const std::string& name) { return runProcess({"ip", "link", "show", "dev", name}).ok(); }

// `ip addr show` has the link fields (MAC, flags, master) and addr_info.
json linkOf(const std::string& dev) { return ipJson({"addr", "show", "dev", dev}).at(0); }

std::vector<std::string> addrArgs(const char* verb, const json& a, const std::string& dev, bool forceNodad) {
    std::vector<std::string> args{"addr", verb,
                                  a.at("local").get<std::string>() + "/" + std::to_string(a.at("prefixlen").get<int>()),
                                  "dev", dev};
    if (std::string(verb) == "add") {
        if (a.contains("broadcast")) args.insert(args.end(), {"broadcast", a["broadcast"].get<std::string>()});
        if (a.value("scope", "global") != "global") args.insert(args.end(), {"scope", a["scope"].get<std::string>()});
        if (a.value("family", "") == "inet6" && (forceNodad || a.value("nodad", false))) args.push_back("nodad");
        if (a.value("noprefixroute", false)) args.push_back("noprefixroute");
    }
    return args;
}

std::vector<std::string> routeArgs(const char* verb, const json& r, const std::string& dev, bool v6) {
    std::vector<std::string> args{v6 ? "-6" : "-4", "route", verb, r.at("dst").get<std::string>()};
    if (r.contains("gateway")) args.insert(args.end(), {"via", r["gateway"].get<std::string>()});
    args.insert(args.end(), {"dev", dev});
    if (r.contains("protocol")) args.insert(args.end(), {"proto", r["protocol"].get<std::string>()});
    if (r.contains("scope")) args.insert(args.end(), {"scope", r["scope"].get<std::string>()});
    if (r.contains("metric")) args.insert(args.end(), {"metric", std::to_string(r["metric"].get<long>())});
    if (r.contains("prefsrc")) args.insert(args.end(), {"src", r["prefsrc"].get<std::string>()});
    if (r.contains("flags") && r["flags"].is_array()) {
        for (const auto& f : r["flags"]) {
            if (f == "onlink") args.push_back("onlink");
        }
    }
    return args;
}

// Addresses that carry the node's identity (link-local ones belong to the link).
std::vector<json> movableAddresses(const json& link) {
    std::vector<json> out;
    for (const auto& a : link.value("addr_info", json::array())) {
        if (a.value("scope", "global") != "link") out.push_back(a);
    }
    return out;
}

// Which of `addresses` (snapshot entries) `dev` still holds, as "a b"; "" for none.
std::string heldAddresses(const std::string& dev, const json& addresses) {
    std::string held;
    for (const auto& b : movableAddresses(linkOf(dev))) {
        for (const auto& a : addresses) {
            if (b.value("local", "") == a.value("local", "")) held += (held.empty() ? "" : " ") + a.value("local", "");
        }
    }
    return held;
}

// Routes the kernel does not recreate by itself when the address moves.
std::vector<json> movableRoutes(const json& routes) {
    std::vector<json> out;
    for (const auto& r : routes) {
        if (r.value("protocol", "") != "kernel" && r.value("type", "unicast") == "unicast") out.push_back(r);
    }
    return out;
}

class UndoStack {
public:
    void push(std::string what, std::function<void()> undo) { steps_.push_back({std::move(what), std::move(undo)}); }
    void unwind() {
        for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
            try {
                it->second();
            } catch (const std::exception& e) {
                spdlog::error("uplink rollback: undo '{}' failed: {}", it->first, e.what());
            }
        }
        steps_.clear();
    }
    void commit() { steps_.clear(); }

private:
    std::vector<std::pair<std::string, std::function<void()>>> steps_;
};

}  // namespace

std::string shimDeviceMac(const std::string& originalMac) {
    unsigned b[6];
    if (std::sscanf(originalMac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6) {
        throw Error("uplink: bad MAC '" + originalMac + "'");
    }
    // Locally administered (0x02), unicast (~0x01), and bit 0x08 flipped so
    // it differs from an original that was already locally administered
    // (Docker's 02:42:...).
    b[0] = ((b[0] | 0x02) & ~0x01u) ^ 0x08;
    char out[32];
    std::snprintf(out, sizeof out, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
    return out;
}

Uplink::Uplink(UplinkOptions opts) : opts_(std::move(opts)) {}

json Uplink::snapshot() const {
    json link = linkOf(opts_.device);
    json s;
    s["mode"] = modeName(opts_.mode);
    s["device"] = opts_.device;
    s["mac"] = link.at("address");
    s["mtu"] = link.value("mtu", 1500);
    s["addresses"] = movableAddresses(link);
    s["routes4"] = movableRoutes(ipJson({"-4", "route", "show", "dev", opts_.device}));
    s["routes6"] = movableRoutes(ipJson({"-6", "route", "show", "dev", opts_.device}));
    auto flags = linkOf(opts_.bridge).value("flags", json::array());
    s["bridgeWasUp"] = std::find(flags.begin(), flags.end(), "UP") != flags.end();
    s["port"] = opts_.mode == UplinkMode::Shim ? opts_.shimVethOvsEnd : opts_.device;
    return s;
}

void Uplink::checkPortType() const {
    const auto& t = opts_.portType;
    if (t == "system") return;
    UplinkOvsdb db(opts_.ovsdb);
    if (t == "afxdp" || t == "afxdp-nonpmd") {
        auto types = db.ifaceTypes();
        if (std::find(types.begin(), types.end(), t) == types.end()) {
            std::string all;
            for (const auto& x : types) all += (all.empty() ? "" : ",") + x;
            throw Error("uplink port type " + t + ": this ovs-vswitchd does not support it (iface_types " + all + ")");
        }
        return;
    }
    if (t == "dpdk") {
        if (!db.dpdkInitialized()) throw Error("uplink port type dpdk: ovs-vswitchd reports dpdk_initialized=false");
        return;
    }
    throw Error("uplink port type '" + t + "': unknown (system, afxdp, afxdp-nonpmd, dpdk)");
}

bool Uplink::migrated() const {
    std::ifstream in(opts_.stateFile);
    if (!in) return false;
    json state = json::parse(in, nullptr, false);
    if (state.is_discarded() || !state.contains("addresses") || !linkExists(opts_.bridge)) return false;
    if (state.value("mode", "") != modeName(opts_.mode)) return false;
    // The addresses live on the bridge, and the uplink is wired the way the mode says.
    auto bridgeAddrs = movableAddresses(linkOf(opts_.bridge));
    for (const auto& a : state["addresses"]) {
        bool found = std::any_of(bridgeAddrs.begin(), bridgeAddrs.end(), [&](const json& b) {
            return b.value("local", "") == a.value("local", "") && b.value("prefixlen", 0) == a.value("prefixlen", 0);
        });
        if (!found) return false;
    }
    // Taking them off eth0 is the last step of a migration: an agent killed
    // before it (routes half moved) must not find the node "migrated".
    if (!heldAddresses(opts_.device, state["addresses"]).empty()) return false;
    auto port = state.value("port", "");
    if (UplinkOvsdb(opts_.ovsdb).bridgeOf(port) != opts_.bridge) return false;
    if (opts_.mode == UplinkMode::Shim) {
        return linkOf(opts_.device).value("master", "") == opts_.shimBridge;
    }
    return true;
}

Uplink::Outcome Uplink::migrate() {
    if (migrated()) {
        spdlog::info("uplink: {} already on {} ({} mode); nothing to do", opts_.device, opts_.bridge,
                     modeName(opts_.mode));
        return Outcome::AlreadyMigrated;
    }
    if (std::filesystem::exists(opts_.stateFile)) {
        spdlog::warn("uplink: {} exists but the node is not fully migrated; restoring it first", opts_.stateFile);
        cleanup();
    }
    checkPortType();
    const std::string& dev = opts_.device;
    const std::string& br = opts_.bridge;
    json snap = snapshot();
    if (snap["addresses"].empty()) throw Error("uplink " + dev + ": no address to move to " + br);
    const std::string mac = snap["mac"];
    const std::string port = snap["port"];

    UplinkOvsdb db(opts_.ovsdb);  // outlives the undo steps that use it
    UndoStack undo;
    std::string step;
    try {
        step = "write " + opts_.stateFile;
        std::filesystem::create_directories(std::filesystem::path(opts_.stateFile).parent_path());
        {
            std::ofstream out(opts_.stateFile + ".tmp");
            out << snap.dump(2);
            if (!out.flush()) throw Error("cannot write " + opts_.stateFile);
        }
        std::filesystem::rename(opts_.stateFile + ".tmp", opts_.stateFile);
        undo.push(step, [this] { std::filesystem::remove(opts_.stateFile); });

        if (opts_.mode == UplinkMode::Shim) {
            const auto& shim = opts_.shimBridge;
            const auto& up0 = opts_.shimVethBridgeEnd;
            const auto& up1 = opts_.shimVethOvsEnd;
            step = "create bridge " + shim;
            ip({"link", "add", shim, "type", "bridge"});
            undo.push(step, [shim] { ipQuiet({"link", "del", shim}); });
            // At the uplink's MTU: a jumbo underlay must not be capped at the
            // veth default of 1500 on its way into br-phy.
            const auto mtu = std::to_string(snap.value("mtu", 1500));
            step = "create veth " + up0 + "/" + up1 + " (MTU " + mtu + ")";
            ip({"link", "add", up0, "mtu", mtu, "type", "veth", "peer", "name", up1, "mtu", mtu});
            undo.push(step, [up0] { ipQuiet({"link", "del", up0}); });
            // The kernel answers ARP for any local address on any interface
            // (arp_ignore=0), so without NOARP these devices, which see the
            // underlay's broadcasts, would answer for the node IP with their
            // own MACs, racing br-phy's reply: peers then tunnel to a MAC
            // nobody owns (seen here: 1 run in 3 black-holed a node pair).
            for (const auto& l : {shim, up0, up1}) ip({"link", "set", "dev", l, "addrgenmode", "none", "arp", "off"});
            step = "TX checksum off on " + up0;
            Ethtool().setTxChecksum(up0, false);
            step = "put " + up0 + " into " + shim;
            ip({"link", "set", "dev", up0, "master", shim});
            for (const auto& l : {shim, up0, up1}) ip({"link", "set", "dev", l, "up"});
            // eth0 itself joins the shim only after its addresses moved (below).
        }

        step = "add port " + port + " to " + br;
        db.addPort(br, port, opts_.portType);
        undo.push(step, [&db, br, port] { db.removePort(br, port); });
        step = "give " + br + " the MAC " + mac;
        db.setHwaddr(br, mac);
        undo.push(step, [&db, br] { db.clearHwaddr(br); });
        if (linkOf(br).value("address", "") != mac) throw Error(br + " did not take the MAC " + mac);
        step = "TX checksum off on " + br;
        Ethtool().setTxChecksum(br, false);
        step = "bring " + br + " up";
        ip({"link", "set", "dev", br, "up"});
        if (!snap["bridgeWasUp"].get<bool>()) undo.push(step, [br] { ipQuiet({"link", "set", "dev", br, "down"}); });

        // Addresses go onto br-phy before they leave eth0, so the node always
        // holds them; the undo puts everything back on eth0.
        step = "move addresses and routes from " + dev + " to " + br;
        undo.push(step, [snap, dev, br] {
            for (const auto& a : snap["addresses"]) ipQuiet(addrArgs("add", a, dev, false));
            for (const auto& r : snap["routes4"]) ipQuiet(routeArgs("del", r, br, false));
            for (const auto& r : snap["routes6"]) ipQuiet(routeArgs("del", r, br, true));
            for (const auto& a : snap["addresses"]) ipQuiet(addrArgs("del", a, br, false));
            for (const auto& r : snap["routes4"]) ipQuiet(routeArgs("add", r, dev, false));
            for (const auto& r : snap["routes6"]) ipQuiet(routeArgs("add", r, dev, true));
        });
        for (const auto& a : snap["addresses"]) ip(addrArgs("add", a, br, true));
        for (const auto& r : snap["routes4"]) ipQuiet(routeArgs("del", r, dev, false));
        for (const auto& r : snap["routes6"]) ipQuiet(routeArgs("del", r, dev, true));
        for (const auto& r : snap["routes4"]) ip(routeArgs("add", r, br, false));
        for (const auto& r : snap["routes6"]) ip(routeArgs("add", r, br, true));
        // Newest first: deleting a primary IPv4 address also deletes the
        // secondaries of its subnet (promote_secondaries=0, the default), so
        // a failed delete is fine as long as nothing is left afterwards.
        const auto& addrs = snap["addresses"];
        for (auto it = addrs.rbegin(); it != addrs.rend(); ++it) ipQuiet(addrArgs("del", *it, dev, false));
        if (auto left = heldAddresses(dev, addrs); !left.empty()) throw Error(dev + " still holds " + left);

        // Only now, with no address left on eth0, does eth0 get its new MAC:
        // had it answered ARP for the node IP with that MAC, peers would keep
        // a wrong IP->MAC binding (their kernels never re-ARP for tunnel
        // traffic, which OVS encapsulates itself) and the tunnel to this node
        // would stay black-holed.
        if (opts_.mode == UplinkMode::Shim) {
            const auto& shim = opts_.shimBridge;
            step = "new MAC for " + dev;
            ip({"link", "set", "dev", dev, "address", shimDeviceMac(mac)});
            undo.push(step, [dev, mac] { ipQuiet({"link", "set", "dev", dev, "address", mac}); });
            step = "put " + dev + " into " + shim;
            ip({"link", "set", "dev", dev, "master", shim});
            undo.push(step, [dev] { ipQuiet({"link", "set", "dev", dev, "nomaster"}); });
        }
    } catch (const std::exception& e) {
        spdlog::error("uplink: {} failed: {}; rolling back", step, e.what());
        undo.unwind();
        throw Error("uplink " + dev + " -> " + br + " (" + modeName(opts_.mode) + "): " + step + ": " + e.what());
    }
    undo.commit();
    spdlog::info("uplink: {} moved to {} ({} mode, port {})", dev, br, modeName(opts_.mode), port);
    return Outcome::Migrated;
}

bool Uplink::cleanup() {
    std::ifstream in(opts_.stateFile);
    if (!in) return false;
    json s = json::parse(in, nullptr, false);
    if (s.is_discarded()) throw Error("uplink cleanup: " + opts_.stateFile + " is not valid JSON; restore by hand");
    const std::string dev = s.value("device", opts_.device);
    const std::string br = opts_.bridge;
    const std::string port = s.value("port", "");
    const std::string mac = s.value("mac", "");
    bool shim = s.value("mode", "") == "shim";

    // L2 first, so eth0 is usable again when its addresses come back. OVSDB
    // is best effort: cleanup is how a node that lost its uplink is rescued,
    // which may be exactly when ovsdb-server or vswitchd is not answering.
    std::optional<UplinkOvsdb> db;
    std::string ovsdbDown;  // why it did not answer: one wait for it is enough
    auto ovsdbStep = [&](const char* what, const std::function<void(UplinkOvsdb&)>& fn) {
        try {
            if (!ovsdbDown.empty()) throw Error(ovsdbDown);
            if (!db) db.emplace(opts_.ovsdb, std::chrono::seconds(5));
            fn(*db);
        } catch (const std::exception& e) {
            if (!db) ovsdbDown = e.what();
            spdlog::warn("uplink cleanup: {} skipped, OVSDB did not do it: {}", what, e.what());
        }
    };
    ovsdbStep("removing the uplink port", [&](UplinkOvsdb& d) { d.removePort(br, port); });
    if (shim) {
        ipQuiet({"link", "set", "dev", dev, "nomaster"});
        ipQuiet({"link", "del", opts_.shimVethBridgeEnd});
        ipQuiet({"link", "del", opts_.shimBridge});
    }
    if (!mac.empty()) ipQuiet({"link", "set", "dev", dev, "address", mac});
    ipQuiet({"link", "set", "dev", dev, "up"});

    // IPv4 in order (the first is the primary); IPv6 in reverse, because the
    // kernel lists the newest IPv6 address first.
    std::vector<json> v4, v6;
    for (const auto& a : s["addresses"]) (a.value("family", "") == "inet6" ? v6 : v4).push_back(a);
    for (const auto& a : v4) ipQuiet(addrArgs("add", a, dev, false));
    for (auto it = v6.rbegin(); it != v6.rend(); ++it) ipQuiet(addrArgs("add", *it, dev, false));
    for (const auto& r : s["routes4"]) ipQuiet(routeArgs("del", r, br, false));
    for (const auto& r : s["routes6"]) ipQuiet(routeArgs("del", r, br, true));
    for (const auto& a : s["addresses"]) ipQuiet(addrArgs("del", a, br, false));
    for (const auto& r : s["routes4"]) ipQuiet(routeArgs("add", r, dev, false));
    for (const auto& r : s["routes6"]) ipQuiet(routeArgs("add", r, dev, true));

    ovsdbStep("clearing br-phy's MAC", [&](UplinkOvsdb& d) { d.clearHwaddr(br); });
    if (!s.value("bridgeWasUp", true)) ipQuiet({"link", "set", "dev", br, "down"});

    // Verify before forgetting the state: every address is back on eth0.
    auto now = movableAddresses(linkOf(dev));
    for (const auto& a : s["addresses"]) {
        bool back = std::any_of(now.begin(), now.end(), [&](const json& b) { return b.value("local", "") == a.value("local", ""); });
        if (!back) throw Error("uplink cleanup: " + a.value("local", "") + " could not be restored on " + dev + "; state kept in " + opts_.stateFile);
    }
    std::filesystem::remove(opts_.stateFile);
    spdlog::info("uplink: {} restored from {}", dev, br);
    return true;
}

}  // namespace kovs::tunnel
