// kovsctl: what the agent sees (status), what is wrong on this node (doctor),
// which NetworkPolicies select a pod and what they allow (policy), what
// br-int does with one packet and why (trace), and the smoke test's two ends
// (probe serve / probe check).
#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <fmt/format.h>
#include <iostream>

#include "agent/Config.hpp"
#include "ctl/Doctor.hpp"
#include "ctl/PolicyLogCommand.hpp"
#include "ctl/Probe.hpp"
#include "base/UnixJsonRequest.hpp"
#include "base/Log.hpp"
#include "base/Strings.hpp"

namespace {

std::string yesNo(bool b) { return b ? "yes" : "NO"; }

// A JSON list of strings as "a, b, c" (a string as itself).
std::string joined(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    return kovs::join(v, ", ", [](const nlohmann::json& x) { return x.get<std::string>(); });
}

// {"ns/policy": ["what it cannot express", ...]}: one line each.
void printWarnings(const nlohmann::json& warnings) {
    for (const auto& [name, list] : warnings.items())
        for (const auto& w : list) std::cout << "  WARNING " << w.get<std::string>() << "\n";
}

void printStatus(const nlohmann::json& s) {
    auto str = [&](const nlohmann::json& j, const char* k) { return j.contains(k) ? j[k].dump() : std::string("-"); };
    std::cout << fmt::format("node {}  mode {}  agent up {} s\n", s.value("node", "?"), s.value("mode", "?"),
                             s.value("uptimeSeconds", 0));
    if (s.contains("ovsdb")) {
        const auto& o = s["ovsdb"];
        std::cout << fmt::format("ovsdb      {} (reconnects {}, transactions {})\n", o.value("state", "?"),
                                 o.value("reconnects", 0), o.value("transactions", 0));
    }
    if (s.contains("vswitchd")) std::cout << fmt::format("vswitchd   pid {}  restarts {}\n", str(s["vswitchd"], "pid"), str(s["vswitchd"], "restarts"));
    for (const auto& b : s.value("bridges", nlohmann::json::array())) {
        std::string ports;
        for (const auto& p : b.value("ports", nlohmann::json::array())) ports += (ports.empty() ? "" : " ") + p.get<std::string>();
        std::cout << fmt::format("bridge     {:<8} datapath {:<7} ports: {}\n", b.value("name", "?"), b.value("datapathType", "?"), ports);
    }
    if (s.contains("uplink")) {
        const auto& u = s["uplink"];
        auto last = u.value("lastRepair", "");
        bool contested = u.value("reconcile", nlohmann::json::object()).value("contested", false);
        std::cout << fmt::format("uplink     {} -> {} ({})  addresses {}  repairs {}{}{}\n", u.value("device", "?"), u.value("bridge", "?"),
                                 u.value("mode", "?"), joined(u.value("addresses", nlohmann::json::array())), u.value("repairs", 0),
                                 last.empty() ? "" : "  last: " + last, contested ? "  CONTESTED (repairs held back)" : "");
    }
    if (s.contains("networkdDropins")) {
        const auto& n = s["networkdDropins"];
        std::cout << fmt::format("networkd   drop-ins in {} for {}  written again {}\n", n.value("dir", "?"),
                                 joined(n.value("interfaces", nlohmann::json::array())), n.value("rewritten", 0));
    }
    if (s.contains("gateway")) {
        const auto& g = s["gateway"];
        std::string addrs;
        for (const auto& a : g.value("addresses", nlohmann::json::array())) addrs += (addrs.empty() ? "" : " ") + a.get<std::string>();
        std::cout << fmt::format("gateway    {} present {}  addresses {}  restores {}  last restore {} us\n", g.value("name", "?"),
                                 yesNo(g.value("present", false)), addrs, g.value("restores", 0), g.value("lastRestoreMicros", 0));
    }
    if (s.contains("offload")) {
        const auto& o = s["offload"];
        std::cout << fmt::format("offload    devices checked {}  repaired {} (pod veth host ends isolated {})\n", o.value("checked", 0),
                                 o.value("repaired", 0), o.value("hostVethsIsolated", 0));
    }
    if (s.contains("flows")) {
        const auto& f = s["flows"];
        std::string err = f.value("error", "");
        auto dropped = f.value("dropped", nlohmann::json::object());
        std::cout << fmt::format("flows      installs {}  read-back repairs {}  Services reply path {}  dropped: unknown tunnel source {}, "
                                 "spoofed {}{}\n",
                                 f.value("installs", 0), f.value("readBackRepairs", 0), f.value("serviceReplyPath", false) ? "on" : "off",
                                 dropped.value("tunnelUnknownSource", 0), dropped.value("podSpoofed", 0), err.empty() ? "" : "  error: " + err);
        for (const auto& why : f.value("podsLeftOut", nlohmann::json::array())) std::cout << "  left out: " << why.get<std::string>() << "\n";
    }
    if (s.contains("networkPolicy")) {
        const auto& np = s["networkPolicy"];
        const auto dropped = s.value("flows", nlohmann::json::object()).value("dropped", nlohmann::json::object());
        std::cout << fmt::format("policy     {} policies, {} pods, {} namespaces; {} rules for this node's pods; dropped: ingress {}, egress {}\n",
                                 np.value("policies", 0), np.value("pods", 0), np.value("namespaces", 0), np.value("rules", 0),
                                 dropped.value("policyIngress", 0), dropped.value("policyEgress", 0));
        printWarnings(np.value("warnings", nlohmann::json::object()));
        const auto unreadable = np.value("unreadable", nlohmann::json::object());
        for (const auto& [name, why] : unreadable.items()) std::cout << fmt::format("  UNREADABLE {}: {}\n", name, why.get<std::string>());
    }
    if (s.contains("egress")) {
        const auto& e = s["egress"];
        std::string err = e.value("error", "");
        std::cout << fmt::format("egress     {}{}{}\n", e.value("rules", ""), e.value("contested", false) ? "  CONTESTED (repairs held back)" : "",
                                 err.empty() ? "" : "  error: " + err);
    }
    auto peers = s.value("peers", nlohmann::json::array());
    std::cout << fmt::format("peers      {}\n", peers.size());
    for (const auto& p : peers) {
        // Each family: the tunnel's address first, the node's other one and
        // the pod CIDRs after the tunnel state.
        auto tunnel = p.value("nodeIP", "?");
        std::string other;
        for (const auto& ip : p.value("nodeIPs", nlohmann::json::array()))
            if (ip.get<std::string>() != tunnel) other += (other.empty() ? "" : ", ") + ip.get<std::string>();
        auto pods = joined(p.value("podCIDRs", nlohmann::json::array()));
        std::cout << fmt::format("  {:<16} {:<16} route {:<3} neighbour {:<3} pods {}{}\n", p.value("name", "?"), tunnel,
                                 yesNo(p.value("route", false)), yesNo(p.value("neighbour", false)), pods.empty() ? "-" : pods,
                                 other.empty() ? "" : "  (also at " + other + ")");
    }
    for (const auto& r : s.value("rejectedPeers", nlohmann::json::array()))
        std::cout << fmt::format("  REFUSED {:<16} {}\n", r.value("name", "?"), r.value("reason", ""));
    auto repairs = s.value("recentRepairs", nlohmann::json::array());
    if (!repairs.empty()) std::cout << "recent repairs\n";
    for (const auto& r : repairs) std::cout << fmt::format("  {}  {:<10} {}\n", r.value("time", ""), r.value("kind", ""), r.value("detail", ""));
}

void printPolicy(const nlohmann::json& p) {
    if (p.contains("error")) throw std::runtime_error(p["error"].get<std::string>());
    auto addrs = joined(p.value("addresses", nlohmann::json::array()));
    std::cout << fmt::format("pod {} on {} ({})\n", p.value("pod", "?"), p.value("podNode", "?"), addrs.empty() ? "no address yet" : addrs);
    if (p.value("hostNetwork", false)) {
        std::cout << "  hostNetwork: NetworkPolicy does not select it (it is its node)\n";
        return;
    }
    for (const char* dir : {"ingress", "egress"}) {
        const auto& d = p[dir];
        const auto admin = d.value("admin", nlohmann::json::array());
        const bool isolated = d.value("isolated", false);
        const std::string peers = std::string(dir) == "ingress" ? "from" : "to";
        auto packets = [](const nlohmann::json& r, const char* verb) {
            return r.contains("packets") ? fmt::format("  {} {} packets", verb, r.value("packets", 0)) : std::string();
        };
        // The admin tiers' rules of `tier`, in the order they decide.
        auto adminRules = [&](const std::string& tier) {
            for (const auto& r : admin) {
                if (r.value("tier", "") != tier) continue;
                std::cout << fmt::format("           {} {}{} rule {}: {} {} {}  ports {}{}\n",
                                         tier == "AdminNetworkPolicy" ? "ANP" : "BANP", r.value("policy", "?"),
                                         r.contains("priority") ? fmt::format(" (priority {})", r.value("priority", 0)) : "",
                                         r.value("rule", "?"), r.value("action", "?"), peers, joined(r["peers"]), joined(r["ports"]),
                                         packets(r, "decided"));
            }
        };
        if (!isolated && admin.empty()) {
            std::cout << fmt::format("  {:<7}  open: no policy selects it\n", dir);
            continue;
        }
        if (!isolated) {
            std::cout << fmt::format("  {:<7}  no NetworkPolicy selects it; the admin tiers' rules, in the order they decide:\n", dir);
        } else {
            std::cout << fmt::format("  {:<7}  isolated by {}; what no rule below allows is dropped\n", dir, joined(d["policies"]));
            if (!p.value("realizedHere", false)) {
                std::cout << fmt::format("           (its rules are realized on {}: run kovsctl policy there)\n", p.value("podNode", "its node"));
                continue;
            }
        }
        adminRules("AdminNetworkPolicy");
        if (isolated) {
            if (d.contains("dropped"))
                std::cout << fmt::format("           dropped {} packets no rule allowed (first packets of new connections)\n",
                                         d.value("dropped", 0));
            if (d["rules"].empty()) std::cout << "           no rule allows anything\n";
            for (const auto& r : d["rules"])
                std::cout << fmt::format("           rule {} of {} (conjunction {}): {} {}  ports {}{}\n", r.value("rule", 0), r.value("policy", "?"),
                                         r.value("id", 0), peers, joined(r["peers"]), joined(r["ports"]), packets(r, "allowed"));
        }
        adminRules("BaselineAdminNetworkPolicy");
    }
    printWarnings(p.value("warnings", nlohmann::json::object()));
}

// PORT/PROTO, PROTO/PORT or PORT ("80/TCP", "udp/53", "8080"): TCP unless named.
std::pair<int, std::string> parsePortProtocol(const std::string& text) {
    std::string port = text, proto = "TCP";
    if (auto slash = text.find('/'); slash != std::string::npos) {
        port = text.substr(0, slash);
        proto = text.substr(slash + 1);
        if (!port.empty() && !std::isdigit(static_cast<unsigned char>(port[0]))) std::swap(port, proto);
    }
    for (auto& c : proto) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
        std::stoi(port) > 65535 || (proto != "TCP" && proto != "UDP" && proto != "SCTP"))
        throw std::runtime_error("'" + text + "' is not PORT/PROTOCOL (a port 1-65535; TCP, UDP or SCTP), e.g. 80/TCP");
    return {std::stoi(port), proto};
}

