// The kovs-cni input parser: every bad environment or configuration is
// rejected with the spec's code and a message naming what was wrong.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "base/UniqueFd.hpp"
#include "base/UnixAddress.hpp"

#include "cni/CniError.hpp"
#include "cni/CniRequest.hpp"
#include "cni/CniPlugin.hpp"
#include "cni/CniResult.hpp"
#include "tests/support/TempDir.hpp"

using namespace kovs::cni;

namespace {

Env addEnv() {
    return {{"CNI_COMMAND", "ADD"}, {"CNI_CONTAINERID", "c0ffee"}, {"CNI_NETNS", "/run/netns/pod"},
            {"CNI_IFNAME", "eth0"}, {"CNI_PATH", "/usr/lib/cni:/opt/cni/bin"},
            {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"}};
}

const char* kMainConf = R"({"cniVersion":"1.0.0","name":"kovs","type":"kovs","ipam":{"type":"host-local","subnet":"10.244.0.0/24"}})";

struct BadInput {
    const char* name;
    Env env;
    std::string conf;
    int code;
    const char* msgPart;
};

Env with(Env e, const std::string& k, const std::string& v) {
    e[k] = v;
    return e;
}
Env without(Env e, const std::string& k) {
    e.erase(k);
    return e;
}

std::string mainWith(const std::string& extra) {
    std::string s = kMainConf;
    s.pop_back();
    return s + "," + extra + "}";
}

}  // namespace

TEST(CniRequestParser, ParsesMainModeAdd) {
    auto req = CniRequestParser::parse(addEnv(), kMainConf);
    EXPECT_EQ(req.command, Command::Add);
    EXPECT_EQ(req.containerId, "c0ffee");
    EXPECT_EQ(req.ifname, "eth0");
    EXPECT_EQ(req.path, (std::vector<std::string>{"/usr/lib/cni", "/opt/cni/bin"}));
    EXPECT_EQ(req.arg("K8S_POD_NAME"), "web-0");
    EXPECT_EQ(req.arg("K8S_POD_NAMESPACE"), "default");
    EXPECT_TRUE(req.conf.mainMode());
    EXPECT_EQ(req.conf.ipamType(), "host-local");
    EXPECT_EQ(req.conf.podMtu(), 1450);
    EXPECT_EQ(req.conf.bridge, "br-int");
    EXPECT_EQ(req.conf.ovsdb, "unix:/var/run/openvswitch/db.sock");
    EXPECT_EQ(req.stdinData, kMainConf);
}

TEST(CniRequestParser, ParsesChainedModeAndOwnKeys) {
    auto conf = R"({"cniVersion":"1.1.0","name":"n","type":"kovs","uplinkMTU":9000,"bridge":"br-x",
                   "ovsdb":"unix:/tmp/db.sock","logLevel":"debug","agentSocket":"",
                   "prevResult":{"interfaces":[{"name":"eth0","sandbox":"/run/netns/p"}],"ips":[]}})";
    auto req = CniRequestParser::parse(addEnv(), conf);
    EXPECT_FALSE(req.conf.mainMode());
    ASSERT_TRUE(req.conf.prevResult);
    EXPECT_EQ(req.conf.podMtu(), 8950);
    EXPECT_EQ(req.conf.bridge, "br-x");
    EXPECT_EQ(req.conf.ovsdb, "unix:/tmp/db.sock");
    EXPECT_EQ(req.conf.agentSocket, "");
}

