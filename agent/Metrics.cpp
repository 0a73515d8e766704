#include "agent/Metrics.hpp"

#include <fmt/format.h>

namespace kovs {
namespace {

std::string escapeLabel(const std::string& v) {
    std::string o;
    for (char c : v) {
        if (c == '\\' || c == '"') o += '\\';
        if (c == '\n') {
            o += "\\n";
            continue;
        }
        o += c;
    }
    return o;
}

}  // namespace

void MetricsText::header(const std::string& name, const std::string& help, const char* type) {
    if (described_[name]) return;
    described_[name] = true;
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void MetricsText::sample(const std::string& name, double value, const MetricLabels& labels) {
    out_ += name;
    if (!labels.empty()) {
        out_ += '{';
        bool first = true;
        for (const auto& [k, v] : labels) {
            out_ += fmt::format("{}{}=\"{}\"", first ? "" : ",", k, escapeLabel(v));
            first = false;
        }
        out_ += '}';
    }
    out_ += fmt::format(" {}\n", value);
}

void MetricsText::counter(const std::string& name, const std::string& help, double value, const MetricLabels& labels) {
    header(name, help, "counter");
    sample(name, value, labels);
}

void MetricsText::gauge(const std::string& name, const std::string& help, double value, const MetricLabels& labels) {
    header(name, help, "gauge");
    sample(name, value, labels);
}

void LatencyHistogram::observe(std::chrono::nanoseconds d) {
    double s = std::chrono::duration<double>(d).count();
    for (size_t i = 0; i < kBounds.size(); ++i) {
        if (s <= kBounds[i]) ++buckets_[i];
    }
    ++count_;
    sum_ += s;
}

void LatencyHistogram::write(MetricsText& out, const std::string& name, const std::string& help) const {
    out.header(name, help, "histogram");
    for (size_t i = 0; i < kBounds.size(); ++i) {
        out.sample(name + "_bucket", static_cast<double>(buckets_[i]), {{"le", fmt::format("{}", kBounds[i])}});
    }
    out.sample(name + "_bucket", static_cast<double>(count_), {{"le", "+Inf"}});
    out.sample(name + "_sum", sum_, {});
    out.sample(name + "_count", static_cast<double>(count_), {});
}

}  // namespace kovs
