// main() of every integration test binary: before any test runs, the process
// moves into private network and mount namespaces (PrivateNamespaces.hpp).
#include <gtest/gtest.h>

#include "tests/support/PrivateNamespaces.hpp"

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (int rc = kovs::test::enterPrivateNamespaces(argv[0])) return rc;
    return RUN_ALL_TESTS();
}
