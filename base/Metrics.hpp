#pragma once
// Prometheus text exposition (format 0.0.4) for the agent's /metrics, which every
// job writes its samples into (Job::metrics), and a latency histogram.
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kovs {

using MetricLabels = std::map<std::string, std::string>;

// Samples of one metric family stay together in the output (the format
// requires it) in whatever order they are added.
class MetricsText {
public:
    void counter(const std::string& name, const std::string& help, double value, const MetricLabels& labels = {});
    void gauge(const std::string& name, const std::string& help, double value, const MetricLabels& labels = {});
    std::string str() const;

private:
    friend class LatencyHistogram;
    void header(const std::string& name, const std::string& help, const char* type);
    // `sample` is the family name or, for histograms, name_bucket/_sum/_count.
    void sample(const std::string& family, const std::string& sample, double value, const MetricLabels& labels);

    std::vector<std::string> order_;               // families, first use first
    std::map<std::string, std::string> families_;  // family -> HELP, TYPE and sample lines
};

// Cumulative buckets in seconds, from 100 µs to 1 s.
class LatencyHistogram {
public:
    static constexpr std::array<double, 10> kBounds{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.25, 1.0};

    void observe(std::chrono::nanoseconds d);
    void write(MetricsText& out, const std::string& name, const std::string& help) const;
    uint64_t count() const { return count_; }

private:
    std::array<uint64_t, kBounds.size()> buckets_{};
    uint64_t count_ = 0;
    double sum_ = 0;
};

}  // namespace kovs
