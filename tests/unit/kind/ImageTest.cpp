// kind/Dockerfile and the one image name that the DaemonSet runs, kovs-kind
// builds and loads, and the Dockerfile documents.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

// Built for real only by the kind-node provider of the local cluster, on a
// builder without Docker Hub: a "# syntax=" directive makes BuildKit fetch
// the docker/dockerfile frontend image first, and nothing in the file needs
// more than the built-in frontend. The runtime stage copies from "build",
// which the KOVS_BINARIES argument points at the compile or the prebuilt stage.
TEST_F(KindFiles, DockerfileBuildsWithTheBuiltinFrontendFromEitherBinaryStage) {
    auto dockerfile = readFile(src_ / "kind/Dockerfile");
    EXPECT_FALSE(std::regex_search(dockerfile, std::regex("(^|\\n)#\\s*syntax\\s*=", std::regex::icase)))
        << "kind/Dockerfile has a syntax directive";
    EXPECT_NE(dockerfile.find("ARG KOVS_BINARIES=source\n"), std::string::npos);
    EXPECT_NE(dockerfile.find("FROM debian:${DEBIAN_TAG} AS source\n"), std::string::npos);
    EXPECT_NE(dockerfile.find("FROM debian:${DEBIAN_TAG} AS prebuilt\n"), std::string::npos);
    EXPECT_NE(dockerfile.find("FROM ${KOVS_BINARIES} AS build\n"), std::string::npos);
    auto runtime = dockerfile.substr(dockerfile.rfind("\nFROM "));
    EXPECT_EQ(runtime.rfind("\nFROM debian:${DEBIAN_TAG}-slim\n", 0), 0u) << "the last stage is not the runtime stage";
    EXPECT_NE(runtime.find("COPY --from=build /out/usr/local/bin/ /usr/local/bin/"), std::string::npos);
}

TEST_F(KindFiles, OneImageNameEverywhere) {
    std::set<std::string> images;
    for (const auto& c : allContainers(podSpec_)) images.insert(c["image"].as<std::string>());
    ASSERT_EQ(images.size(), 1u) << "containers use different images";
    auto image = *images.begin();

    std::smatch m;
    auto script = readFile(src_ / "kind/kovs-kind");
    ASSERT_TRUE(std::regex_search(script, m, std::regex("readonly default_image=(\\S+)")));
    EXPECT_EQ(m[1].str(), image) << "kind/kovs-kind builds and loads another image than the DaemonSet runs";
    auto dockerfile = readFile(src_ / "kind/Dockerfile");
    ASSERT_TRUE(std::regex_search(dockerfile, m, std::regex("docker build --file kind/Dockerfile --tag (\\S+) \\.")));
    EXPECT_EQ(m[1].str(), image) << "the Dockerfile documents another tag";

    // A :latest or untagged image would make kubelet try to pull what kind loaded.
    EXPECT_EQ(image.find(":latest"), std::string::npos);
    for (const auto& c : allContainers(podSpec_)) EXPECT_EQ(c["imagePullPolicy"].as<std::string>(), "IfNotPresent");
    // Every command the pod runs is a binary the image installs.
    for (const auto& c : allContainers(podSpec_)) {
        auto cmd = c["command"][0].as<std::string>();
        EXPECT_NE(dockerfile.find(cmd), std::string::npos) << c["name"] << " runs " << cmd << ", which kind/Dockerfile does not install";
    }
}

}  // namespace
