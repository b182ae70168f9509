#include "util/version.hpp"

#include <algorithm>
#include <charconv>

namespace gpuenv::util {

std::string major_of(std::string_view version) { return std::string(version.substr(0, version.find('.'))); }

std::optional<Version> Version::parse(std::string_view text) {
  std::vector<int> components;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = text.find('.', start);
    const std::string_view part =
        text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    int value = 0;
    std::from_chars(part.data(), part.data() + part.size(), value);
    components.push_back(value);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (components.size() > 4) return std::nullopt;
  Version version(std::move(components));
  version.m_text = std::string(text);
  return version;
}

bool Version::starts_with(const Version& prefix) const {
  if (prefix.m_components.size() > m_components.size()) return false;
  return std::equal(prefix.m_components.begin(), prefix.m_components.end(), m_components.begin());
}

Version Version::truncated(std::size_t count) const {
  std::vector<int> head(m_components.begin(),
                        m_components.begin() + static_cast<long>(std::min(count, m_components.size())));
  return Version(std::move(head));
}

std::string Version::str() const {
  if (!m_text.empty()) return m_text;
  std::string out;
  for (std::size_t i = 0; i < m_components.size(); ++i) {
    if (i > 0) out += '.';
    out += std::to_string(m_components[i]);
  }
  return out;
}

std::strong_ordering operator<=>(const Version& a, const Version& b) {
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (auto order = a.component(i) <=> b.component(i); order != 0) return order;
  }
  return std::strong_ordering::equal;
}

}  // namespace gpuenv::util
