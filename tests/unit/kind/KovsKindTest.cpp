// kind/kovs-kind, the script that makes a kind cluster with kovs: its
// --dry-run and --list-steps, its argument checks, and the real path against
// stand-ins for docker, kind and kubectl.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

// kovs-kind --dry-run runs with none of docker, kind or kubectl on PATH.
class KovsKindDryRun : public ::testing::Test {
protected:
    void SetUp() override {
        src_ = sourceDir();
        for (const char* tool : {"bash", "dirname", "basename", "uname", "sed", "awk", "cat", "grep", "wc", "tr", "sleep", "mktemp",
                                 "rm", "sort", "head", "env"}) {
            auto r = kovs::runProcess({"/bin/sh", "-c", std::string("command -v ") + tool});
            ASSERT_TRUE(r.ok()) << tool << " not found";
            auto target = r.out.substr(0, r.out.find('\n'));
            fs::create_symlink(target, bin_ / tool);
        }
        writeHost(host_.path(), "8192");
        env_ = {{"PATH", bin_.path()}, {"HOME", bin_.path()}, {"KOVS_KIND_HOST_ROOT", host_.path()}};
    }
    kovs::ProcessResult run(std::vector<std::string> args, std::map<std::string, std::string> extraEnv = {}) {
        args.insert(args.begin(), (src_ / "kind/kovs-kind").string());
        auto env = env_;
        for (auto& [k, v] : extraEnv) env[k] = v;
        return runScript(args, env);
    }
    // The host the preflight reads (KOVS_KIND_HOST_ROOT): inotify instances as
    // given, the other limits as kind wants them, no OVS module.
    static void writeHost(const fs::path& root, const std::string& inotifyInstances) {
        for (auto [key, value] : {std::pair{"inotify/max_user_instances", inotifyInstances},
                                  {"inotify/max_user_watches", "1048576"}, {"file-max", "9223372036854775807"}}) {
            fs::create_directories((root / "proc/sys/fs" / key).parent_path());
            writeFile(root / "proc/sys/fs" / key, value + "\n");
        }
    }
    // The lines of the output that are commands (indented under a step; not
    // the preflight's findings).
    static std::vector<std::string> commands(const std::string& out) {
        std::vector<std::string> lines;
        std::istringstream in(out);
        static const std::regex finding("    (ok|note|warn|FAIL)  .*");
        for (std::string l; std::getline(in, l);) {
            if (l.rfind("    ", 0) == 0 && l.find("(note:") == std::string::npos && !std::regex_match(l, finding))
                lines.push_back(l.substr(4));
        }
        return lines;
    }
    // The preflight's finding lines about WHAT.
    static std::vector<std::string> findings(const std::string& out, const std::string& what) {
        std::vector<std::string> lines;
        std::istringstream in(out);
        const std::regex finding("    (ok|note|warn|FAIL)  +" + what + "  .*");
        for (std::string l; std::getline(in, l);)
            if (std::regex_match(l, finding)) lines.push_back(l.substr(4));
        return lines;
    }
    fs::path src_;
    TempDir bin_, host_;
    std::map<std::string, std::string> env_;
};

