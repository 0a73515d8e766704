#pragma once
// The kind/ files are deployed where nothing here can run them (a real kind
// cluster), so the tests in this folder read them and hold them to the code:
// the agent config they ship is one kovs::parseConfig accepts, the CNI entries
// are ones kovs-cni's own parser accepts, and names, labels, volumes, ports,
// images and capabilities agree across the files. The scripts run for real,
// on temp dirs. This header holds what they share: reading the files, running
// the scripts, and the fixtures KindFiles (kind/manifests/kovs.yaml) and
// CompanionOverlay (kind/overlays/companion on top of it).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "agent/Config.hpp"
#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/TempDir.hpp"

// A named namespace: the fixtures must be one type across the files of one
// suite (gtest requires it).
namespace kovs::test::kind {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using kovs::agent::Config;

inline fs::path sourceDir() {
    const char* dir = std::getenv("KOVS_SOURCE_DIR");
    if (!dir || !*dir) throw kovs::Error("KOVS_SOURCE_DIR is not set (meson test sets it to the source root)");
    return dir;
}

inline std::string readFile(const fs::path& p) {
    std::ifstream f(p);
    if (!f) throw kovs::Error("read " + p.string() + ": cannot open");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

inline void writeFile(const fs::path& p, const std::string& text) {
    std::ofstream f(p);
    f << text;
    if (!f) throw kovs::Error("write " + p.string() + ": failed");
}

using kovs::test::TempDir;

// Every document of a multi-document YAML file, keyed "Kind/name".
inline std::map<std::string, YAML::Node> loadDocuments(const fs::path& p) {
    std::map<std::string, YAML::Node> out;
    for (const auto& doc : YAML::LoadAll(readFile(p))) {
        if (!doc || doc.IsNull()) continue;
        auto key = doc["kind"].as<std::string>() + "/" + doc["metadata"]["name"].as<std::string>();
        EXPECT_FALSE(out.count(key)) << p << ": " << key << " appears twice";
        out[key] = doc;
    }
    return out;
}

inline std::vector<std::string> strings(const YAML::Node& seq) {
    std::vector<std::string> out;
    if (seq) {
        for (const auto& s : seq) out.push_back(s.as<std::string>());
    }
    return out;
}

// All containers of a pod spec, init containers included.
inline std::vector<YAML::Node> allContainers(const YAML::Node& podSpec) {
    std::vector<YAML::Node> out;
    for (const auto* key : {"initContainers", "containers"}) {
        if (podSpec[key]) {
            for (const auto& c : podSpec[key]) out.push_back(c);
        }
    }
    return out;
}

inline YAML::Node containerNamed(const YAML::Node& podSpec, const std::string& name) {
    for (const auto& c : allContainers(podSpec)) {
        if (c["name"].as<std::string>() == name) return c;
    }
    throw kovs::Error("no container named " + name);
}

// The name of the volume a container mounts at `path`; "" for none.
inline std::string mountOf(const YAML::Node& container, const std::string& path) {
    for (const auto& m : container["volumeMounts"]) {
        if (m["mountPath"].as<std::string>() == path) return m["name"].as<std::string>();
    }
    return "";
}

// The node path behind the hostPath volume a container mounts at `path`; "" for none.
inline std::string hostPathAt(const YAML::Node& podSpec, const YAML::Node& container, const std::string& path) {
    auto name = mountOf(container, path);
    for (const auto& v : podSpec["volumes"]) {
        if (v["name"].as<std::string>() == name && v["hostPath"]) return v["hostPath"]["path"].as<std::string>();
    }
    return "";
}

inline std::string envValue(const YAML::Node& container, const std::string& name) {
    for (const auto& e : container["env"]) {
        if (e["name"].as<std::string>() == name) return e["value"] ? e["value"].as<std::string>() : "";
    }
    return "";
}

// What the container runtime hands a plugin of a conflist: the plugin's own
// object plus the list's cniVersion and name (and, chained, a prevResult).
inline Json pluginConfig(const Json& conflist, const Json& plugin) {
    Json c = plugin;
    c["cniVersion"] = conflist.at("cniVersion");
    c["name"] = conflist.at("name");
    return c;
}

inline kovs::ProcessResult runScript(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
    kovs::ProcessOptions opts;
    opts.env = env;
    opts.stdinData = "";
    return kovs::runProcess(argv, opts);
}

class KindFiles : public ::testing::Test {
protected:
    void SetUp() override {
        src_ = sourceDir();
        docs_ = loadDocuments(src_ / "kind/manifests/kovs.yaml");
        ASSERT_TRUE(docs_.count("ConfigMap/kovs-config")) << "kind/manifests/kovs.yaml has no ConfigMap kovs-config";
        ASSERT_TRUE(docs_.count("DaemonSet/kovs-agent")) << "kind/manifests/kovs.yaml has no DaemonSet kovs-agent";
        configMap_ = docs_["ConfigMap/kovs-config"];
        ds_ = docs_["DaemonSet/kovs-agent"];
        podSpec_ = ds_["spec"]["template"]["spec"];
    }

    std::string agentTemplate() const { return configMap_["data"]["agent.yaml"].as<std::string>(); }
    Json conflist() const { return Json::parse(configMap_["data"]["10-kovs.conflist"].as<std::string>()); }

    // Runs kind/kovs-node-init (the init container's script) on temp dirs
    // standing in for the ConfigMap mount, /etc/kovs and the node's CNI dirs.
    kovs::ProcessResult nodeInit(const TempDir& dir, const std::map<std::string, std::string>& data,
                                 std::map<std::string, std::string> env, const std::string& command = "init") const {
        fs::create_directories(dir / "template");
        for (const auto& [key, text] : data) writeFile(dir / "template" / key, text);
        writeFile(dir / "kovs-cni", "#!/bin/sh\nexit 0\n");
        fs::permissions(dir / "kovs-cni", fs::perms::owner_all);
        std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
        env["PATH"] = env.count("PATH") ? env["PATH"] + ":" + path : path;  // a test's own tools first
        env["KOVS_TEMPLATE_DIR"] = (dir / "template").string();
        env["KOVS_CONFIG_DIR"] = (dir / "etc-kovs").string();
        env["KOVS_CNI_BINARY"] = (dir / "kovs-cni").string();
        env["KOVS_CNI_BIN_DIR"] = (dir / "opt-cni-bin").string();
        env["KOVS_CNI_NET_DIR"] = (dir / "net.d").string();
        // A real dynamic binary stands in for kovsctl: echo shows the arguments
        // the node's wrapper gives it, through the bundled loader and libraries.
        env["KOVS_KOVSCTL_BINARY"] = "/bin/echo";
        env["KOVS_OFCTL_BINARY"] = "/bin/echo";
        env["KOVS_NODE_TOOLS_DIR"] = (dir / "opt-kovs").string();
        return runScript({(src_ / "kind/kovs-node-init").string(), command}, env);
    }

    std::map<std::string, std::string> configMapData(const YAML::Node& cm) const {
        std::map<std::string, std::string> out;
        for (const auto& kv : cm["data"]) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
        return out;
    }

    fs::path src_;
    std::map<std::string, YAML::Node> docs_;
    YAML::Node configMap_, ds_, podSpec_;
};

class CompanionOverlay : public KindFiles {
protected:
    void SetUp() override {
        KindFiles::SetUp();
        auto dir = src_ / "kind/overlays/companion";
        auto kustomization = YAML::LoadFile((dir / "kustomization.yaml").string());
        EXPECT_EQ(strings(kustomization["resources"]), std::vector<std::string>{"../../manifests"});
        for (const auto& p : kustomization["patches"]) {
            for (auto& [key, doc] : loadDocuments(dir / p["path"].as<std::string>())) patches_[key] = doc;
        }
        ASSERT_TRUE(patches_.count("ConfigMap/kovs-config"));
        ASSERT_TRUE(patches_.count("DaemonSet/kovs-agent"));
        auto base = YAML::LoadFile((src_ / "kind/manifests/kustomization.yaml").string());
        EXPECT_EQ(strings(base["resources"]), std::vector<std::string>{"kovs.yaml"});
    }
    // The ConfigMap as `kubectl apply -k kind/overlays/companion` makes it:
    // the overlay's keys over the base's, as kustomize merges.
    std::map<std::string, std::string> companionConfigMapData() const {
        auto data = configMapData(configMap_);
        for (const auto& [k, v] : configMapData(patches_.at("ConfigMap/kovs-config"))) data[k] = v;
        return data;
    }
    std::map<std::string, YAML::Node> patches_;
};

}  // namespace kovs::test::kind
