#include "smoke/expectations.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

namespace gpuenv::smoke {

std::span<const util::EmbeddedFile> embedded_smoke_data();  // generated from data/smoke/*.toml

namespace {

/// Reads one table strictly: every key read is declared, anything else is reported.
class Reader {
 public:
  Reader(const toml::table& table, std::string where, std::vector<std::string>& errors)
      : m_table(table), m_where(std::move(where)), m_errors(errors) {}
  ~Reader() {
    for (const auto& [key, value] : m_table) {
      if (m_known.count(std::string(key.str())) == 0) fail("unknown key `" + std::string(key.str()) + "`");
    }
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  std::string text(const char* key, bool required) {
    m_known.insert(key);
    const toml::node* node = m_table.get(key);
    if (node == nullptr) {
      if (required) fail(std::string("missing `") + key + "`");
      return {};
    }
    if (!node->is_string()) fail(std::string("`") + key + "` must be a string");
    return node->is_string() ? node->as_string()->get() : std::string();
  }
  std::optional<double> number(const char* key, bool required) {
    m_known.insert(key);
    const toml::node* node = m_table.get(key);
    if (node == nullptr) {
      if (required) fail(std::string("missing `") + key + "`");
      return std::nullopt;
    }
    if (const auto value = node->value<double>(); value && node->is_number()) return *value;
    fail(std::string("`") + key + "` must be a number");
    return std::nullopt;
  }
  std::vector<std::string> texts(const char* key) {
    m_known.insert(key);
    std::vector<std::string> out;
    const toml::array* array = m_table.get(key) != nullptr ? m_table.get(key)->as_array() : nullptr;
    if (array == nullptr) {
      fail(std::string("`") + key + "` must be an array of strings");
      return out;
    }
    for (const toml::node& item : *array) {
      if (item.is_string())
        out.push_back(item.as_string()->get());
      else
        fail(std::string("`") + key + "` must hold strings");
    }
    return out;
  }

 private:
  void fail(const std::string& message) { m_errors.push_back(m_where + ": " + message); }
  const toml::table& m_table;
  std::string m_where;
  std::vector<std::string>& m_errors;
  std::set<std::string> m_known;
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string format_number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, value >= 100 ? "%.0f" : "%.3g", value);
  return buffer;
}

}  // namespace

util::Expected<Expectations> parse_expectations(std::string_view text, const std::string& origin) {
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) {
    const auto& error = parsed.error();
    return util::Error::internal(origin + ":" + std::to_string(error.source().begin.line) + ":" +
                                 std::to_string(error.source().begin.column) + ": " + std::string(error.description()));
  }
  const toml::table& root = parsed.table();
  std::vector<std::string> errors;
  Expectations out;
  for (const auto& [key, node] : root) {
    const std::string name(key.str());
    if (name != "efficiency" && name != "pcie" && name != "pcie_minimum" && name != "gpu") {
      errors.push_back(origin + ": unknown table `" + name + "`");
    }
  }
  if (const toml::table* efficiency = root["efficiency"].as_table()) {
    Reader row(*efficiency, origin + " [efficiency]", errors);
    out.efficiency.d2d_copy = row.number("d2d_copy", true).value_or(0);
    out.efficiency.pcie = row.number("pcie", true).value_or(0);
    out.efficiency.sgemm = row.number("sgemm", true).value_or(0);
    out.efficiency.tensor = row.number("tensor", true).value_or(0);
    out.efficiency.status = row.text("status", true);
    out.efficiency.source = row.text("source", true);
  } else {
    errors.push_back(origin + ": missing [efficiency]");
  }
  auto each = [&](const char* name, auto&& read) {
    const toml::array* rows = root[name].as_array();
    if (rows == nullptr) return;
    std::size_t index = 0;
    for (const toml::node& node : *rows) {
      ++index;
      if (const toml::table* table = node.as_table()) {
        Reader row(*table, origin + " [[" + name + "]] #" + std::to_string(index), errors);
        read(row);
      }
    }
  };
  each("pcie", [&](Reader& row) {
    PcieLane lane;
    lane.generation = static_cast<int>(row.number("generation", true).value_or(0));
    lane.per_lane_gbs = row.number("per_lane_gbs", true).value_or(0);
    lane.status = row.text("status", true);
    out.pcie.push_back(lane);
  });
  each("pcie_minimum", [&](Reader& row) {
    PcieMinimum minimum;
    minimum.generation = static_cast<int>(row.number("generation", true).value_or(0));
    minimum.width = static_cast<int>(row.number("width", true).value_or(0));
    minimum.h2d_gbs = row.number("h2d_gbs", true).value_or(0);
    minimum.status = row.text("status", true);
    minimum.source = row.text("source", true);
    out.pcie_minimum.push_back(minimum);
  });
  each("gpu", [&](Reader& row) {
    GpuExpectation gpu;
    gpu.model = row.text("model", true);
    gpu.match = row.texts("match");
    gpu.memory_bandwidth = row.number("memory_bandwidth", false);
    gpu.memory_bandwidth_minimum = row.number("memory_bandwidth_minimum", false);
    gpu.fp32_tflops = row.number("fp32_tflops", false);
    gpu.tensor_tflops = row.number("tensor_tflops", false);
    gpu.tensor_precision = row.text("tensor_precision", true);
    gpu.status = row.text("status", true);
    gpu.source = row.text("source", true);
    if (gpu.tensor_precision != "bf16" && gpu.tensor_precision != "fp16") {
      errors.push_back(origin + " gpu " + gpu.model + ": tensor_precision must be \"bf16\" or \"fp16\"");
    }
    out.gpus.push_back(std::move(gpu));
  });
  if (!errors.empty())
    return util::Error::internal(errors.front() +
                                 (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
  return out;
}

util::Expected<Expectations> shipped_expectations() {
  for (const util::EmbeddedFile& file : embedded_smoke_data()) {
    if (file.name == "expectations.toml") return parse_expectations(file.contents, "data/smoke/expectations.toml");
  }
  return util::Error::internal("data/smoke/expectations.toml is not compiled in");
}

const GpuExpectation* find_gpu(const Expectations& expectations, std::string_view device_name) {
  const std::string name = lower(device_name);
  for (const GpuExpectation& gpu : expectations.gpus) {
    for (const std::string& pattern : gpu.match) {
      if (!pattern.empty() && name.find(lower(pattern)) != std::string::npos) return &gpu;
    }
  }
  return nullptr;
}

std::optional<PcieExpectation> pcie_expectation(const Expectations& expectations, int generation, int width) {
  if (width <= 0) return std::nullopt;
  for (const PcieLane& lane : expectations.pcie) {
    if (lane.generation != generation) continue;
    PcieExpectation out;
    out.theoretical_gbs = lane.per_lane_gbs * width;
    out.expected_gbs = out.theoretical_gbs * expectations.efficiency.pcie;
    out.source = "PCIe Gen" + std::to_string(generation) + " x" + std::to_string(width) + " theoretical " +
                 format_number(out.theoretical_gbs) + " GB/s x " + format_number(expectations.efficiency.pcie);
    for (const PcieMinimum& minimum : expectations.pcie_minimum) {
      if (minimum.generation == generation && minimum.width == width) {
        out.minimum_gbs = minimum.h2d_gbs;
        out.source += "; minimum " + format_number(minimum.h2d_gbs) + " GB/s from " + minimum.source;
      }
    }
    return out;
  }
  return std::nullopt;
}

Judgement judge(double observed, std::optional<double> expected, std::optional<double> minimum,
                const Thresholds& thresholds, const std::string& unit) {
  Judgement out;
  if (!expected || *expected <= 0) {
    out.explanation = "no expectation for this GPU";
    return out;
  }
  out.warn_below = thresholds.min_ratio * *expected;
  out.fail_below = minimum ? *minimum : thresholds.fail_ratio * *expected;
  out.warn_below = std::max(out.warn_below, out.fail_below);  // an anchor minimum above the warn line still fails
  out.explanation = "expected >= " + format_number(out.warn_below) + " " + unit + " (" +
                    format_number(thresholds.min_ratio) + " x " + format_number(*expected) +
                    " or the minimum), fail below " + format_number(out.fail_below) +
                    (minimum ? " (anchor minimum)" : " (" + format_number(thresholds.fail_ratio) + " x expected)");
  if (observed < out.fail_below) {
    out.status = report::Status::fail;
  } else if (observed < out.warn_below) {
    out.status = report::Status::warn;
  } else {
    out.status = report::Status::pass;
  }
  return out;
}

}  // namespace gpuenv::smoke
