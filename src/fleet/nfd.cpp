#include "fleet/nfd.hpp"

#include <cctype>
#include <ctime>
#include <filesystem>

namespace gpuenv::fleet {

std::string nfd_label_value(const std::string& text) {
  std::string value;
  for (char c : text) {
    const bool allowed = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
    if (allowed) {
      value += c;
    } else if (!value.empty() && value.back() != '-') {
      value += '-';
    }
  }
  if (value.size() > 63) value.resize(63);
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!value.empty() && !alnum(value.back())) value.pop_back();
  std::size_t first = 0;
  while (first < value.size() && !alnum(value[first])) ++first;
  return value.substr(first);
}

std::string rfc3339_utc(long long unix_seconds) {
  const std::time_t time = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  ::gmtime_r(&time, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string nfd_feature_file(const NodeFeatures& features) {
  std::string out = "# Written by `gpuenv doctor --nfd`; rewritten on every run.\n";
  if (features.expires_unix) out += "# +expiry-time=" + rfc3339_utc(*features.expires_unix) + "\n";
  const auto line = [&out](const char* name, const std::string& value) {
    const std::string label = nfd_label_value(value);
    if (!label.empty()) out += std::string("gpuenv.io/") + name + "=" + label + "\n";
  };
  line("ready", features.ready ? "true" : "false");
  line("verdict", features.verdict);
  line("driver-version", features.driver_version);
  line("cuda-version", features.cuda_version);
  line("gpu-model", features.gpu_model);
  line("gpu-count", std::to_string(features.gpu_count));
  return out;
}

util::Expected<util::Ok> write_nfd_feature_file(system::System& system, const std::string& path,
                                                const std::string& text) {
  // System::write_file_atomic writes a hidden temporary next to the target and renames it: NFD skips dot files.
  const std::filesystem::path target(path);
  if (target.filename().string().empty() || target.filename().string().front() == '.')
    return util::Error::usage("--nfd " + path + ": NFD ignores hidden files", "name a file without a leading dot");
  return system.write_file_atomic(path, text);
}

}  // namespace gpuenv::fleet