TEST(CniRequestParser, DelWithoutNetnsAndGcAndVersion) {
    auto del = CniRequestParser::parse(without(with(addEnv(), "CNI_COMMAND", "DEL"), "CNI_NETNS"), kMainConf);
    EXPECT_EQ(del.command, Command::Del);
    EXPECT_TRUE(del.netns.empty());

    Env gcEnv{{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/usr/lib/cni"}};
    auto gc = CniRequestParser::parse(gcEnv, mainWith(R"("cni.dev/valid-attachments":[{"containerID":"a","ifname":"eth0"}])")
                                                    .replace(15, 5, "1.1.0"));
    ASSERT_TRUE(gc.conf.validAttachments);
    EXPECT_EQ(gc.conf.validAttachments->at(0), (Attachment{"a", "eth0"}));

    auto version = CniRequestParser::parse({{"CNI_COMMAND", "VERSION"}}, "not even json");
    EXPECT_EQ(version.command, Command::Version);
}

TEST(CniRequestParser, RejectsBadInputWithSpecCodes) {
    const std::string v11 = R"({"cniVersion":"1.1.0","name":"kovs","type":"kovs","ipam":{"type":"host-local"}})";
    std::vector<BadInput> table = {
        {"no command", without(addEnv(), "CNI_COMMAND"), kMainConf, kInvalidEnv, "CNI_COMMAND is required"},
        {"unknown command", with(addEnv(), "CNI_COMMAND", "ATTACH"), kMainConf, kInvalidEnv, "CNI_COMMAND ATTACH"},
        {"no container id", without(addEnv(), "CNI_CONTAINERID"), kMainConf, kInvalidEnv, "CNI_CONTAINERID is required"},
        {"bad container id", with(addEnv(), "CNI_CONTAINERID", "-x/y"), kMainConf, kInvalidEnv, "CNI_CONTAINERID -x/y"},
        {"no netns on ADD", without(addEnv(), "CNI_NETNS"), kMainConf, kInvalidEnv, "CNI_NETNS is required"},
        {"relative netns", with(addEnv(), "CNI_NETNS", "pod"), kMainConf, kInvalidEnv, "not an absolute path"},
        {"no netns on CHECK", without(with(addEnv(), "CNI_COMMAND", "CHECK"), "CNI_NETNS"), kMainConf, kInvalidEnv, "CNI_NETNS"},
        {"no ifname", without(addEnv(), "CNI_IFNAME"), kMainConf, kInvalidEnv, "CNI_IFNAME is required"},
        {"ifname 16 bytes", with(addEnv(), "CNI_IFNAME", "abcdefghijklmnop"), kMainConf, kInvalidEnv, "longer than 15 characters"},
        {"ifname with slash", with(addEnv(), "CNI_IFNAME", "a/b"), kMainConf, kInvalidEnv, "contains '/'"},
        {"ifname dotdot", with(addEnv(), "CNI_IFNAME", ".."), kMainConf, kInvalidEnv, "not a valid interface name"},
        {"no path", without(addEnv(), "CNI_PATH"), kMainConf, kInvalidEnv, "CNI_PATH is required"},
        {"bad args", with(addEnv(), "CNI_ARGS", "K8S_POD_NAME"), kMainConf, kInvalidEnv, "is not KEY=VALUE"},
        {"empty stdin", addEnv(), "", kDecodeFailure, "not valid JSON"},
        {"truncated json", addEnv(), R"({"cniVersion":"1.0.0",)", kDecodeFailure, "not valid JSON"},
        {"json array", addEnv(), "[1,2]", kDecodeFailure, "must be a JSON object"},
        {"huge stdin", addEnv(), std::string(CniRequestParser::kMaxConfigBytes + 1, ' '), kDecodeFailure, "larger than"},
        {"version 0.2.0", addEnv(), R"({"cniVersion":"0.2.0","name":"n","type":"kovs"})", kIncompatibleVersion, "0.2.0 is not supported"},
        {"version 2.0.0", addEnv(), R"({"cniVersion":"2.0.0","name":"n","type":"kovs"})", kIncompatibleVersion, "not supported"},
        {"CHECK on 0.3.1", with(addEnv(), "CNI_COMMAND", "CHECK"), R"({"cniVersion":"0.3.1","name":"n","type":"kovs","ipam":{"type":"h"}})", kIncompatibleVersion, "does not allow CHECK"},
        {"GC on 1.0.0", {{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/x"}}, kMainConf, kIncompatibleVersion, "does not allow GC"},
        {"STATUS on 1.0.0", {{"CNI_COMMAND", "STATUS"}}, kMainConf, kIncompatibleVersion, "does not allow STATUS"},
        {"unknown field", addEnv(), mainWith(R"("hairpinMode":true)"), kUnsupportedField, "unsupported field hairpinMode=true"},
        {"ipMasq", addEnv(), mainWith(R"("ipMasq":true)"), kUnsupportedField, "ipMasq=true"},
        {"no cniVersion", addEnv(), R"({"name":"n","type":"kovs"})", kInvalidConfig, "cniVersion is required"},
        {"numeric cniVersion", addEnv(), R"({"cniVersion":1,"name":"n","type":"kovs"})", kInvalidConfig, "cniVersion must be a string"},
        {"no name", addEnv(), R"({"cniVersion":"1.0.0","type":"kovs","ipam":{"type":"h"}})", kInvalidConfig, "name is required"},
        {"wrong type", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"h"}})", kInvalidConfig, "type bridge is not kovs"},
        {"mtu string", addEnv(), mainWith(R"("mtu":"1400")"), kInvalidConfig, "mtu must be an integer"},
        {"mtu too small", addEnv(), mainWith(R"("mtu":67)"), kInvalidConfig, "mtu 67 is out of range"},
        {"mtu over uplink", addEnv(), mainWith(R"("mtu":1600,"uplinkMTU":1500)"), kInvalidConfig, "larger than uplinkMTU 1500"},
        {"uplink float", addEnv(), mainWith(R"("uplinkMTU":1500.5)"), kInvalidConfig, "uplinkMTU must be an integer"},
        {"uplink huge", addEnv(), mainWith(R"("uplinkMTU":99999999999)"), kInvalidConfig, "out of range"},
        {"ovsdb tcp", addEnv(), mainWith(R"("ovsdb":"tcp:1.2.3.4:6640")"), kInvalidConfig, "not unix:"},
        {"bridge too long", addEnv(), mainWith(R"("bridge":"br-int-is-too-long")"), kInvalidConfig, "longer than 15 characters"},
        {"log level", addEnv(), mainWith(R"("logLevel":"loud")"), kInvalidConfig, "logLevel loud"},
        {"agent socket relative", addEnv(), mainWith(R"("agentSocket":"run/agent.sock")"), kInvalidConfig, "agentSocket run/agent.sock is not an absolute"},
        {"agent socket too long", addEnv(), mainWith("\"agentSocket\":\"/" + std::string(120, 'a') + "\""), kInvalidConfig, "is not an absolute socket path"},
        {"agent socket number", addEnv(), mainWith(R"("agentSocket":1)"), kInvalidConfig, "agentSocket must be a string"},
        {"ipam not object", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"kovs","ipam":"host-local"})", kInvalidConfig, "ipam must be an object"},
        {"ipam without type", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"kovs","ipam":{}})", kInvalidConfig, "type is required"},
        {"ipam path escape", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"kovs","ipam":{"type":"../../bin/sh"}})", kInvalidConfig, "not a plugin name"},
        {"neither mode", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"kovs"})", kInvalidConfig, "ipam (main mode) or a prevResult"},
        {"both modes", addEnv(), mainWith(R"("prevResult":{})"), kInvalidConfig, "must be the first plugin"},
        {"prevResult array", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"kovs","prevResult":[]})", kInvalidConfig, "prevResult must be an object"},
        {"prevResult iface name", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"kovs","prevResult":{"interfaces":[{"name":"this-name-is-too-long"}]}})", kInvalidConfig, "longer than 15 characters"},
        {"prevResult sandbox", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"kovs","prevResult":{"interfaces":[{"name":"eth0","sandbox":7}]}})", kInvalidConfig, "sandbox must be a string"},
        {"prevResult ip index", addEnv(), R"({"cniVersion":"1.0.0","name":"n","type":"kovs","prevResult":{"ips":[{"address":"10.0.0.2/24","interface":-1}]}})", kInvalidConfig, "interface must be an index"},
        {"GC without list", {{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/x"}}, v11, kInvalidConfig, "needs cni.dev/valid-attachments"},
        {"GC bad list", {{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/x"}}, R"({"cniVersion":"1.1.0","name":"n","type":"kovs","cni.dev/valid-attachments":[{"containerID":1}]})", kInvalidConfig, "containerID and ifname"},
    };
    for (const auto& t : table) {
        try {
            CniRequestParser::parse(t.env, t.conf);
            ADD_FAILURE() << t.name << ": accepted";
        } catch (const CniError& e) {
            EXPECT_EQ(e.code(), t.code) << t.name << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find(t.msgPart), std::string::npos) << t.name << ": " << e.what();
            auto j = e.toJson("1.1.0");
            EXPECT_EQ(j.at("code"), t.code);
            EXPECT_EQ(j.at("msg"), e.what());
        }
    }
}

TEST(CniResult, WritesEachVersionsShape) {
    auto ipam = nlohmann::json::parse(R"({"cniVersion":"1.0.0","ips":[{"address":"10.244.0.5/24","gateway":"10.244.0.1"},
        {"address":"fd00::5/64"}],"routes":[{"dst":"0.0.0.0/0"}],"dns":{"nameservers":["10.96.0.10"]}})");
    auto r = CniResult::fromJson(ipam, "ipam result");
    r.interfaces = {{"kovs0123", "aa:bb:cc:dd:ee:01", "", 1450}, {"eth0", "aa:bb:cc:dd:ee:02", "/run/netns/p", 1450}};
    for (auto& ip : r.ips) ip.interface = 1;
    auto v1 = r.toJson("1.1.0");
    EXPECT_EQ(v1.at("ips").at(0), nlohmann::json::parse(R"({"address":"10.244.0.5/24","gateway":"10.244.0.1","interface":1})"));
    EXPECT_EQ(v1.at("interfaces").at(1).at("sandbox"), "/run/netns/p");
    EXPECT_EQ(v1.at("interfaces").at(1).at("mtu"), 1450);
    EXPECT_EQ(v1.at("dns").at("nameservers").at(0), "10.96.0.10");
    auto v04 = r.toJson("0.4.0");
    EXPECT_EQ(v04.at("ips").at(0).at("version"), "4");
    EXPECT_EQ(v04.at("ips").at(1).at("version"), "6");
    EXPECT_FALSE(v04.at("interfaces").at(1).contains("mtu"));
    EXPECT_FALSE(r.toJson("1.0.0").at("ips").at(0).contains("version"));
}

TEST(CniResult, RejectsMalformedIpamResults) {
    for (const char* bad : {R"([])", R"({"ips":{}})", R"({"ips":[{"gateway":"1.2.3.4"}]})", R"({"ips":[{"address":5}]})",
                            R"({"routes":[{"gw":"1.1.1.1"}]})", R"({"dns":[]})", R"({"interfaces":[{"mac":"x"}]})"}) {
        try {
            CniResult::fromJson(nlohmann::json::parse(bad), "ipam result");
            ADD_FAILURE() << bad << ": accepted";
        } catch (const CniError& e) {
            EXPECT_EQ(e.code(), kDecodeFailure) << bad;
            EXPECT_NE(std::string(e.what()).find("ipam result"), std::string::npos) << e.what();
        }
    }
}

// The plugin tells the agent how each command ended, even one whose config
// was rejected, and says nothing for VERSION.
TEST(CniPlugin, ReportsEachCommandsOutcomeToTheAgent) {
    kovs::test::TempDir tmp{"kovs-cni-report"};
    const std::string& dir = tmp.path();
    std::string path = std::string(dir) + "/agent.sock";
    kovs::UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    auto addr = kovs::unixAddress(path, "test socket");
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener.get(), 8), 0);
    auto nextReport = [&]() -> nlohmann::json {
        kovs::UniqueFd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!c) return nullptr;
        char buf[512];
        ssize_t n = ::read(c.get(), buf, sizeof buf);
        return n > 0 ? nlohmann::json::parse(std::string(buf, static_cast<size_t>(n))) : nlohmann::json();
    };

    std::ostringstream out;
    auto unsupported = R"({"cniVersion":"1.0.0","name":"n","type":"kovs","agentSocket":")" + path + R"(","ipam":{"type":"h"},"bogus":1})";
    EXPECT_EQ(CniPlugin::run(addEnv(), unsupported, out), 1);
    auto r = nextReport();
    EXPECT_EQ(r.value("command", ""), "cni-report") << r;
    EXPECT_EQ(r.value("cni", ""), "ADD") << r;
    EXPECT_EQ(r.value("code", -1), kUnsupportedField) << r;
    EXPECT_GE(r.value("seconds", -1.0), 0.0) << r;

    EXPECT_EQ(CniPlugin::run({{"CNI_COMMAND", "VERSION"}}, R"({"cniVersion":"1.0.0","agentSocket":")" + path + R"("})", out), 0);
    EXPECT_TRUE(nextReport().is_null()) << "VERSION was reported";
    std::filesystem::remove_all(dir);
}