std::string traceEnd(const nlohmann::json& e) {
    auto given = e.value("given", "?"), address = e.value("address", "?");
    return given == address ? address : given + " (" + address + ")";
}

// Returns whether the packet was dropped.
bool printTrace(const nlohmann::json& t, const nlohmann::json& peers, bool ofproto) {
    if (t.contains("error") && !t.contains("steps")) throw std::runtime_error(t["error"].get<std::string>());
    std::cout << fmt::format("trace {} -> {} {}/{} on {}, as the first packet of a new connection\n", traceEnd(t["from"]),
                             traceEnd(t["to"]), t.value("port", 0), t.value("protocol", "?"), t.value("bridge", "br-int"));
    std::cout << "packet " << t.value("packet", "") << "\n";
    for (const auto& s : t.value("steps", nlohmann::json::array())) {
        auto match = s.value("match", "");
        std::cout << fmt::format("  table {:>2}  {:<36} {}\n", s.value("table", 0), s.value("stage", ""), match.empty() ? "(any packet)" : match);
        if (!s.value("meaning", "").empty()) std::cout << fmt::format("            -> {}\n", s.value("meaning", ""));
    }
    if (ofproto) std::cout << "\nofproto/trace said:\n" << t.value("ofproto", "") << "\n\n";
    if (t.contains("error")) std::cout << "could not read the trace: " << t["error"].get<std::string>() << "\n";
    std::cout << "verdict: " << t.value("verdict", "?") << "\n";
    // The same trace on another node: of the same family (IPv4 is the
    // default where both ends have both).
    const auto again = fmt::format("kovsctl trace {} {} {}/{}{}", t["from"].value("given", "?"), t["to"].value("given", "?"),
                                   t.value("port", 0), t.value("protocol", "?"),
                                   t["from"].value("address", "").find(':') != std::string::npos ? " -6" : "");
    const auto here = t.value("node", ""), source = t["from"].value("node", "");
    if (!source.empty() && !here.empty() && source != here)
        std::cout << fmt::format("starts on {}: {} ({} runs there; this is its packet as it arrives on {})\n", source, again,
                                 t["from"].value("given", "?"), here);
    if (t.contains("tunnelPeer")) {
        const auto peer = t["tunnelPeer"].get<std::string>();
        std::string node = "the node at " + peer;
        for (const auto& p : peers) {
            if (p.value("nodeIP", "") == peer) node = p.value("name", node) + " (" + peer + ")";
        }
        std::cout << fmt::format("continue on {}: {}\n", node, again);
    }
    return t.value("dropped", false);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"kovsctl: inspect and check kovs on this node"};
    app.require_subcommand(1);
    std::string configPath = "/etc/kovs/agent.yaml", socket;
    bool json = false;
    app.add_option("-c,--config", configPath, "the agent's configuration (names, sockets)");

    auto* status = app.add_subcommand("status", "the agent's view: bridges, peers, gateway, offload, recent repairs");
    status->add_option("--socket", socket, "agent status socket (default: statusSocket from the config)");
    status->add_flag("--json", json, "print the raw JSON");
    auto* policy = app.add_subcommand("policy", "the NetworkPolicies that select a pod, per direction, and the rules realized for it");
    std::string podKey;
    policy->add_option("pod", podKey, "NAMESPACE/NAME");
    policy->add_option("--socket", socket, "agent status socket (default: statusSocket from the config)");
    policy->add_flag("--json", json, "print the raw JSON");
    auto* policyLog = policy->add_subcommand("log", "the connections logged policies (kovs.dev/log) decided on this node");
    bool follow = false;
    policyLog->add_flag("-f,--follow", follow, "keep printing new entries until Ctrl-C");
    policyLog->add_option("--socket", socket, "agent status socket (default: statusSocket from the config)");
    policyLog->add_flag("--json", json, "one JSON object a line");
    auto* trace = app.add_subcommand("trace", "what br-int does with one packet, table by table, and why (exit 1: dropped)");
    std::string traceFrom, traceTo, tracePort = "80/TCP";
    bool ipv4 = false, ipv6 = false, ofproto = false;
    trace->add_option("from", traceFrom, "NAMESPACE/POD or an address")->required();
    trace->add_option("to", traceTo, "NAMESPACE/POD or an address")->required();
    trace->add_option("port", tracePort, "PORT/PROTOCOL (default 80/TCP)");
    auto* v4 = trace->add_flag("-4,--ipv4", ipv4, "IPv4 (default: IPv4 where both ends have it)");
    trace->add_flag("-6,--ipv6", ipv6, "IPv6")->excludes(v4);
    trace->add_flag("--ofproto", ofproto, "also print OVS's own trace");
    trace->add_option("--socket", socket, "agent status socket (default: statusSocket from the config)");
    trace->add_flag("--json", json, "print the raw JSON");
    auto* doctor = app.add_subcommand("doctor", "check every known failure mode on this node; non-zero exit on failure");
    doctor->add_flag("--json", json, "print the results as JSON");
    auto* probe = app.add_subcommand("probe", "the smoke test's ends (kovs-kind check): a server to reach, and the checks");
    probe->require_subcommand(1);
    uint16_t port = 8080;
    auto* serve = probe->add_subcommand("serve", "answer HTTP on PORT with 'kovs-probe <hostname>' until killed");
    serve->add_option("--port", port, "TCP port (both families where the node has IPv6)")->check(CLI::Range(1, 65535));
    auto* check = probe->add_subcommand("check", "try each target once; one line a target; non-zero exit if any failed");
    std::vector<std::string> targets;
    double timeoutSeconds = 2;
    check->add_option("target", targets, "NAME=tcp:HOST:PORT (HOST an address or a DNS name; [IPv6]) or NAME=ping:ADDRESS")
        ->required();
    check->add_option("--timeout", timeoutSeconds, "seconds each target may take")->check(CLI::Range(0.1, 60.0));
    CLI11_PARSE(app, argc, argv);

    if (*probe) {
        try {
            if (*serve) kovs::ctl::serveProbes(port);
            std::vector<kovs::ctl::ProbeTarget> parsed;
            for (const auto& t : targets) parsed.push_back(kovs::ctl::parseProbeTarget(t));
            bool allOk = true;
            auto timeout = std::chrono::milliseconds(static_cast<long>(timeoutSeconds * 1000));
            for (const auto& t : parsed) {
                auto r = kovs::ctl::probe(t, timeout);
                allOk = allOk && r.ok;
                std::cout << kovs::ctl::formatProbeLine(t, r) << std::endl;
            }
            return allOk ? 0 : 1;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "kovsctl probe: %s\n", e.what());
            return 2;
        }
    }

    try {
        kovs::setupLogging("warn");
        auto config = kovs::agent::loadConfig(configPath);
        if (*status) {
            auto s = kovs::unixJsonRequest(socket.empty() ? config.statusSocket : socket, {{"command", "status"}});
            if (json) std::cout << s.dump(2) << "\n";
            else printStatus(s);
            return 0;
        }
        if (*policyLog) return kovs::ctl::policyLog(socket.empty() ? config.statusSocket : socket, follow, json);
        if (*policy) {
            if (podKey.empty()) throw std::runtime_error("policy: give a pod (NAMESPACE/NAME), or log");
            auto p = kovs::unixJsonRequest(socket.empty() ? config.statusSocket : socket, {{"command", "policy"}, {"pod", podKey}});
            if (json) std::cout << p.dump(2) << "\n";
            else printPolicy(p);
            return 0;
        }
        if (*trace) {
            auto [port, protocol] = parsePortProtocol(tracePort);
            const auto path = socket.empty() ? config.statusSocket : socket;
            auto t = kovs::unixJsonRequest(path, {{"command", "trace"}, {"from", traceFrom}, {"to", traceTo}, {"port", port},
                                                  {"protocol", protocol}, {"family", ipv6 ? 6 : ipv4 ? 4 : 0}});
            if (json) {
                if (t.contains("error") && !t.contains("steps")) throw std::runtime_error(t["error"].get<std::string>());
                std::cout << t.dump(2) << "\n";
                return t.value("dropped", false) ? 1 : 0;
            }
            auto peers = t.contains("tunnelPeer") ? kovs::unixJsonRequest(path, {{"command", "status"}}).value("peers", nlohmann::json::array())
                                                  : nlohmann::json::array();
            return printTrace(t, peers, ofproto) ? 1 : 0;
        }
        kovs::ctl::Doctor d(config);
        auto checks = d.run();
        if (json) std::cout << kovs::ctl::toJson(checks).dump(2) << "\n";
        else std::cout << "kovsctl doctor on node " << config.node.name << "\n" << kovs::ctl::formatReport(checks);
        for (const auto& c : checks) {
            if (c.status == kovs::ctl::DoctorCheck::Status::Fail) return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kovsctl: %s\n", e.what());
        return 2;
    }
}
