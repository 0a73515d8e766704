// kind/kovs-kind, the script that makes a kind cluster with kovs: its
// --dry-run and --list-steps, its argument checks, and the real path against
// stand-ins for docker, kind and kubectl.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
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
                                 "rm", "sort", "head"}) {
            auto r = kovs::runProcess({"/bin/sh", "-c", std::string("command -v ") + tool});
            ASSERT_TRUE(r.ok()) << tool << " not found";
            auto target = r.out.substr(0, r.out.find('\n'));
            fs::create_symlink(target, bin_ / tool);
        }
    }
    kovs::ProcessResult run(std::vector<std::string> args) {
        args.insert(args.begin(), (src_ / "kind/kovs-kind").string());
        return runScript(args, {{"PATH", bin_.path()}, {"HOME", bin_.path()}});
    }
    // The lines of the output that are commands (indented under a step).
    static std::vector<std::string> commands(const std::string& out) {
        std::vector<std::string> lines;
        std::istringstream in(out);
        for (std::string l; std::getline(in, l);) {
            if (l.rfind("    ", 0) == 0 && l.find("(note:") == std::string::npos) lines.push_back(l.substr(4));
        }
        return lines;
    }
    fs::path src_;
    TempDir bin_;
};

TEST_F(KovsKindDryRun, UpPrintsEveryStepInOrder) {
    auto r = run({"up", "--dry-run"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto s = src_.string();
    std::vector<std::string> expected = {
        "docker build --file " + s + "/kind/Dockerfile --tag kovs:dev " + s,
        "kind create cluster --name kovs --config " + s + "/kind/cluster.yaml --wait 0s",
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
    for (const char* tool : {"docker", "kind", "kubectl"}) {
        EXPECT_NE(r.out.find(std::string("(note: ") + tool + " is not on PATH"), std::string::npos) << r.out;
    }
    // Numbered steps, each announced before its command.
    EXPECT_NE(r.out.find("==> [1] check prerequisites"), std::string::npos);
    EXPECT_NE(r.out.find("==> [8] next steps"), std::string::npos) << r.out;
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
    EXPECT_EQ(commands(down.out), std::vector<std::string>{"kind delete cluster --name ci-1"}) << down.out;
    auto load = run({"load", "--dry-run"});
    ASSERT_EQ(load.exitCode, 0) << load.err;
    auto cmds = commands(load.out);
    ASSERT_EQ(cmds.size(), 4u) << load.out;
    EXPECT_EQ(cmds[1], "kind load docker-image kovs:dev --name kovs");
    EXPECT_EQ(cmds[2], "kubectl --context kind-kovs --namespace kovs-system rollout restart daemonset/kovs-agent");
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
    };
    for (const auto& c : cases) {
        auto r = run(c.args);
        EXPECT_EQ(r.exitCode, 2) << c.message;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << "stderr: " << r.err;
        EXPECT_TRUE(r.out.empty()) << "printed steps despite bad arguments: " << r.out;
    }
}

TEST_F(KovsKindDryRun, ForRealItNamesEachMissingToolWithAnInstallHint) {
    auto r = run({"up"});
    EXPECT_EQ(r.exitCode, 1);
    for (const char* tool : {"docker", "kind", "kubectl"}) {
        EXPECT_NE(r.err.find(std::string("kovs-kind: ") + tool + " is required but not on PATH: "), std::string::npos)
            << r.err;
    }
    EXPECT_EQ(r.out.find("docker build"), std::string::npos) << "went on without its tools: " << r.out;
}

// The real path, against stand-ins for docker, kind and kubectl that log their
// argv: the commands run are the ones --dry-run prints, in the same order.
class KovsKindWithFakeTools : public KovsKindDryRun {
protected:
    void SetUp() override {
        KovsKindDryRun::SetUp();
        log_ = bin_ / "calls.log";
        auto fake = [&](const std::string& name, const std::string& body) {
            writeFile(bin_ / name, "#!/bin/bash\nprintf '%s\\n' \"" + name + " $*\" >> " + log_.string() + "\n" + body);
            fs::permissions(bin_ / name, fs::perms::owner_all);
        };
        fake("docker", "exit 0\n");
        fake("kind", "[ \"$1 $2\" = 'get clusters' ] && printf '%s\\n' ${FAKE_CLUSTERS:-}\nexit 0\n");
        // get nodes: two polls with workers NotReady, then all Ready.
        fake("kubectl", "case \" $* \" in\n"
                        "  *' kustomize '*) exec cat \"${@: -1}/kovs.yaml\" ;;\n"
                        "  *' apply -f - '*) exec cat > " + (bin_ / "applied.yaml").string() + " ;;\n"
                        "  *' delete --ignore-not-found -f - '*) exec cat > /dev/null ;;\n"
                        "  *' get daemonset kovs-agent '*) printf %s \"${FAKE_AGENT_IMAGE:-}\" ;;\n"
                        "  *' rollout status daemonset/kovs-cleanup '*) exit ${FAKE_CLEANUP_RC:-0} ;;\n"
                        "  *' get nodes '*) n=$(cat " + (bin_ / "polls").string() + " 2>/dev/null || echo 0)\n"
                        "     echo $((n + 1)) > " + (bin_ / "polls").string() + "\n"
                        "     if [ $n -lt 2 ]; then printf 'kovs-control-plane True\\nkovs-worker False\\nkovs-worker2 <none>\\n'\n"
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
    auto r = run({"up", "--image", "reg.io/kovs:1"});
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
    EXPECT_NE(std::find(ran.begin(), ran.end(), "docker info"), ran.end()) << "the daemon is not checked";

    auto applied = readFile(bin_ / "applied.yaml");
    EXPECT_EQ(applied.find("image: kovs:dev"), std::string::npos) << "--image did not reach every container";
    size_t n = 0;
    for (auto pos = applied.find("image: reg.io/kovs:1"); pos != std::string::npos; pos = applied.find("image: reg.io/kovs:1", pos + 1)) ++n;
    EXPECT_EQ(n, allContainers(YAML::LoadAll(applied).back()["spec"]["template"]["spec"]).size());

    EXPECT_NE(r.out.find("nodes Ready: 1/3 (waiting for kovs-worker kovs-worker2)\n    nodes Ready: 3/3\n"), std::string::npos)
        << r.out;
}

TEST_F(KovsKindWithFakeTools, UpReusesAnExistingCluster) {
    auto r = runScript({(src_ / "kind/kovs-kind").string(), "up"},
                       {{"PATH", bin_.path()}, {"HOME", bin_.path()}, {"FAKE_CLUSTERS", "other kovs"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("cluster kovs exists; reusing it"), std::string::npos) << r.out;
    for (const auto& c : calls()) EXPECT_EQ(c.find("kind create cluster"), std::string::npos) << c;
}

// The cleanup runs the image the agents ran (loaded on every node), found on
// the DaemonSet before it is deleted; the steps run in the dry run's order.
TEST_F(KovsKindWithFakeTools, UninstallRunsTheCleanupWithTheAgentsImageThenDeletesTheManifests) {
    auto r = runScript({(src_ / "kind/kovs-kind").string(), "uninstall"},
                       {{"PATH", bin_.path()}, {"HOME", bin_.path()}, {"FAKE_AGENT_IMAGE", "reg.io/kovs:7"}});
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
    auto r = runScript({(src_ / "kind/kovs-kind").string(), "uninstall"},
                       {{"PATH", bin_.path()}, {"HOME", bin_.path()}, {"FAKE_CLEANUP_RC", "1"}});
    EXPECT_EQ(r.exitCode, 1) << r.out;
    EXPECT_NE(r.err.find("the cleanup did not finish on every node"), std::string::npos) << r.err;
    for (const auto& c : calls()) {
        EXPECT_EQ(c.find("delete -f"), std::string::npos) << "manifests deleted after a failed cleanup: " << c;
        EXPECT_EQ(c.find("--ignore-not-found -f -"), std::string::npos) << c;
    }
    auto logs = std::any_of(calls().begin(), calls().end(), [](const std::string& c) {
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
    EXPECT_NE(r.out.find("ci-worker: kovsctl did not run (/opt/kovs/bin/kovsctl): stat /opt/kovs/bin/kovsctl: no such file"),
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

}  // namespace