// Bytes that are not UTF-8 in the environment, or a config excerpt cut inside
// a character, still give the runtime an error object: nlohmann's dump()
// throws on invalid UTF-8, which used to abort the plugin with no answer.
TEST(CniPlugin, AnswersWithAnErrorObjectWhateverTheBytes) {
    std::string cut = mainWith(R"("mtu":")" + std::string() + [] {
        std::string s = "a";
        for (int i = 0; i < 40; ++i) s += "\u00e9";  // 2 bytes each in UTF-8
        return s;
    }() + "\"");
    struct Case {
        const char* name;
        Env env;
        std::string conf;
    } cases[] = {
        {"CNI_COMMAND", with(addEnv(), "CNI_COMMAND", "\xff"), kMainConf},
        {"CNI_CONTAINERID", with(addEnv(), "CNI_CONTAINERID", "c\xff"), kMainConf},
        {"config excerpt cut inside a character", addEnv(), cut},
    };
    for (const auto& c : cases) {
        std::ostringstream out;
        EXPECT_EQ(CniPlugin::run(c.env, c.conf, out), 1) << c.name;
        auto err = nlohmann::json::parse(out.str(), nullptr, false);
        ASSERT_FALSE(err.is_discarded()) << c.name << ": " << out.str();
        EXPECT_GT(err.value("code", 0), 0) << c.name << ": " << err;
        EXPECT_FALSE(err.value("msg", "").empty()) << c.name << ": " << err;
    }
}