TEST_F(KovsKindDryRun, UpPrintsEveryStepInOrder) {
    auto r = run({"up", "--dry-run"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto s = src_.string();
    std::vector<std::string> expected = {
        "docker build --file " + s + "/kind/Dockerfile --tag kovs:dev " + s,
        "kind create cluster --name kovs --config " + s + "/kind/cluster.yaml --wait 0s",
        "docker image inspect --format {{.Architecture}} kovs:dev   (must be what docker exec <node> uname -m says on every node)",
        "kind load docker-image kovs:dev --name kovs",
        "kubectl kustomize " + s + "/kind/manifests | sed 's|image: kovs:dev$|image: kovs:dev|' | kubectl --context kind-kovs apply -f -",
        "kubectl --context kind-kovs --namespace kovs-system rollout status daemonset/kovs-agent --timeout 300s",
        "kubectl --context kind-kovs get nodes   (every 3s, printing Ready/total, until all Ready)",
        "kubectl --context kind-kovs wait --for=condition=Ready nodes --all --timeout 60s",
    };
    auto got = commands(r.out);
    ASSERT_GE(got.size(), expected.size()) << r.out;
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "step command " << i;
    EXPECT_NE(r.out.find("kovsctl doctor"), std::string::npos) << "next steps should say how to diagnose";
    // The preflight runs (it only reads) and names each missing tool as a note.
    for (const char* tool : {"docker", "kind", "kubectl"}) {
        auto f = findings(r.out, tool);
        ASSERT_EQ(f.size(), 1u) << r.out;
        EXPECT_EQ(f[0].rfind("note", 0), 0u) << f[0];
        EXPECT_NE(f[0].find("not on PATH; needed to run this for real: "), std::string::npos) << f[0];
    }
    // Numbered steps, each announced before its command.
    EXPECT_NE(r.out.find("==> [1] preflight"), std::string::npos);
    EXPECT_NE(r.out.find("==> [3] network: kind's own"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("==> [9] smoke test"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("==> [10] next steps"), std::string::npos) << r.out;
}

// One list of steps: what --list-steps prints (the kind-node provider of the
// local cluster runs exactly those) is what up announces, in order.
TEST_F(KovsKindDryRun, ListStepsIsWhatUpRuns) {
    auto dry = run({"up", "--dry-run", "--image", "reg.io/kovs:1"});
    ASSERT_EQ(dry.exitCode, 0) << dry.err;
    auto listed = run({"up", "--list-steps", "--image", "reg.io/kovs:1"});
    ASSERT_EQ(listed.exitCode, 0) << listed.err;
    std::vector<std::string> announced, titles;
    std::istringstream d(dry.out), l(listed.out);
    for (std::string line; std::getline(d, line);) {
        std::smatch m;
        if (std::regex_match(line, m, std::regex("==> \\[[0-9]+\\] (.*)"))) announced.push_back(m[1]);
    }
    for (std::string line; std::getline(l, line);) {
        auto tab = line.find('\t');
        ASSERT_NE(tab, std::string::npos) << "not id<TAB>title: " << line;
        EXPECT_TRUE(std::regex_match(line.substr(0, tab), std::regex("[a-z_]+"))) << line;
        titles.push_back(line.substr(tab + 1));
    }
    EXPECT_EQ(announced, titles);
    EXPECT_NE(listed.out.find("build the image reg.io/kovs:1 from kind/Dockerfile"), std::string::npos) << listed.out;
    auto down = run({"down", "--list-steps"});
    EXPECT_EQ(down.exitCode, 2);
    EXPECT_NE(down.err.find("only up and uninstall have a list of steps"), std::string::npos) << down.err;
}

// Uninstall: the DaemonSet goes first (nothing repairs kovs's state after
// it), then the cleanup on every node, then the manifests.
TEST_F(KovsKindDryRun, UninstallPrintsItsStepsInOrder) {
    auto r = run({"uninstall", "--dry-run", "--name", "ci-1"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto s = src_.string();
    std::vector<std::string> expected = {
        "kubectl --context kind-ci-1 --namespace kovs-system delete daemonset kovs-agent --ignore-not-found --wait",
        "kubectl --context kind-ci-1 --namespace kovs-system wait --for=delete pod --selector app.kubernetes.io/component=agent --timeout 300s",
        "sed 's|image: kovs:dev$|image: kovs:dev|' " + s + "/kind/uninstall.yaml | kubectl --context kind-ci-1 apply -f -",
        "kubectl --context kind-ci-1 --namespace kovs-system rollout status daemonset/kovs-cleanup --timeout 300s",
        "kubectl --context kind-ci-1 delete -f " + s + "/kind/uninstall.yaml --ignore-not-found --wait",
        "kubectl kustomize " + s + "/kind/manifests | kubectl --context kind-ci-1 delete --ignore-not-found -f -",
    };
    EXPECT_EQ(commands(r.out), expected) << r.out;
    auto listed = run({"uninstall", "--list-steps"});
    ASSERT_EQ(listed.exitCode, 0) << listed.err;
    EXPECT_EQ(listed.out.substr(0, listed.out.find('\t')), "check_kubectl") << listed.out;
}

TEST_F(KovsKindDryRun, NameImageAndCompanionReachEveryStep) {
    auto r = run({"up", "--dry-run", "--name", "ci-1", "--image", "registry.local/kovs:pr-7", "--companion"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto out = r.out;
    EXPECT_NE(out.find("--tag registry.local/kovs:pr-7"), std::string::npos) << out;
    EXPECT_NE(out.find("kind create cluster --name ci-1"), std::string::npos);
    EXPECT_NE(out.find("kind load docker-image registry.local/kovs:pr-7 --name ci-1"), std::string::npos);
    EXPECT_NE(out.find("/kind/overlays/companion | sed 's|image: kovs:dev$|image: registry.local/kovs:pr-7|'"),
              std::string::npos) << out;
    EXPECT_NE(out.find("--context kind-ci-1"), std::string::npos);
    EXPECT_EQ(out.find("kind-kovs"), std::string::npos) << "the default context leaked: " << out;
}

TEST_F(KovsKindDryRun, DownAndLoad) {
    auto down = run({"down", "--dry-run", "--name", "ci-1"});
    ASSERT_EQ(down.exitCode, 0) << down.err;
    EXPECT_EQ(commands(down.out), (std::vector<std::string>{"kind delete cluster --name ci-1",
              "docker network rm kind-ci-1   (only if it carries the label io.kovs.kind.cluster=ci-1: up --mtu made it)"}))
        << down.out;
    auto load = run({"load", "--dry-run"});
    ASSERT_EQ(load.exitCode, 0) << load.err;
    auto cmds = commands(load.out);
    ASSERT_EQ(cmds.size(), 5u) << load.out;
    EXPECT_EQ(cmds[1].rfind("docker image inspect --format {{.Architecture}} kovs:dev ", 0), 0u) << cmds[1];
    EXPECT_EQ(cmds[2], "kind load docker-image kovs:dev --name kovs");
    EXPECT_EQ(cmds[3], "kubectl --context kind-kovs --namespace kovs-system rollout restart daemonset/kovs-agent");
}

TEST_F(KovsKindDryRun, BadArgumentsAreRejectedWithUsageErrors) {
    struct Case {
        std::vector<std::string> args;
        std::string message;
    };
    std::vector<Case> cases = {
        {{"--dry-run"}, "missing command"},
        {{"up", "down"}, "more than one command"},
        {{"up", "--frobnicate"}, "unknown argument '--frobnicate'"},
        {{"up", "--name", "Bad_Name"}, "--name: expected"},
        {{"up", "--name"}, "--name needs a value"},
        {{"up", "--image", "kovs:dev; rm -rf ~"}, "--image: expected a docker image reference"},
        {{"up", "--image", "kovs|dev"}, "--image: expected"},
        {{"up", "--timeout", "soon"}, "--timeout: expected"},
        {{"up", "--mtu", "1279"}, "--mtu: expected 1280-9000"},
        {{"up", "--mtu", "9001"}, "--mtu: expected 1280-9000"},
        {{"up", "--mtu", "09000"}, "--mtu: expected"},
        {{"up", "--mtu"}, "--mtu needs a value"},
        {{"up", "--ip-family", "inet6"}, "--ip-family: expected ipv4, dual or ipv6, got 'inet6'"},
        {{"trace", "x/a"}, "trace: expected FROM TO [PORT/PROTO], got 1 arguments"},
        {{"trace", "x/a", "y/b", "80/TCP", "81/TCP"}, "trace: expected FROM TO [PORT/PROTO], got 4 arguments"},
        {{"trace", "x/a", "y/b;reboot"}, "trace: 'y/b;reboot' is not NAMESPACE/POD"},
        {{"up", "-6"}, "-6: only trace takes it"},
        {{"up", "x/a"}, "unknown argument 'x/a'"},
    };
    for (const auto& c : cases) {
        auto r = run(c.args);
        EXPECT_EQ(r.exitCode, 2) << c.message;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << "stderr: " << r.err;
        EXPECT_TRUE(r.out.empty()) << "printed steps despite bad arguments: " << r.out;
    }
}

// --admin-network-policy: the policy API's CRDs (kovs's own file, or with
// =FILE the user's) go in once the cluster exists and before kovs's
// manifests, so every agent finds them when it starts; then the wait until
// they are Established. A step only with the flag: without it up's steps
// (those the kind-node provider runs) are as they were.
const std::string kAnpWait = "kubectl --context kind-kovs wait --for=condition=Established --timeout 300s "
                             "crd/adminnetworkpolicies.policy.networking.k8s.io "
                             "crd/baselineadminnetworkpolicies.policy.networking.k8s.io";

// The steps a dry run announces ("==> [N] TITLE"), and --list-steps' ids and titles.
std::vector<std::string> announcedSteps(const std::string& out) {
    std::vector<std::string> titles;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_match(line, m, std::regex("==> \\[[0-9]+\\] (.*)"))) titles.push_back(m[1]);
    }
    return titles;
}
std::pair<std::vector<std::string>, std::vector<std::string>> listedSteps(const std::string& out) {
    std::vector<std::string> ids, titles;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        auto tab = line.find('\t');
        if (tab == std::string::npos) continue;
        ids.push_back(line.substr(0, tab));
        titles.push_back(line.substr(tab + 1));
    }
    return {ids, titles};
}

TEST_F(KovsKindDryRun, AdminNetworkPolicyInstallsTheCrdsBeforeTheManifests) {
    const auto s = src_.string();
    auto without = run({"up", "--dry-run"});
    ASSERT_EQ(without.exitCode, 0) << without.err;
    EXPECT_EQ(without.out.find("AdminNetworkPolicy"), std::string::npos) << without.out;
    EXPECT_EQ(without.out.find("crd/"), std::string::npos) << without.out;
    auto listedWithout = run({"up", "--list-steps"});
    EXPECT_EQ(listedSteps(listedWithout.out).first,
              (std::vector<std::string>{"preflight", "build_image", "create_network", "create_cluster", "load_image", "apply_manifests",
                                        "wait_agents", "wait_nodes_ready", "smoke_test", "next_steps"}));

    auto with = run({"up", "--dry-run", "--admin-network-policy"});
    ASSERT_EQ(with.exitCode, 0) << with.err;
    auto got = commands(with.out);
    auto load = std::find(got.begin(), got.end(), "kind load docker-image kovs:dev --name kovs");
    ASSERT_NE(load, got.end()) << with.out;
    ASSERT_GE(got.end() - load, 4) << with.out;
    EXPECT_EQ(load[1], "kubectl --context kind-kovs apply -f " + s + "/kind/admin-network-policy-crds.yaml");
    EXPECT_EQ(load[2], kAnpWait);
    EXPECT_EQ(load[3].rfind("kubectl kustomize " + s + "/kind/manifests | ", 0), 0u) << load[3];
    EXPECT_NE(with.out.find("==> [6] install the AdminNetworkPolicy CRDs (kovs's own, kind/admin-network-policy-crds.yaml) "
                            "and wait until they are Established\n"),
              std::string::npos) << with.out;
    EXPECT_NE(with.out.find("==> [7] apply the kovs manifests"), std::string::npos) << with.out;
    EXPECT_NE(with.out.find("kubectl --context kind-kovs get anp,banp "), std::string::npos) << "next steps: " << with.out;

    // --list-steps has the step where up runs it, with the title up announces.
    auto listed = run({"up", "--list-steps", "--admin-network-policy"});
    ASSERT_EQ(listed.exitCode, 0) << listed.err;
    auto [ids, titles] = listedSteps(listed.out);
    EXPECT_EQ(ids, (std::vector<std::string>{"preflight", "build_image", "create_network", "create_cluster", "load_image",
                                             "admin_network_policy_crds", "apply_manifests", "wait_agents", "wait_nodes_ready",
                                             "smoke_test", "next_steps"}));
    EXPECT_EQ(titles, announcedSteps(with.out));
}

// =FILE: that file instead of kovs's (network-policy-api's standard-install.yaml,
// say), printed as it would be typed; a relative path is made absolute, so
// kubectl never takes it for an option, or a file named '-' for stdin.
TEST_F(KovsKindDryRun, AdminNetworkPolicyFileAppliesThatFileInstead) {
    TempDir dir;
    const auto file = dir / "upstream install.yaml";
    writeFile(file, "# network-policy-api's standard-install.yaml would be here\n");
    auto r = run({"up", "--dry-run", "--admin-network-policy=" + file.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto got = commands(r.out);
    auto apply = std::find(got.begin(), got.end(), "kubectl --context kind-kovs apply -f '" + file.string() + "'");
    ASSERT_NE(apply, got.end()) << r.out;
    ASSERT_LT(apply + 1, got.end());
    EXPECT_EQ(apply[1], kAnpWait);
    EXPECT_NE(r.out.find("install the AdminNetworkPolicy CRDs (from " + file.string() + ") and wait"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("admin-network-policy-crds.yaml"), std::string::npos) << "kovs's own file too: " << r.out;

    writeFile(dir / "-", "kind: CustomResourceDefinition\n");
    auto rel = runScript({(bin_ / "bash").string(), "-c", "cd \"$1\" && shift && exec \"$@\"", "bash", dir.path(),
                          (src_ / "kind/kovs-kind").string(), "up", "--dry-run", "--admin-network-policy=-"},
                         env_);
    ASSERT_EQ(rel.exitCode, 0) << rel.err;
    auto relCommands = commands(rel.out);
    EXPECT_NE(std::find(relCommands.begin(), relCommands.end(), "kubectl --context kind-kovs apply -f " + (dir / "-").string()),
              relCommands.end()) << rel.out;
}

// Every missing tool is one FAIL line with its install hint; up stops after
// the preflight, having built nothing.
TEST_F(KovsKindDryRun, ForRealItNamesEachMissingToolWithAnInstallHint) {
    auto r = run({"up"});
    EXPECT_EQ(r.exitCode, 1);
    for (const char* tool : {"docker", "kind", "kubectl"}) {
        auto f = findings(r.out, tool);
        ASSERT_EQ(f.size(), 1u) << r.out;
        EXPECT_TRUE(std::regex_match(f[0], std::regex("FAIL +[a-z]+ +not on PATH: .*(install|brew|https://).*"))) << f[0];
    }
    EXPECT_NE(r.err.find("preflight: 3 check(s) failed (FAIL above, each with its fix)"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("==> [2]"), std::string::npos) << "went on without its tools: " << r.out;
}

// The real path, against stand-ins for docker, kind and kubectl that log their
// argv: the commands run are the ones --dry-run prints, in the same order.
class KovsKindWithFakeTools : public KovsKindDryRun {
protected:
    void SetUp() override {
        KovsKindDryRun::SetUp();
        log_ = bin_ / "calls.log";
        auto fake = [&](const std::string& name, const std::string& body) {
            fs::remove(bin_ / name);  // never write through a symlink to the machine's own tool
            writeFile(bin_ / name, "#!/bin/bash\nprintf '%s\\n' \"" + name + " $*\" >> " + log_.string() + "\n" + body);
            fs::permissions(bin_ / name, fs::perms::owner_all);
        };
        // kovsctl probe check as the smoke test runs it, in a pod or on a node:
        // each target answers, but FROM:NAME in FAKE_PROBE_FAIL gets no answer.
        writeFile(bin_ / "fakeprobe", "#!/bin/bash\nfrom=$1; shift; rc=0\nfor t; do n=${t%%=*}\n"
                                       "  if [[ \" ${FAKE_PROBE_FAIL:-} \" == *\" $from:$n \"* ]]; then\n"
                                       "    printf '  FAIL  %-14s no answer from %s in 2 s (dropped on the way, or nothing there)\\n' \"$n\" \"${t#*:}\"; rc=1\n"
                                       "  else printf '  ok    %-14s answered by fake\\n' \"$n\"; fi\ndone\nexit $rc\n");
        fs::permissions(bin_ / "fakeprobe", fs::perms::owner_all);
        // docker (or podman): a network exists when FAKE_NETWORK says
        // "mtu|ipv6", labelled FAKE_NETWORK_LABEL; the platform is FAKE_PLATFORM;
        // every node is on a network whose gateway is 172.18.0.1. Images are
        // FAKE_IMAGE_ARCH (amd64), nodes x86_64 but those in FAKE_ARM_NODES;
        // `info` answers FAKE_INFO, "OperatingSystem|KernelVersion|Name|Architecture".
        const std::string engine =
            "case \"$1\" in\n"
            "  --version) echo \"$(basename $0) version 27.1.1, build fake\" ;;\n"
            "  version) echo \"${FAKE_PLATFORM:-Docker Engine - Community}\" ;;\n"
            "  info) echo \"${FAKE_INFO:-Debian GNU/Linux 12 (bookworm)|6.1.0-27-amd64|ci-runner|x86_64}\" ;;\n"
            "  network) [ \"$2\" = inspect ] || exit 0; [ -n \"${FAKE_NETWORK:-}\" ] || exit 1\n"
            "     case \"$*\" in *Labels*) echo \"${FAKE_NETWORK_LABEL:-}\" ;; *--format*) echo \"$FAKE_NETWORK\" ;; esac ;;\n"
            "  inspect) printf '172.18.0.1 fc00:f853:ccd:e793::1 ' ;;\n"
            "  image) [ \"$2\" = inspect ] && echo \"${FAKE_IMAGE_ARCH:-amd64}\" ;;\n"
            "  exec) [ \"$4 $5\" = 'probe check' ] && exec fakeprobe \"$2\" \"${@:6}\"\n"
            "     if [ \"$3 $4\" = 'uname -m' ]; then [[ \" ${FAKE_ARM_NODES:-} \" == *\" $2 \"* ]] && echo aarch64 || echo x86_64; fi ;;\n"
            "esac\nexit 0\n";
        fake("docker", engine);
        fake("podman", engine);
        // The client's OS (kovs-kind on a Mac says Darwin): FAKE_UNAME_S. bin_'s
        // uname is a symlink to the machine's: replaced, never written through.
        auto uname = fs::read_symlink(bin_ / "uname");
        fs::remove(bin_ / "uname");
        writeFile(bin_ / "uname", "#!/bin/bash\n[ \"$*\" = -s ] && [ -n \"${FAKE_UNAME_S:-}\" ] && { echo \"$FAKE_UNAME_S\"; exit 0; }\n"
                                  "exec " + uname.string() + " \"$@\"\n");
        fs::permissions(bin_ / "uname", fs::perms::owner_all);
        fake("kind", "[ \"$1 $2\" = 'get clusters' ] && printf '%s\\n' ${FAKE_CLUSTERS:-}\n"
                     "[ \"$1 $2\" = 'get nodes' ] && printf '%s-control-plane\\n%s-worker\\n%s-worker2\\n' \"$4\" \"$4\" \"$4\"\n"
                     "[ \"$1\" = create ] && echo \"network=${KIND_EXPERIMENTAL_DOCKER_NETWORK:-}${KIND_EXPERIMENTAL_PODMAN_NETWORK:-}\" >> " +
                         log_.string() + "\nexit 0\n");
        // get nodes: FAKE_NOT_READY_POLLS polls with workers NotReady (none
        // unless a test asks: each costs the script's 3 s poll), then all Ready.
        fake("kubectl", "case \" $* \" in\n"
                        "  *' kustomize '*) exec cat \"${@: -1}/kovs.yaml\" ;;\n"
                        "  *' apply -f - '*) t=$(cat); case $t in *'name: kovs-smoke'*) f=smoke-applied.yaml ;; *) f=applied.yaml ;; esac\n"
                        "     printf '%s\\n' \"$t\" > " + bin_.path() + "/$f ;;\n"
                        // apply -f FILE (the AdminNetworkPolicy CRDs): what it got, into crds-applied.yaml.
                        "  *' apply -f '*) cat \"${@: -1}\" > " + bin_.path() + "/crds-applied.yaml ;;\n"
                        "  *' wait --for=condition=Established '*) exit ${FAKE_CRD_WAIT_RC:-0} ;;\n"
                        // The CRDs the cluster has (FAKE_CRDS: kubectl's -o name lines).
                        "  *' get crd '*) [ -z \"${FAKE_CRDS:-}\" ] || printf '%s\\n' $FAKE_CRDS ;;\n"
                        "  *' rollout status deployment/coredns '*) [ -z \"${FAKE_COREDNS_DOWN:-}\" ] || { echo 'Waiting for deployment rollout'; exit 1; } ;;\n"
                        "  *' rollout status daemonset/kovs-smoke '*) exit ${FAKE_SMOKE_ROLLOUT_RC:-0} ;;\n"
                        "  *' get pods --selector app.kubernetes.io/component=smoke-test '*)\n"
                        "     printf 'smoke-b kovs-worker 10.244.1.5\\nsmoke-a kovs-control-plane 10.244.0.5\\nsmoke-c kovs-worker2 10.244.2.5\\n' ;;\n"
                        "  *' get service kovs-smoke '*) printf '10.96.33.7 31234' ;;\n"
                        "  *' get node kovs-control-plane '*) printf '172.18.0.2 fc00:f853:ccd:e793::2' ;;\n"
                        "  *' get node kovs-worker '*) printf '172.18.0.3 fc00:f853:ccd:e793::3' ;;\n"
                        "  *' get node kovs-worker2 '*) printf '172.18.0.4 fc00:f853:ccd:e793::4' ;;\n"
                        "  *' exec '*' -- kovsctl probe check '*) exec fakeprobe \"$6\" \"${@:11}\" ;;\n"
                        "  *' delete --ignore-not-found -f - '*) exec cat > /dev/null ;;\n"
                        "  *' get daemonset kovs-agent '*) printf %s \"${FAKE_AGENT_IMAGE:-}\" ;;\n"
                        "  *' rollout status daemonset/kovs-cleanup '*) exit ${FAKE_CLEANUP_RC:-0} ;;\n"
                        "  *' get nodes '*) n=$(cat " + (bin_ / "polls").string() + " 2>/dev/null || echo 0)\n"
                        "     echo $((n + 1)) > " + (bin_ / "polls").string() + "\n"
                        "     if [ $n -lt ${FAKE_NOT_READY_POLLS:-0} ]; then printf 'kovs-control-plane True\\nkovs-worker False\\nkovs-worker2 <none>\\n'\n"
                        "     else printf 'kovs-control-plane True\\nkovs-worker True\\nkovs-worker2 True\\n'; fi ;;\n"
                        "esac\nexit 0\n");
    }
    std::vector<std::string> calls() const {
        std::vector<std::string> out;
        std::istringstream in(fs::exists(log_) ? readFile(log_) : "");
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }
    fs::path log_;
};

TEST_F(KovsKindWithFakeTools, UpRunsWhatTheDryRunPrintsAndReportsProgress) {
    auto dry = run({"up", "--dry-run", "--image", "reg.io/kovs:1"});
    ASSERT_EQ(dry.exitCode, 0) << dry.err;
    auto r = run({"up", "--image", "reg.io/kovs:1"}, {{"FAKE_NOT_READY_POLLS", "2"}});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;

    // Each printed command was run, in order; the stages of one pipeline run
    // at once, so only the pipeline as a whole is ordered.
    std::vector<std::vector<std::string>> printed;
    // Up to the next steps, which are advice for the user, not steps.
    for (const auto& line : commands(dry.out.substr(0, dry.out.find("next steps")))) {
        if (line.find("(every 3s") != std::string::npos) {
            printed.push_back({line.substr(0, line.find("   ("))});
            continue;
        }
        // A command per pod or node, or a list of reads: described, with <placeholders>.
        if (line.find('<') != std::string::npos) continue;
        // Pipe stages are separated by " | " (the sed expression has bare '|'s).
        printed.emplace_back();
        for (size_t from = 0;;) {
            auto bar = line.find(" | ", from);
            auto cmd = line.substr(from, bar == std::string::npos ? std::string::npos : bar - from);
            if (cmd.rfind("sed ", 0) != 0) printed.back().push_back(cmd);
            if (bar == std::string::npos) break;
            from = bar + 3;
        }
    }
    auto ran = calls();
    size_t start = 0;
    for (const auto& pipeline : printed) {
        size_t next = start;
        for (const auto& want : pipeline) {
            size_t at = start;
            while (at < ran.size() && ran[at].rfind(want, 0) != 0) ++at;
            EXPECT_LT(at, ran.size()) << "dry run printed '" << want << "', which the real run did not run (in that order)";
            if (at < ran.size()) next = std::max(next, at + 1);
        }
        start = next;
    }
    EXPECT_TRUE(std::any_of(ran.begin(), ran.end(), [](const std::string& c) { return c.rfind("docker info ", 0) == 0; }))
        << "the daemon is not checked";

    auto applied = readFile(bin_ / "applied.yaml");
    EXPECT_EQ(applied.find("image: kovs:dev"), std::string::npos) << "--image did not reach every container";
    size_t n = 0;
    for (auto pos = applied.find("image: reg.io/kovs:1"); pos != std::string::npos; pos = applied.find("image: reg.io/kovs:1", pos + 1)) ++n;
    EXPECT_EQ(n, allContainers(YAML::LoadAll(applied).back()["spec"]["template"]["spec"]).size());

    EXPECT_NE(r.out.find("nodes Ready: 1/3 (waiting for kovs-worker kovs-worker2)\n    nodes Ready: 3/3\n"), std::string::npos)
        << r.out;
}

TEST_F(KovsKindWithFakeTools, UpReusesAnExistingCluster) {
    auto r = run({"up"}, {{"FAKE_CLUSTERS", "other kovs"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("cluster kovs exists; reusing it"), std::string::npos) << r.out;
    for (const auto& c : calls()) EXPECT_EQ(c.find("kind create cluster"), std::string::npos) << c;
}

// The cleanup runs the image the agents ran (loaded on every node), found on
// the DaemonSet before it is deleted; the steps run in the dry run's order.
TEST_F(KovsKindWithFakeTools, UninstallRunsTheCleanupWithTheAgentsImageThenDeletesTheManifests) {
    auto r = run({"uninstall"}, {{"FAKE_AGENT_IMAGE", "reg.io/kovs:7"}});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("the cleanup will run the agents' image, reg.io/kovs:7"), std::string::npos) << r.out;
    auto applied = readFile(bin_ / "applied.yaml");
    auto cleanup = YAML::Load(applied);
    EXPECT_EQ(cleanup["metadata"]["name"].as<std::string>(), "kovs-cleanup");
    for (const auto& c : allContainers(cleanup["spec"]["template"]["spec"]))
        EXPECT_EQ(c["image"].as<std::string>(), "reg.io/kovs:7") << c["name"];
    std::vector<std::string> order = {"delete daemonset kovs-agent", "wait --for=delete pod", "apply -f -",
                                      "rollout status daemonset/kovs-cleanup", "uninstall.yaml --ignore-not-found",
                                      "delete --ignore-not-found -f -"};
    auto ran = calls();
    size_t at = 0;
    for (const auto& want : order) {
        while (at < ran.size() && ran[at].find(want) == std::string::npos) ++at;
        EXPECT_LT(at, ran.size()) << "'" << want << "' was not run, or not in this order";
    }
}

// A cleanup that does not finish on every node stops the uninstall before the
// manifests go, with the cleanup's log and what to look at.
TEST_F(KovsKindWithFakeTools, AnUnfinishedCleanupKeepsTheManifestsAndSaysWhy) {
    auto r = run({"uninstall"}, {{"FAKE_CLEANUP_RC", "1"}});
    EXPECT_EQ(r.exitCode, 1) << r.out;
    EXPECT_NE(r.err.find("the cleanup did not finish on every node"), std::string::npos) << r.err;
    for (const auto& c : calls()) {
        EXPECT_EQ(c.find("delete -f"), std::string::npos) << "manifests deleted after a failed cleanup: " << c;
        EXPECT_EQ(c.find("--ignore-not-found -f -"), std::string::npos) << c;
    }
    auto ran = calls();  // one vector: begin() and end() of two calls() would be two
    auto logs = std::any_of(ran.begin(), ran.end(), [](const std::string& c) {
        return c.find("logs --selector app.kubernetes.io/component=cleanup") != std::string::npos;
    });
    EXPECT_TRUE(logs) << "the cleanup's log was not shown";
}

// doctor: kovsctl doctor on every node through docker exec (the copy the init
// container installed in /opt/kovs, which runs with the agent down), one
// table node x check with the worst line of each check, then every failing
// line in full; a node where kovsctl does not run is named with the reason.
TEST_F(KovsKindWithFakeTools, DoctorRunsOnEveryNodeIntoOneTable) {
    writeFile(bin_ / "kind", "#!/bin/sh\n[ \"$1 $2 $3 $4\" = 'get nodes --name ci' ] && printf 'ci-worker\\nci-control-plane\\nci-worker2\\n'\n");
    writeFile(bin_ / "docker",
              "#!/bin/bash\n[ \"$1\" = info ] && exit 0\n"
              "echo \"docker $*\" >> " + log_.string() + "\n"
              "case \"$2:$3:$4\" in\n"
              "  ci-worker2:/opt/kovs/bin/kovsctl:doctor) printf 'kovsctl doctor on node ci-worker2\\n"
              "  ok    ovsdb          answers\\n  ok    tx-checksum    pod a off\\n  FAIL  tx-checksum    pod b on\\n"
              "                       fix: kovsctl says how\\n1 check(s) failed\\n'; exit 1 ;;\n"
              "  ci-worker:*) echo 'stat /opt/kovs/bin/kovsctl: no such file or directory'; exit 126 ;;\n"
              "  *:/opt/kovs/bin/kovsctl:doctor) printf 'kovsctl doctor on node %s\\n  ok    ovsdb          answers\\n"
              "  skip  flows          the agent did not answer\\nall checks passed\\n' \"$2\" ;;\n"
              "esac\n");
    auto r = run({"doctor", "--name", "ci"});
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("check +ci-control-plane +ci-worker +ci-worker2 *\n")) ) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("ovsdb +ok +- +ok *\n"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("flows +skip +- +- *\n"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("tx-checksum +- +- +FAIL *\n"))) << "the worst line of a check: " << r.out;
    EXPECT_NE(r.out.find("  ci-worker2:\n    FAIL  tx-checksum    pod b on\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("fix: kovsctl says how"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ci-worker: kovsctl doctor (/opt/kovs/bin/kovsctl) did not run: stat /opt/kovs/bin/kovsctl: no such file"),
              std::string::npos) << r.out;
    size_t execs = 0;
    for (const auto& c : calls()) execs += c.rfind("docker exec ", 0) == 0;
    EXPECT_EQ(execs, 3u);

    // All passing: exit 0, and it says so.
    writeFile(bin_ / "kind", "#!/bin/sh\n[ \"$1 $2\" = 'get nodes' ] && echo ci-control-plane\n");
    auto ok = run({"doctor", "--name", "ci"});
    EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
    EXPECT_NE(ok.out.find("every check passed on every node"), std::string::npos) << ok.out;
}

// trace follows the packet: it starts where FROM runs (the first node's
// kovsctl says "starts on"), and goes on wherever a node's kovsctl says
// "continue on NODE", a node found by its container's hostname; the exit
// status is the last node's. A loop, and a node outside the cluster, stop it.
TEST_F(KovsKindWithFakeTools, TraceFollowsThePacketFromNodeToNode) {
    writeFile(bin_ / "kind", "#!/bin/sh\n[ \"$1 $2 $3 $4\" = 'get nodes --name ci' ] && printf 'ci-worker\\nci-control-plane\\nci-worker2\\n'\n");
    // Each node's kovsctl trace prints FAKE_TRACE_DIR/<node> and exits with <node>.rc.
    writeFile(bin_ / "docker",
              "#!/bin/bash\necho \"docker $*\" >> " + log_.string() + "\n"
              "case $1 in\n"
              "  inspect) for c in \"${@:4}\"; do echo \"/$c ${c/ci-/node-}\"; done ;;\n"
              "  exec) [ \"$3 $4\" = '/opt/kovs/bin/kovsctl trace' ] || exit 99\n"
              "     cat \"$FAKE_TRACE_DIR/$2\"; exit $(cat \"$FAKE_TRACE_DIR/$2.rc\" 2>/dev/null || echo 0) ;;\n"
              "esac\n");
    auto dir = bin_ / "traces";
    fs::create_directories(dir);
    auto node = [&](const std::string& name, const std::string& out, int rc = 0) {
        writeFile(dir / name, out);
        writeFile(dir / (name + ".rc"), std::to_string(rc) + "\n");
    };
    node("ci-control-plane", "verdict: delivered\nstarts on node-worker2: kovsctl trace y/c x/a 81/TCP (y/c runs there)\n");
    node("ci-worker2", "verdict: sent through the tunnel\ncontinue on node-worker (172.18.0.3): kovsctl trace y/c x/a 81/TCP\n");
    node("ci-worker", "verdict: dropped: no rule allows this\n", 1);
    auto r = run({"trace", "y/c", "x/a", "81/TCP", "--name", "ci"}, {{"FAKE_TRACE_DIR", dir.string()}});
    EXPECT_EQ(r.exitCode, 1) << "the last node dropped it: " << r.out << r.err;
    auto worker2 = r.out.find("  == ci-worker2\n    verdict: sent through the tunnel\n");
    auto worker = r.out.find("  == ci-worker\n    verdict: dropped: no rule allows this\n");
    EXPECT_NE(worker2, std::string::npos) << r.out;
    EXPECT_NE(worker, std::string::npos) << r.out;
    EXPECT_LT(worker2, worker) << "in the packet's order: " << r.out;
    EXPECT_EQ(r.out.find("== ci-control-plane"), std::string::npos) << "printed the first node's view, not the source's: " << r.out;
    std::vector<std::string> execs;
    for (const auto& c : calls()) {
        if (c.rfind("docker exec ", 0) == 0) execs.push_back(c);
    }
    EXPECT_EQ(execs, (std::vector<std::string>{"docker exec ci-control-plane /opt/kovs/bin/kovsctl trace y/c x/a 81/TCP",
                                               "docker exec ci-worker2 /opt/kovs/bin/kovsctl trace y/c x/a 81/TCP",
                                               "docker exec ci-worker /opt/kovs/bin/kovsctl trace y/c x/a 81/TCP"}));

    // Back to a node it was on: a loop, named.
    node("ci-worker", "verdict: sent through the tunnel\ncontinue on node-worker2 (172.18.0.4): kovsctl trace y/c x/a 81/TCP\n");
    auto loop = run({"trace", "y/c", "x/a", "81/TCP", "--name", "ci"}, {{"FAKE_TRACE_DIR", dir.string()}});
    EXPECT_EQ(loop.exitCode, 1);
    EXPECT_NE(loop.err.find("the packet comes back to node-worker2 (172.18.0.4): the nodes send it in a loop"), std::string::npos) << loop.err;
    // To a node that is not the cluster's.
    node("ci-worker", "verdict: sent through the tunnel\ncontinue on the node at 172.18.0.9: kovsctl trace y/c x/a 81/TCP\n");
    auto away = run({"trace", "y/c", "x/a", "81/TCP", "--name", "ci"}, {{"FAKE_TRACE_DIR", dir.string()}});
    EXPECT_EQ(away.exitCode, 1);
    EXPECT_NE(away.err.find("leaves through the tunnel for the node at 172.18.0.9, which is no node of cluster ci"), std::string::npos) << away.err;
    // kovsctl could not trace (exit 2): its reason, and that exit status.
    node("ci-control-plane", "kovsctl: trace: no pod y/c in the Kubernetes API\n", 2);
    auto bad = run({"trace", "y/c", "x/a", "--name", "ci"}, {{"FAKE_TRACE_DIR", dir.string()}});
    EXPECT_EQ(bad.exitCode, 2);
    EXPECT_NE(bad.out.find("  == ci-control-plane\n    kovsctl: trace: no pod y/c in the Kubernetes API\n"), std::string::npos) << bad.out;
}

// The preflight, a finding a line with its fix: a missing kind fails it and
// up builds nothing; the tools present are shown with their versions.
TEST_F(KovsKindWithFakeTools, PreflightNamesAMissingKindWithItsFix) {
    fs::remove(bin_ / "kind");
    auto r = run({"up"});
    EXPECT_EQ(r.exitCode, 1) << r.out;
    auto kind = findings(r.out, "kind");
    ASSERT_EQ(kind.size(), 1u) << r.out;
    EXPECT_TRUE(std::regex_match(kind[0], std::regex("FAIL  kind +not on PATH: go install sigs.k8s.io/kind@latest, .*"))) << kind[0];
    EXPECT_EQ(findings(r.out, "docker"), std::vector<std::string>{"ok    docker      docker version 27.1.1, build fake (" +
                                                                 (bin_ / "docker").string() + ")"});
    EXPECT_NE(r.err.find("preflight: 1 check(s) failed"), std::string::npos) << r.err;
    for (const auto& c : calls()) EXPECT_EQ(c.find("docker build"), std::string::npos) << "went on: " << c;
}

// The network the nodes join, against --mtu: one that exists with another
// MTU fails with both ways out; without --mtu the existing MTU is what kovs
// follows, and the preflight says what the pods get.
TEST_F(KovsKindWithFakeTools, PreflightHoldsAnExistingNetworkToTheAskedMtu) {
    auto r = run({"up", "--name", "ci", "--mtu", "9000"}, {{"FAKE_NETWORK", "1500|true"}});
    EXPECT_EQ(r.exitCode, 1) << r.out;
    EXPECT_EQ(findings(r.out, "network"),
              std::vector<std::string>{"FAIL  network     kind-ci exists with MTU 1500, --mtu 9000 asked: pass --mtu 1500, or remove it "
                                       "first (docker network rm kind-ci; kovs-kind down --name ci removes it with the cluster)"});
    for (const auto& c : calls()) EXPECT_EQ(c.find("docker build"), std::string::npos) << "went on: " << c;

    auto same = run({"preflight", "--name", "ci", "--mtu", "1500"}, {{"FAKE_NETWORK", "1500|true"}});
    EXPECT_EQ(same.exitCode, 0) << same.out << same.err;
    EXPECT_EQ(findings(same.out, "network"), std::vector<std::string>{"ok    network     kind-ci: MTU 1500 (gw0 and pods 1450), IPv6 on"});

    auto kindNet = run({"preflight"}, {{"FAKE_NETWORK", "9000|false"}});
    EXPECT_EQ(kindNet.exitCode, 0) << kindNet.out;
    EXPECT_EQ(findings(kindNet.out, "network"), std::vector<std::string>{"ok    network     kind: MTU 9000 (gw0 and pods 8950), IPv6 off"});
    auto ran = calls();
    EXPECT_NE(std::find(ran.begin(), ran.end(),
                        "docker network inspect kind --format {{index .Options \"com.docker.network.driver.mtu\"}}|{{.EnableIPv6}}"),
              ran.end());

    auto none = run({"preflight", "--mtu", "9000"});
    EXPECT_EQ(findings(none.out, "network"),
              std::vector<std::string>{"ok    network     kind-kovs does not exist yet: created with MTU 9000 (pods 8950)"});

    // The network the user gave kind by its own variable is the one checked.
    auto own = run({"preflight"}, {{"FAKE_NETWORK", "1400|false"}, {"KIND_EXPERIMENTAL_DOCKER_NETWORK", "lab"}});
    EXPECT_EQ(findings(own.out, "network"), std::vector<std::string>{"ok    network     lab: MTU 1400 (gw0 and pods 1350), IPv6 off"});
    auto bad = run({"preflight"}, {{"KIND_EXPERIMENTAL_DOCKER_NETWORK", "lab; rm -rf /"}});
    EXPECT_EQ(bad.exitCode, 2);
    EXPECT_NE(bad.err.find("KIND_EXPERIMENTAL_DOCKER_NETWORK: expected a network name"), std::string::npos) << bad.err;
}

// load --no-build loads the image the engine's store holds (built elsewhere,
// an arm64 builder's, say): no build, the architecture still checked.
TEST_F(KovsKindWithFakeTools, LoadNoBuildLoadsTheImageAsItIs) {
    auto r = run({"load", "--no-build", "--name", "ci", "--image", "ghcr.io/acme/kovs:1.2"});
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    auto ran = calls();
    for (const auto& c : ran) EXPECT_EQ(c.find("docker build"), std::string::npos) << "built anyway: " << c;
    EXPECT_NE(std::find(ran.begin(), ran.end(), "docker image inspect --format {{.Architecture}} ghcr.io/acme/kovs:1.2"), ran.end());
    EXPECT_NE(std::find(ran.begin(), ran.end(), "kind load docker-image ghcr.io/acme/kovs:1.2 --name ci"), ran.end());
    auto up = run({"up", "--no-build"});
    EXPECT_EQ(up.exitCode, 2);
    EXPECT_NE(up.err.find("--no-build: only load takes it"), std::string::npos) << up.err;
}

// Where the Docker host has Open vSwitch's kernel module (loaded, built in,
// loadable, or Docker Desktop >= 4.27), one note says an OVS CNI on the kernel
// datapath is faster there and how to check; the preflight still passes.
TEST_F(KovsKindWithFakeTools, PreflightSaysWhereTheHostHasTheOvsModule) {
    auto uname = kovs::runProcess({"uname", "-r"});
    ASSERT_TRUE(uname.ok());
    auto release = uname.out.substr(0, uname.out.find('\n'));
    struct Case {
        std::string name;
        std::vector<std::string> files;  // under the fake host root
        std::string platform, expected;
    };
    std::vector<Case> cases = {
        {"loaded", {"sys/module/openvswitch/initstate"}, "", "note  ovs-module  the Docker host has the openvswitch kernel module (loaded): "},
        {"built in", {"sys/module/openvswitch/parameters/x"}, "", "note  ovs-module  the Docker host has the openvswitch kernel module (built into the kernel): "},
        {"loadable", {"lib/modules/" + release + "/modules.dep"}, "", "note  ovs-module  the Docker host has the openvswitch kernel module (loadable: modprobe openvswitch): "},
        {"none", {}, "", "ok    ovs-module  no openvswitch kernel module on the Docker host"},
    };
    for (const auto& c : cases) {
        TempDir host;
        writeHost(host.path(), "8192");
        for (const auto& f : c.files) {
            fs::create_directories((host / f).parent_path());
            writeFile(host / f, "kernel/net/openvswitch/openvswitch.ko: kernel/net/nsh/nsh.ko\n");
        }
        std::map<std::string, std::string> env = {{"KOVS_KIND_HOST_ROOT", host.path()}};
        if (!c.platform.empty()) env["FAKE_PLATFORM"] = c.platform;
        auto r = run({"preflight"}, env);
        EXPECT_EQ(r.exitCode, 0) << c.name << ": " << r.out << r.err;
        auto f = findings(r.out, "ovs-module");
        ASSERT_EQ(f.size(), 1u) << c.name << ": " << r.out;
        EXPECT_EQ(f[0].rfind(c.expected, 0), 0u) << c.name << ": " << f[0];
        if (f[0].rfind("note", 0) == 0) {
            EXPECT_NE(f[0].find("an OVS CNI on the kernel datapath (OVN-Kubernetes, Antrea, Kube-OVN) is faster there; "
                                "check: lsmod | grep openvswitch. kovs goes on"), std::string::npos) << f[0];
        }
    }
}

// The engines kind runs on outside Linux, as they describe themselves: each
// is told apart by what `docker info` and `docker version` print (the lines
// quoted below, from users' reports), and gets its own word on the OVS module,
// the nodes' architecture and whose limits apply. kovs-kind runs on the Mac
// (or in WSL) and cannot look at the VM's /lib/modules itself.
TEST_F(KovsKindWithFakeTools, PreflightKnowsEachDesktopEngineFromWhatItPrints) {
    struct Case {
        std::string name, source, uname, platform, info;  // info: OperatingSystem|KernelVersion|Name|Architecture
        std::string ovs, arch, limits;
    };
    const std::vector<Case> cases = {
        {"Docker Desktop, Apple silicon",
         // "Server: Docker Desktop 4.33.0 (160616)", "OS/Arch: linux/arm64", a container's uname: 6.10.0-linuxkit
         "https://github.com/docker/for-mac/issues/7402", "Darwin", "Docker Desktop 4.33.0 (160616)",
         "Docker Desktop|6.10.0-linuxkit|docker-desktop|aarch64",
         "note  ovs-module  Docker Desktop has the openvswitch kernel module (built into Docker Desktop 4.33.0 (160616)'s kernel)",
         "ok    arch        nodes and image linux/arm64 (Docker Desktop)",
         "ok    limits      inotify and file limits are those of Docker Desktop 4.33.0 (160616)'s VM"},
        {"Docker Desktop, Intel Mac, before 4.27",
         // "Server: Docker Desktop 4.10.1 (82475)", "Kernel Version: 5.10.104-linuxkit", "Operating System: Docker Desktop",
         // "Architecture: x86_64", "Name: docker-desktop"
         "https://github.com/cygnu7/belajar-docker/blob/main/docker-cheatsheet.sh", "Darwin", "Docker Desktop 4.10.1 (82475)",
         "Docker Desktop|5.10.104-linuxkit|docker-desktop|x86_64",
         "ok    ovs-module  Docker Desktop 4.10.1 (82475)'s kernel has no openvswitch module (4.27 and later build it in)",
         "ok    arch        nodes and image linux/amd64 (Docker Desktop)",
         "ok    limits      inotify and file limits are those of Docker Desktop 4.10.1 (82475)'s VM"},
        {"Docker Desktop, WSL2 (kovs-kind in a WSL distro: uname says Linux)",
         // "Kernel Version: 5.15.153.1-microsoft-standard-WSL2", "Operating System: Docker Desktop", "Name: docker-desktop"
         "https://github.com/hamitmizrak/workshop-docker/blob/master/Docker_Tutorials.md", "Linux", "Docker Desktop 4.45.0 (203075)",
         "Docker Desktop|5.15.153.1-microsoft-standard-WSL2|docker-desktop|x86_64",
         "note  ovs-module  Docker Desktop on WSL2 runs the WSL kernel (5.15.153.1-microsoft-standard-WSL2): older ones have no "
         "openvswitch module, newer ones can load it; check there: docker run --rm --privileged",
         "ok    arch        nodes and image linux/amd64 (Docker Desktop)",
         "ok    limits      inotify and file limits are those of Docker Desktop 4.45.0 (203075)'s VM"},
        {"OrbStack",
         // "Kernel Version: 6.1.23-orbstack-00113-g6614aaccb205-dirty", "Operating System: Alpine Linux edge (containerized)";
         // no openvswitch: https://github.com/orbstack/orbstack/issues/1140
         "https://github.com/orbstack/orbstack/issues/1", "Darwin", "Docker Engine - Community",
         "Alpine Linux edge (containerized)|6.1.23-orbstack-00113-g6614aaccb205-dirty|orbstack|aarch64",
         "ok    ovs-module  OrbStack's kernel (6.1.23-orbstack-00113-g6614aaccb205-dirty) has no openvswitch module and loads none",
         "ok    arch        nodes and image linux/arm64 (OrbStack)",
         "ok    limits      inotify and file limits are those of OrbStack's VM"},
        {"Colima 0.6 and later (Ubuntu)",
         // "Kernel Version: 6.8.0-31-generic", "Operating System: Ubuntu 24.04 LTS", "Architecture: aarch64", "Name: colima"
         "https://github.com/freedomofpress/dangerzone/issues/865", "Darwin", "Docker Engine - Community",
         "Ubuntu 24.04 LTS|6.8.0-31-generic|colima|aarch64",
         "note  ovs-module  Colima has the openvswitch kernel module (Colima's Ubuntu kernel 6.8.0-31-generic builds it as a module)",
         "ok    arch        nodes and image linux/arm64 (Colima)",
         "ok    limits      inotify and file limits are those of Colima's VM"},
        {"Colima before 0.6 (Alpine), a profile of its own",
         // a bare "Server:" line (no platform name); Alpine before 0.6: https://github.com/docker/actions-toolkit/pull/201
         "https://github.com/abiosoft/colima/issues/765", "Darwin", "",
         "Alpine Linux v3.18|6.1.29-0-virt|colima-dev|x86_64",
         "note  ovs-module  cannot tell from here whether Colima has the openvswitch module (kernel 6.1.29-0-virt); check there: ",
         "ok    arch        nodes and image linux/amd64 (Colima)",
         "ok    limits      inotify and file limits are those of Colima's VM"},
        {"Rancher Desktop (Lima)",
         // Name "lima-rancher-desktop", as ddev tells it apart
         "https://github.com/ddev/ddev/blob/main/pkg/dockerutil/providers.go", "Darwin", "Docker Engine - Community",
         "Alpine Linux v3.19|6.6.30-0-virt|lima-rancher-desktop|aarch64",
         "note  ovs-module  cannot tell from here whether Rancher Desktop has the openvswitch module (kernel 6.6.30-0-virt)",
         "ok    arch        nodes and image linux/arm64 (Rancher Desktop)",
         "ok    limits      inotify and file limits are those of Rancher Desktop's VM"},
    };
    for (const auto& c : cases) {
        auto r = run({"preflight"}, {{"FAKE_UNAME_S", c.uname}, {"FAKE_PLATFORM", c.platform}, {"FAKE_INFO", c.info}});
        EXPECT_EQ(r.exitCode, 0) << c.name << " (" << c.source << "): " << r.out << r.err;
        for (const auto& [what, want] : {std::pair{"ovs-module", c.ovs}, {"arch", c.arch}, {"limits", c.limits}}) {
            auto f = findings(r.out, what);
            ASSERT_EQ(f.size(), 1u) << c.name << ": " << r.out;
            EXPECT_EQ(f[0].rfind(want, 0), 0u) << c.name << " (" << c.source << ")\n got: " << f[0] << "\nwant: " << want;
        }
    }
    // Rosetta's habit: an amd64 platform asked for on an arm64 engine runs
    // the nodes and the image emulated. A warning, and up goes on.
    auto rosetta = run({"preflight"}, {{"FAKE_UNAME_S", "Darwin"}, {"FAKE_PLATFORM", "Docker Desktop 4.33.0 (160616)"},
                                       {"FAKE_INFO", "Docker Desktop|6.10.0-linuxkit|docker-desktop|aarch64"},
                                       {"DOCKER_DEFAULT_PLATFORM", "linux/amd64"}});
    EXPECT_EQ(rosetta.exitCode, 0) << rosetta.err;
    EXPECT_EQ(findings(rosetta.out, "arch"),
              std::vector<std::string>{"warn  arch        DOCKER_DEFAULT_PLATFORM=linux/amd64 on a linux/arm64 engine: the nodes and "
                                       "the image would run emulated (slow; OVS's datapath threads most of all): unset "
                                       "DOCKER_DEFAULT_PLATFORM"});
}

// kind's "too many open files" with several nodes: a low inotify limit is a
// warning with the sysctl that fixes it; up goes on.
TEST_F(KovsKindWithFakeTools, PreflightWarnsOfALowInotifyLimitWithTheSysctl) {
    TempDir host;
    writeHost(host.path(), "128");
    auto r = run({"up"}, {{"KOVS_KIND_HOST_ROOT", host.path()}});
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    auto f = findings(r.out, "limits");
    ASSERT_EQ(f.size(), 3u) << r.out;
    EXPECT_EQ(f[0], "warn  limits      fs.inotify.max_user_instances is 128, kind with several nodes needs 512 (pods fail with "
                    "\"too many open files\"): sudo sysctl -w fs.inotify.max_user_instances=512");
    EXPECT_EQ(f[1], "ok    limits      fs.inotify.max_user_watches = 1048576");
    auto docker = run({"preflight"}, {{"FAKE_PLATFORM", "Docker Desktop 4.30.0 (149282)"},
                                      {"FAKE_INFO", "Docker Desktop|6.6.26-linuxkit|docker-desktop|aarch64"}});
    EXPECT_EQ(findings(docker.out, "limits"),
              std::vector<std::string>{"ok    limits      inotify and file limits are those of Docker Desktop 4.30.0 (149282)'s VM"});
}

// --mtu: the cluster's own network, made before kind and handed to it through
// KIND_EXPERIMENTAL_DOCKER_NETWORK; down removes it only when kovs-kind made
// it for this cluster (its label).
TEST_F(KovsKindWithFakeTools, MtuMakesTheClustersOwnNetworkAndDownRemovesOnlyThat) {
    auto r = run({"up", "--name", "ci", "--mtu", "9000"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto ran = calls();
    auto create = std::find(ran.begin(), ran.end(),
                            "docker network create --driver bridge --opt com.docker.network.driver.mtu=9000 "
                            "--label io.kovs.kind.cluster=ci kind-ci");
    auto network = std::find(ran.begin(), ran.end(), "network=kind-ci");
    EXPECT_NE(create, ran.end()) << r.out;
    EXPECT_NE(network, ran.end()) << "kind was not told the network";
    EXPECT_LT(create, network);

    auto down = run({"down", "--name", "ci"}, {{"FAKE_NETWORK", "9000|false"}, {"FAKE_NETWORK_LABEL", "ci"}});
    EXPECT_EQ(down.exitCode, 0) << down.err;
    EXPECT_NE(down.out.find("removed network kind-ci (made by up --mtu)"), std::string::npos) << down.out;
    auto other = run({"down", "--name", "ci"}, {{"FAKE_NETWORK", "9000|false"}, {"FAKE_NETWORK_LABEL", "someone-else"}});
    EXPECT_NE(other.out.find("network kind-ci stays: kovs-kind did not make it for this cluster"), std::string::npos) << other.out;
    ran = calls();
    EXPECT_EQ(std::count(ran.begin(), ran.end(), "docker network rm kind-ci"), 1);
}

// kind's podman provider: every engine command is podman's, the MTU option is
// podman's, and the image reaches kind through an archive.
TEST_F(KovsKindWithFakeTools, PodmanThroughKindsProviderSwitch) {
    auto r = run({"up", "--name", "ci", "--mtu", "9000"}, {{"KIND_EXPERIMENTAL_PROVIDER", "podman"}});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto ran = calls();
    for (const char* want : {"podman build --file ", "podman network create --driver bridge --opt mtu=9000 ", "network=kind-ci",
                             "podman tag kovs:dev docker.io/library/kovs:dev",
                             "podman save --output /tmp/kovs-kind-ci.tar docker.io/library/kovs:dev",
                             "kind load image-archive /tmp/kovs-kind-ci.tar --name ci"}) {
        EXPECT_TRUE(std::any_of(ran.begin(), ran.end(), [&](const std::string& c) { return c.rfind(want, 0) == 0; }))
            << "not run: " << want;
    }
    for (const auto& c : ran) EXPECT_NE(c.rfind("docker ", 0), 0u) << c;
    auto bad = run({"up"}, {{"KIND_EXPERIMENTAL_PROVIDER", "nerdctl"}});
    EXPECT_EQ(bad.exitCode, 2);
    EXPECT_NE(bad.err.find("kovs-kind runs with docker or podman"), std::string::npos) << bad.err;
}

// An image for another architecture than the nodes' (an amd64 build on
// Apple silicon's arm64 nodes, say) is refused before kind loads it, with the
// build command that makes the right one; one that matches is loaded.
TEST_F(KovsKindWithFakeTools, LoadRefusesAnImageForAnotherArchitecture) {
    auto arm = run({"load", "--name", "mac"}, {{"FAKE_ARM_NODES", "mac-control-plane mac-worker mac-worker2"}});
    EXPECT_EQ(arm.exitCode, 1) << arm.out << arm.err;
    EXPECT_NE(arm.err.find("image kovs:dev is built for linux/amd64, but node mac-control-plane is linux/arm64: it cannot run "
                           "there. Build it for the nodes, then load it: docker build --platform linux/arm64 --file "
                           "kind/Dockerfile --tag kovs:dev . && kind/kovs-kind load --name mac"),
              std::string::npos)
        << arm.err;
    auto ran = calls();
    for (const auto& c : ran) EXPECT_NE(c.rfind("kind load ", 0), 0u) << "loaded anyway: " << c;

    // One node of another architecture is enough to refuse.
    auto mixed = run({"load", "--name", "mac"}, {{"FAKE_ARM_NODES", "mac-worker2"}});
    EXPECT_EQ(mixed.exitCode, 1);
    EXPECT_NE(mixed.err.find("but node mac-worker2 is linux/arm64"), std::string::npos) << mixed.err;

    auto ok = run({"load", "--name", "mac"}, {{"FAKE_ARM_NODES", "mac-control-plane mac-worker mac-worker2"},
                                              {"FAKE_IMAGE_ARCH", "arm64"}});
    EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
    EXPECT_NE(ok.out.find("image kovs:dev is linux/arm64, as every node (3)"), std::string::npos) << ok.out;
    ran = calls();
    EXPECT_NE(std::find(ran.begin(), ran.end(), "kind load docker-image kovs:dev --name mac"), ran.end());
}

// The smoke test at the end of up (and kovs-kind check): every pod probes
// every other pod, the ClusterIP, the DNS name and the network's gateway;
// every node its own NodePort; one table node x check; the namespace is
// deleted afterwards.
TEST_F(KovsKindWithFakeTools, CheckProbesEveryPairIntoOneTableAndCleansUp) {
    auto r = run({"check"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto ran = calls();
    auto probeOf = [&](const std::string& prefix) {
        auto it = std::find_if(ran.begin(), ran.end(), [&](const std::string& c) { return c.rfind(prefix, 0) == 0; });
        return it == ran.end() ? std::string() : it->substr(prefix.size());
    };
    EXPECT_EQ(probeOf("kubectl --context kind-kovs --namespace kovs-smoke exec smoke-b -- kovsctl probe check "),
              "pod/kovs-control-plane=tcp:10.244.0.5:8080 pod/kovs-worker2=tcp:10.244.2.5:8080 svc=tcp:10.96.33.7:80 "
              "dns=tcp:kovs-smoke.kovs-smoke.svc.cluster.local:80 egress=ping:172.18.0.1");
    EXPECT_EQ(probeOf("docker exec kovs-worker2 /opt/kovs/bin/kovsctl probe check "), "nodeport=tcp:172.18.0.4:31234");
    EXPECT_TRUE(std::regex_search(r.out, std::regex("check +kovs-control-plane +kovs-worker +kovs-worker2 *\n"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("pod/kovs-control-plane +- +ok +ok *\n"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("nodeport +ok +ok +ok *\n"))) << r.out;
    EXPECT_NE(r.out.find("    ok    coredns     Ready\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("every check passed: 3 nodes, pods reach each other, the ClusterIP 10.96.33.7 and "
                         "kovs-smoke.kovs-smoke.svc.cluster.local, the gateway 172.18.0.1, and NodePort 31234"),
              std::string::npos) << r.out;
    auto smoke = YAML::LoadAll(readFile(bin_ / "smoke-applied.yaml"));
    EXPECT_EQ(smoke.size(), 3u);
    EXPECT_NE(std::find_if(ran.begin(), ran.end(), [](const std::string& c) {
                  return c.find("delete -f ") != std::string::npos && c.find("kind/smoke.yaml") != std::string::npos;
              }), ran.end()) << "the smoke test's namespace was not deleted";
}

// A failing row names the node it was seen from and the plain reason; the
// namespace is deleted all the same, and the exit says where to look.
TEST_F(KovsKindWithFakeTools, CheckNamesEachFailingRowWithItsReason) {
    auto r = run({"check", "--image", "reg.io/kovs:2"},
                 {{"FAKE_PROBE_FAIL", "smoke-c:pod/kovs-worker smoke-c:egress kovs-worker2:nodeport"}, {"FAKE_COREDNS_DOWN", "1"}});
    EXPECT_EQ(r.exitCode, 1) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("pod/kovs-worker +ok +- +FAIL *\n"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("egress +ok +ok +FAIL *\n"))) << r.out;
    EXPECT_NE(r.out.find("  kovs-worker2:\n"
                         "    FAIL  pod/kovs-worker no answer from 10.244.1.5:8080 in 2 s (dropped on the way, or nothing there)\n"
                         "    FAIL  egress         no answer from 172.18.0.1 in 2 s (dropped on the way, or nothing there)\n"
                         "    FAIL  nodeport       no answer from 172.18.0.4:31234 in 2 s"),
              std::string::npos) << r.out;
    EXPECT_NE(r.out.find("    FAIL  coredns     not Ready: Waiting for deployment rollout"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("the smoke test failed (above; the cluster stays): kovs-kind doctor --name kovs checks every node"),
              std::string::npos) << r.err;
    EXPECT_NE(readFile(bin_ / "smoke-applied.yaml").find("image: reg.io/kovs:2"), std::string::npos) << "--image did not reach the smoke pods";
    auto ran = calls();
    EXPECT_EQ(std::count_if(ran.begin(), ran.end(), [](const std::string& c) { return c.find("kind/smoke.yaml") != std::string::npos; }), 1)
        << "deleted once, after a failure too";

    // Pods that never become Ready: stop there, say so, clean up.
    auto stuck = run({"check"}, {{"FAKE_SMOKE_ROLLOUT_RC", "1"}});
    EXPECT_EQ(stuck.exitCode, 1);
    EXPECT_NE(stuck.err.find("the smoke test's pods are not Ready after 300s"), std::string::npos) << stuck.err;
    ran = calls();
    EXPECT_EQ(std::count_if(ran.begin(), ran.end(), [](const std::string& c) { return c.find("kind/smoke.yaml") != std::string::npos; }), 2);
}

// --ip-family: kind's config of that family; a network of the cluster's own
// (--mtu) gets IPv6 as kind would give it; an existing network without IPv6
// fails the preflight, with both ways out.
TEST_F(KovsKindWithFakeTools, IpFamilyPicksItsClusterConfigAndNeedsANetworkWithIPv6) {
    auto r = run({"up", "--name", "ci", "--ip-family", "ipv6", "--mtu", "9000"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto ran = calls();
    auto created = std::find_if(ran.begin(), ran.end(), [](const std::string& c) { return c.rfind("docker network create ", 0) == 0; });
    ASSERT_NE(created, ran.end());
    EXPECT_TRUE(std::regex_match(*created, std::regex("docker network create --driver bridge --opt com.docker.network.driver.mtu=9000 "
                                                      "--ipv6 --subnet fc00:f853:ccd:[0-9a-f]{4}::/64 --label io.kovs.kind.cluster=ci kind-ci")))
        << *created;
    EXPECT_NE(std::find_if(ran.begin(), ran.end(), [&](const std::string& c) {
                  return c == "kind create cluster --name ci --config " + (src_ / "kind/cluster-ipv6.yaml").string() + " --wait 0s";
              }), ran.end());
    EXPECT_EQ(findings(r.out, "network"), std::vector<std::string>{"ok    network     kind-ci does not exist yet: created with MTU 9000 (pods 8930)"});

    auto noV6 = run({"preflight", "--ip-family", "dual"}, {{"FAKE_NETWORK", "1500|false"}});
    EXPECT_EQ(noV6.exitCode, 1) << noV6.out;
    EXPECT_EQ(findings(noV6.out, "network"),
              std::vector<std::string>{"FAIL  network     kind exists without IPv6, --ip-family dual asked: its nodes would have no IPv6 address; "
                                       "remove it first (docker network rm kind, with no cluster on it; kind makes it again with IPv6), "
                                       "or pass --mtu N for a network of this cluster's own"});
    auto withV6 = run({"preflight", "--ip-family", "dual"}, {{"FAKE_NETWORK", "1500|true"}});
    EXPECT_EQ(withV6.exitCode, 0) << withV6.out;
}

// A bad --admin-network-policy is a usage error (exit 2) before anything
// runs, in a dry run too: a file that is not there, not a regular file or not
// readable, an empty '=', a file after the bare flag (its value goes after
// '='), and any command but up.
TEST_F(KovsKindWithFakeTools, ABadAdminNetworkPolicyFileIsAUsageErrorAndNothingRuns) {
    TempDir dir;
    const auto file = (dir / "standard-install.yaml").string(), missing = (dir / "nope.yaml").string();
    writeFile(file, "kind: CustomResourceDefinition\n");
    struct Case {
        std::vector<std::string> args;
        std::string message;
    };
    std::vector<Case> cases = {
        {{"up", "--admin-network-policy=" + missing}, "kovs-kind: --admin-network-policy=" + missing + ": no such file (see --help)"},
        {{"up", "--dry-run", "--admin-network-policy=" + missing}, "--admin-network-policy=" + missing + ": no such file"},
        {{"up", "--admin-network-policy=" + dir.path()}, "--admin-network-policy=" + dir.path() + ": not a regular file"},
        {{"up", "--admin-network-policy="}, "--admin-network-policy=: expected a file after '='"},
        {{"up", "--admin-network-policy", file},
         "--admin-network-policy takes its file after '=': --admin-network-policy=" + file + " (bare, it installs kovs's own CRDs)"},
        {{"up", "--admin-network-policy", "crds"}, "--admin-network-policy takes its file after '=': --admin-network-policy=crds"},
        {{"uninstall", "--admin-network-policy"}, "--admin-network-policy: only up takes it"},
        {{"load", "--admin-network-policy=" + file}, "--admin-network-policy: only up takes it"},
        {{"check", "--dry-run", "--admin-network-policy"}, "--admin-network-policy: only up takes it"},
    };
    if (::geteuid() != 0) {  // root reads any file
        const auto locked = (dir / "locked.yaml").string();
        writeFile(locked, "kind: CustomResourceDefinition\n");
        fs::permissions(locked, fs::perms::none);
        cases.push_back({{"up", "--admin-network-policy=" + locked}, "--admin-network-policy=" + locked + ": cannot read it"});
    }
    for (const auto& c : cases) {
        auto r = run(c.args);
        EXPECT_EQ(r.exitCode, 2) << c.message << ": " << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << "stderr: " << r.err;
        EXPECT_TRUE(r.out.empty()) << "printed steps despite a bad argument: " << r.out;
    }
    EXPECT_EQ(calls(), std::vector<std::string>{}) << "ran something despite a bad argument";
    // The bare flag before the command is the flag, not a file.
    auto before = run({"--admin-network-policy", "up", "--list-steps"});
    EXPECT_EQ(before.exitCode, 0) << before.err;
    EXPECT_NE(before.out.find("admin_network_policy_crds\t"), std::string::npos) << before.out;
}

// The real path: kubectl applies kovs's CRD file (its content reached
// kubectl) and waits for both CRDs, after kind made the cluster and before
// kovs's manifests; with =FILE, the user's file. A file that does not make
// both CRDs stops up before kovs's manifests, saying what to check.
TEST_F(KovsKindWithFakeTools, UpAppliesTheAdminNetworkPolicyCrdsAndWaitsForThemBeforeKovs) {
    const auto shipped = (src_ / "kind/admin-network-policy-crds.yaml").string();
    auto r = run({"up", "--admin-network-policy"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto ran = calls();
    auto first = [&](const std::string& prefix) {
        return std::find_if(ran.begin(), ran.end(), [&](const std::string& c) { return c.rfind(prefix, 0) == 0; });
    };
    auto create = first("kind create cluster "), apply = first("kubectl --context kind-kovs apply -f " + shipped),
         wait = std::find(ran.begin(), ran.end(), kAnpWait), kustomize = first("kubectl kustomize ");
    ASSERT_NE(create, ran.end());
    ASSERT_NE(apply, ran.end()) << "the CRDs were not applied";
    ASSERT_NE(wait, ran.end()) << "not waited for";
    ASSERT_NE(kustomize, ran.end());
    EXPECT_LT(create, apply);
    EXPECT_LT(apply, wait);
    EXPECT_LT(wait, kustomize) << "kovs's manifests went in before the CRDs were Established";
    EXPECT_EQ(*apply, "kubectl --context kind-kovs apply -f " + shipped);
    EXPECT_EQ(readFile(bin_ / "crds-applied.yaml"), readFile(shipped));

    TempDir dir;
    const auto file = (dir / "standard-install.yaml").string();
    writeFile(file, "# as network-policy-api ships it\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n");
    fs::remove(log_);
    auto user = run({"up", "--admin-network-policy=" + file});
    ASSERT_EQ(user.exitCode, 0) << user.out << user.err;
    ran = calls();
    EXPECT_NE(std::find(ran.begin(), ran.end(), "kubectl --context kind-kovs apply -f " + file), ran.end());
    EXPECT_NE(std::find(ran.begin(), ran.end(), kAnpWait), ran.end());
    EXPECT_EQ(readFile(bin_ / "crds-applied.yaml"), readFile(file));
    for (const auto& c : ran) EXPECT_EQ(c.find("admin-network-policy-crds.yaml"), std::string::npos) << c;

    fs::remove(log_);
    auto stuck = run({"up", "--admin-network-policy=" + file}, {{"FAKE_CRD_WAIT_RC", "1"}});
    EXPECT_EQ(stuck.exitCode, 1) << stuck.out;
    EXPECT_NE(stuck.err.find("the CRDs adminnetworkpolicies.policy.networking.k8s.io baselineadminnetworkpolicies.policy.networking.k8s.io "
                             "are not Established after 300s (kubectl's error is above): does " + file + " define both"),
              std::string::npos) << stuck.err;
    ran = calls();
    for (const auto& c : ran) EXPECT_EQ(c.find("kustomize"), std::string::npos) << "kovs applied without the CRDs: " << c;
}

// uninstall never deletes the CRDs (deleting one deletes every policy of its
// kind, the users'): where the cluster has them it says so and how to delete
// them; where it has none it says nothing of them.
TEST_F(KovsKindWithFakeTools, UninstallKeepsTheAdminNetworkPolicyCrdsAndSaysHowToDeleteThem) {
    const std::string note = "    (note: the AdminNetworkPolicy CRDs stay: your ANPs and BANP live in them. To delete them with every such "
                             "policy: kubectl --context kind-kovs delete crd adminnetworkpolicies.policy.networking.k8s.io "
                             "baselineadminnetworkpolicies.policy.networking.k8s.io)\n";
    auto with = run({"uninstall"}, {{"FAKE_CRDS", "customresourcedefinition.apiextensions.k8s.io/adminnetworkpolicies.policy.networking.k8s.io "
                                                  "customresourcedefinition.apiextensions.k8s.io/baselineadminnetworkpolicies.policy.networking.k8s.io"}});
    ASSERT_EQ(with.exitCode, 0) << with.out << with.err;
    EXPECT_NE(with.out.find(note), std::string::npos) << with.out;
    for (const auto& c : calls()) {
        if (c.find(" crd ") != std::string::npos) {
            EXPECT_EQ(c.rfind("kubectl --context kind-kovs get crd ", 0), 0u) << "uninstall did more than look at the CRDs: " << c;
        }
        EXPECT_EQ(c.find("admin-network-policy-crds.yaml"), std::string::npos) << c;
    }
    fs::remove(log_);
    auto without = run({"uninstall"});
    ASSERT_EQ(without.exitCode, 0) << without.err;
    EXPECT_EQ(without.out.find("AdminNetworkPolicy"), std::string::npos) << without.out;
    auto dry = run({"uninstall", "--dry-run"});
    EXPECT_NE(dry.out.find("    (note: the AdminNetworkPolicy CRDs stay, where installed: your ANPs and BANP live in them. To delete them"),
              std::string::npos) << dry.out;
}

// kind/admin-network-policy-crds.yaml, the CRDs kovs ships: the API's group,
// version, kinds, names and scope, as the agent watches them
// (policy/PolicySource.cpp) and kovs-kind waits for them; a structural schema
// (a type on every node, the root's metadata unconstrained) that states
// priority's range as the agent's decoder reads it and the BANP's one name.
TEST(AdminNetworkPolicyCrds, AreTheApisResourcesAsTheAgentWatchesThem) {
    const auto src = sourceDir();
    auto docs = loadDocuments(src / "kind/admin-network-policy-crds.yaml");
    ASSERT_EQ(docs.size(), 2u);
    const std::string group = "policy.networking.k8s.io", version = "v1alpha1";
    const auto watched = readFile(src / "policy/PolicySource.cpp");
    EXPECT_NE(watched.find("\"/apis/" + group + "/" + version + "/\""), std::string::npos) << "the agent watches another API";
    std::smatch max;
    const auto decoder = readFile(src / "policy/AdminPolicyModel.cpp");
    ASSERT_TRUE(std::regex_search(decoder, max, std::regex("kMaxPriority = ([0-9]+);"))) << "policy/AdminPolicyModel.cpp: no kMaxPriority";

    // Every node of the schema has a type, or keeps what it holds as written.
    std::function<void(const YAML::Node&, const std::string&)> structural = [&](const YAML::Node& n, const std::string& at) {
        EXPECT_TRUE(n["type"].IsDefined()) << at << ": no type (not a structural schema)";
        for (const auto& p : n["properties"]) structural(p.second, at + "." + p.first.as<std::string>());
        if (n["items"]) structural(n["items"], at + "[]");
    };
    struct Want {
        std::string kind, plural, shortName;
        bool baseline;
    };
    for (const auto& w : {Want{"AdminNetworkPolicy", "adminnetworkpolicies", "anp", false},
                          Want{"BaselineAdminNetworkPolicy", "baselineadminnetworkpolicies", "banp", true}}) {
        const auto key = "CustomResourceDefinition/" + w.plural + "." + group;
        ASSERT_TRUE(docs.count(key)) << "no " << key;
        const auto& crd = docs[key];
        EXPECT_EQ(crd["apiVersion"].as<std::string>(), "apiextensions.k8s.io/v1");
        const auto& spec = crd["spec"];
        EXPECT_EQ(spec["group"].as<std::string>(), group);
        EXPECT_EQ(spec["scope"].as<std::string>(), "Cluster") << w.kind;
        EXPECT_EQ(spec["names"]["kind"].as<std::string>(), w.kind);
        EXPECT_EQ(spec["names"]["listKind"].as<std::string>(), w.kind + "List");
        EXPECT_EQ(spec["names"]["plural"].as<std::string>(), w.plural);
        std::string singular = w.kind;
        std::transform(singular.begin(), singular.end(), singular.begin(), [](unsigned char c) { return std::tolower(c); });
        EXPECT_EQ(spec["names"]["singular"].as<std::string>(), singular);
        EXPECT_EQ(strings(spec["names"]["shortNames"]), std::vector<std::string>{w.shortName});
        EXPECT_NE(watched.find("\"" + w.plural + "\""), std::string::npos) << "the agent does not watch " << w.plural;

        ASSERT_EQ(spec["versions"].size(), 1u) << w.kind;
        const auto& v = spec["versions"][0];
        EXPECT_EQ(v["name"].as<std::string>(), version);
        EXPECT_TRUE(v["served"].as<bool>());
        EXPECT_TRUE(v["storage"].as<bool>());
        EXPECT_TRUE(v["subresources"]["status"].IsMap()) << w.kind << ": implementations write status through its subresource";

        const auto& root = v["schema"]["openAPIV3Schema"];
        structural(root, w.kind);
        EXPECT_EQ(root["type"].as<std::string>(), "object");
        EXPECT_EQ(strings(root["required"]), (std::vector<std::string>{"metadata", "spec"}));
        EXPECT_EQ(root["properties"]["apiVersion"]["type"].as<std::string>(), "string");
        EXPECT_EQ(root["properties"]["kind"]["type"].as<std::string>(), "string");
        EXPECT_EQ(root["properties"]["metadata"].size(), 1u) << "the root's metadata may constrain only name and generateName";
        const auto& specSchema = root["properties"]["spec"];
        EXPECT_TRUE(specSchema["x-kubernetes-preserve-unknown-fields"].as<bool>()) << "the agent, not the schema, reads the rules";
        EXPECT_TRUE(root["properties"]["status"]["x-kubernetes-preserve-unknown-fields"].as<bool>());
        for (const char* dir : {"ingress", "egress"}) {
            EXPECT_EQ(specSchema["properties"][dir]["type"].as<std::string>(), "array") << w.kind << " " << dir;
            EXPECT_EQ(specSchema["properties"][dir]["maxItems"].as<int>(), 100) << w.kind << " " << dir;
        }
        EXPECT_EQ(specSchema["properties"]["subject"]["type"].as<std::string>(), "object");

        if (!w.baseline) {
            EXPECT_EQ(strings(specSchema["required"]), (std::vector<std::string>{"priority", "subject"}));
            const auto& priority = specSchema["properties"]["priority"];
            EXPECT_EQ(priority["type"].as<std::string>(), "integer");
            EXPECT_EQ(priority["minimum"].as<int>(), 0);
            EXPECT_EQ(priority["maximum"].as<int>(), std::stoi(max[1])) << "the decoder's range (policy/AdminPolicyModel.cpp)";
            bool column = false;
            for (const auto& c : v["additionalPrinterColumns"])
                column |= c["jsonPath"].as<std::string>() == ".spec.priority" && c["type"].as<std::string>() == "integer";
            EXPECT_TRUE(column) << "kubectl get anp shows no priority";
            EXPECT_FALSE(root["x-kubernetes-validations"].IsDefined());
        } else {
            EXPECT_EQ(strings(specSchema["required"]), std::vector<std::string>{"subject"});
            EXPECT_FALSE(specSchema["properties"]["priority"].IsDefined()) << "a BANP has no priority";
            ASSERT_EQ(root["x-kubernetes-validations"].size(), 1u);
            EXPECT_EQ(root["x-kubernetes-validations"][0]["rule"].as<std::string>(), "self.metadata.name == 'default'");
        }
    }

    // Kubernetes' own YAML reading is not yaml-cpp's: Python's YAML 1.1 loader
    // (as strict about a plain scalar's ": " as Kubernetes' go-yaml) reads the
    // same names.
    auto py = kovs::runProcess({"python3", "-c",
                                "import sys, yaml\n"
                                "for d in yaml.safe_load_all(open(sys.argv[1])):\n"
                                "    n = d['spec']['names']\n"
                                "    print(d['metadata']['name'], d['spec']['group'], d['spec']['scope'], n['kind'], n['plural'],\n"
                                "          d['spec']['versions'][0]['name'])\n",
                                (src / "kind/admin-network-policy-crds.yaml").string()});
    ASSERT_TRUE(py.ok()) << py.err;
    EXPECT_EQ(py.out,
              "adminnetworkpolicies.policy.networking.k8s.io policy.networking.k8s.io Cluster AdminNetworkPolicy adminnetworkpolicies v1alpha1\n"
              "baselineadminnetworkpolicies.policy.networking.k8s.io policy.networking.k8s.io Cluster BaselineAdminNetworkPolicy "
              "baselineadminnetworkpolicies v1alpha1\n");
}

}  // namespace
