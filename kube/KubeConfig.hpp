#pragma once
// How to reach and authenticate to the Kubernetes API server: the in-cluster
// service account, or a kubeconfig file.
#include <map>
#include <string>

namespace kovs::kube {

struct KubeCredentials {
    std::string server;  // "https://host:port", no trailing slash
    // Trust: PEM data or a file; neither means the system CA store.
    std::string caData;
    std::string caFile;
    // Bearer token; tokenFile is re-read on every connection because
    // projected service-account tokens rotate.
    std::string token;
    std::string tokenFile;
    // Client certificate authentication (kind's admin kubeconfig uses it).
    std::string clientCertData, clientCertFile;
    std::string clientKeyData, clientKeyFile;
    bool insecureSkipTlsVerify = false;
    // A bearer token goes only to a server that TLS has proven (https://,
    // certificate verified): KubeHttpClient refuses anything else unless
    // this is set, on purpose (a test bed's plain-http API server).
    bool allowUnprotectedToken = false;

    std::string bearerToken() const;  // throws when tokenFile cannot be read
};

// KUBERNETES_SERVICE_HOST/PORT from `env`, token and ca.crt from `saDir`.
KubeCredentials inClusterCredentials(const std::map<std::string, std::string>& env,
                                     const std::string& saDir = "/var/run/secrets/kubernetes.io/serviceaccount");
// The process environment, for the agent.
KubeCredentials inClusterCredentials();

// `context` empty: the kubeconfig's current-context. Relative file paths are
// resolved against the kubeconfig's directory, as kubectl does.
KubeCredentials kubeconfigCredentials(const std::string& path, const std::string& context = "");
KubeCredentials parseKubeconfig(const std::string& text, const std::string& baseDir, const std::string& context,
                                const std::string& origin);

// Standard base64 (as in kubeconfig *-data fields); throws on invalid input.
std::string base64Decode(const std::string& in);

}  // namespace kovs::kube
