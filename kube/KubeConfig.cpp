#include "kube/KubeConfig.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/Error.hpp"
#include "base/Strings.hpp"

extern char** environ;

namespace kovs::kube {
namespace {

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string resolve(const std::string& baseDir, const std::string& p) {
    if (p.empty() || p[0] == '/') return p;
    return (std::filesystem::path(baseDir) / p).string();
}

std::string str(const YAML::Node& n, const char* key) {
    auto v = n[key];
    return v && v.IsScalar() ? v.Scalar() : "";
}

// Finds `name` in a kubeconfig list like clusters: [{name, cluster: {...}}].
YAML::Node findNamed(const YAML::Node& list, const std::string& name, const char* inner, const std::string& what) {
    if (list && list.IsSequence()) {
        for (const auto& e : list) {
            if (e.IsMap() && str(e, "name") == name && e[inner] && e[inner].IsMap()) return e[inner];
        }
    }
    throw Error(what + ": no " + std::string(inner) + " named '" + name + "'");
}

}  // namespace

std::string base64Decode(const std::string& in) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    size_t pad = 0;
    for (char c : in) {
        if (c == '\n' || c == '\r' || c == ' ') continue;
        if (c == '=') {
            ++pad;
            continue;
        }
        int v = value(c);
        if (v < 0 || pad) throw Error("base64: invalid character");
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    if (pad > 2 || bits >= 6) throw Error("base64: truncated input");
    return out;
}

std::string KubeCredentials::bearerToken() const {
    if (!tokenFile.empty()) return trim(readFile(tokenFile, "service account token"));
    return token;
}

KubeCredentials inClusterCredentials(const std::map<std::string, std::string>& env, const std::string& saDir) {
    auto get = [&](const char* k) {
        auto it = env.find(k);
        return it == env.end() ? std::string() : it->second;
    };
    std::string host = get("KUBERNETES_SERVICE_HOST"), port = get("KUBERNETES_SERVICE_PORT");
    if (host.empty() || port.empty()) {
        throw Error("in-cluster Kubernetes config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
    }
    if (port.find_first_not_of("0123456789") != std::string::npos) {
        throw Error("in-cluster Kubernetes config: KUBERNETES_SERVICE_PORT '" + port + "' is not a port number");
    }
    KubeCredentials c;
    bool v6 = host.find(':') != std::string::npos;
    c.server = "https://" + (v6 ? "[" + host + "]" : host) + ":" + port;
    c.tokenFile = saDir + "/token";
    c.caFile = saDir + "/ca.crt";
    if (!std::filesystem::exists(c.tokenFile)) throw Error("in-cluster Kubernetes config: missing " + c.tokenFile);
    if (!std::filesystem::exists(c.caFile)) throw Error("in-cluster Kubernetes config: missing " + c.caFile);
    return c;
}

KubeCredentials inClusterCredentials() {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return inClusterCredentials(env);
}

KubeCredentials parseKubeconfig(const std::string& text, const std::string& baseDir, const std::string& context,
                                const std::string& origin) {
    std::string what = "kubeconfig " + origin;
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw Error(what + ": " + e.what());
    }
    if (!root.IsMap()) throw Error(what + ": not a kubeconfig mapping");
    std::string ctxName = context.empty() ? str(root, "current-context") : context;
    if (ctxName.empty()) throw Error(what + ": no current-context and no context given");
    YAML::Node ctx = findNamed(root["contexts"], ctxName, "context", what);
    YAML::Node cluster = findNamed(root["clusters"], str(ctx, "cluster"), "cluster", what);
    KubeCredentials c;
    c.server = str(cluster, "server");
    if (c.server.rfind("https://", 0) != 0 && c.server.rfind("http://", 0) != 0) {
        throw Error(what + ": cluster server '" + c.server + "' is not an http(s) URL");
    }
    while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
    try {
        c.caData = base64Decode(str(cluster, "certificate-authority-data"));
    } catch (const Error& e) {
        throw Error(what + ": certificate-authority-data: " + e.what());
    }
    c.caFile = resolve(baseDir, str(cluster, "certificate-authority"));
    c.insecureSkipTlsVerify = str(cluster, "insecure-skip-tls-verify") == "true";
    std::string userName = str(ctx, "user");
    if (!userName.empty()) {
        YAML::Node user = findNamed(root["users"], userName, "user", what);
        c.token = str(user, "token");
        c.tokenFile = resolve(baseDir, str(user, "tokenFile"));
        try {
            c.clientCertData = base64Decode(str(user, "client-certificate-data"));
            c.clientKeyData = base64Decode(str(user, "client-key-data"));
        } catch (const Error& e) {
            throw Error(what + ": user " + userName + ": " + e.what());
        }
        c.clientCertFile = resolve(baseDir, str(user, "client-certificate"));
        c.clientKeyFile = resolve(baseDir, str(user, "client-key"));
        if (user["exec"] || user["auth-provider"]) {
            throw Error(what + ": user " + userName + ": exec/auth-provider credentials are not supported");
        }
    }
    return c;
}

KubeCredentials kubeconfigCredentials(const std::string& path, const std::string& context) {
    auto dir = std::filesystem::path(path).parent_path().string();
    return parseKubeconfig(readFile(path, "kubeconfig"), dir.empty() ? "." : dir, context, path);
}

}  // namespace kovs::kube
