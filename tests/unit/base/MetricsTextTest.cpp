// The Prometheus text exposition the agent's /metrics serves: families,
// labels and escaping, histograms.
#include <gtest/gtest.h>

#include <chrono>

#include "base/Metrics.hpp"

using namespace kovs;

TEST(MetricsText, WritesPrometheusExposition) {
    MetricsText m;
    m.counter("kovs_repairs_total", "Repairs.", 3, {{"kind", "gateway_address"}});
    m.counter("kovs_repairs_total", "Repairs.", 1, {{"kind", "route\"x"}});
    m.gauge("kovs_peers", "Peers.", 2);
    LatencyHistogram h;
    h.observe(std::chrono::microseconds(300));
    h.observe(std::chrono::milliseconds(20));
    h.write(m, "kovs_gateway_restore_seconds", "Restore latency.");
    const auto& t = m.str();
    EXPECT_EQ(t.find("# TYPE kovs_repairs_total counter"), t.rfind("# TYPE kovs_repairs_total counter"));
    EXPECT_NE(t.find("kovs_repairs_total{kind=\"gateway_address\"} 3\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_repairs_total{kind=\"route\\\"x\"} 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_peers 2\n"), std::string::npos);
    EXPECT_NE(t.find("kovs_gateway_restore_seconds_bucket{le=\"0.0001\"} 0\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_gateway_restore_seconds_bucket{le=\"0.0005\"} 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_gateway_restore_seconds_bucket{le=\"0.025\"} 2\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_gateway_restore_seconds_bucket{le=\"+Inf\"} 2\n"), std::string::npos) << t;
    EXPECT_NE(t.find("kovs_gateway_restore_seconds_count 2\n"), std::string::npos) << t;
}

TEST(MetricsText, KeepsEachFamilyTogetherWhateverTheOrderOfCalls) {
    MetricsText m;
    m.counter("kovs_reconciles_total", "Runs.", 1, {{"reconciler", "bridge"}});
    m.gauge("kovs_peers", "Peers.", 2);
    m.counter("kovs_reconciles_total", "Runs.", 5, {{"reconciler", "gateway"}});
    EXPECT_EQ(m.str(),
              "# HELP kovs_reconciles_total Runs.\n# TYPE kovs_reconciles_total counter\n"
              "kovs_reconciles_total{reconciler=\"bridge\"} 1\nkovs_reconciles_total{reconciler=\"gateway\"} 5\n"
              "# HELP kovs_peers Peers.\n# TYPE kovs_peers gauge\nkovs_peers 2\n");
}
