#include "base/Metrics.hpp"

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
    if (families_.count(name)) return;
    order_.push_back(name);
    families_[name] = fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void MetricsText::sample(const std::string& family, const std::string& sample, double value, const MetricLabels& labels) {
    auto& out = families_.at(family);
    out += sample;
    if (!labels.empty()) {
        out += '{';
        bool first = true;
        for (const auto& [k, v] : labels) {
            out += fmt::format("{}{}=\"{}\"", first ? "" : ",", k, escapeLabel(v));
            first = false;
        }
        out += '}';
    }
    out += fmt::format(" {}\n", value);
}

std::string MetricsText::str() const {
    std::string out;
    for (const auto& name : order_) out += families_.at(name);
    return out;
}

void MetricsText::counter(const std::string& name, const std::string& help, double value, const MetricLabels& labels) {
    header(name, help, "counter");
    sample(name, name, value, labels);
}

void MetricsText::gauge(const std::string& name, const std::string& help, double value, const MetricLabels& labels) {
    header(name, help, "gauge");
    sample(name, name, value, labels);
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
        out.sample(name, name + "_bucket", static_cast<double>(buckets_[i]), {{"le", fmt::format("{}", kBounds[i])}});
    }
    out.sample(name, name + "_bucket", static_cast<double>(count_), {{"le", "+Inf"}});
    out.sample(name, name + "_sum", sum_, {});
    out.sample(name, name + "_count", static_cast<double>(count_), {});
}

}  // namespace kovs
