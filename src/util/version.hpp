#pragma once
// Dotted numeric versions as NVIDIA, PyTorch and Python name them: "12.4.1", "550.54.15", "9", "3.11".

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuenv::util {

/// The text before the first dot ("12" of "12.8.1", all of "9"): the major version as written, for names and paths.
std::string major_of(std::string_view version);

/// A version of one to four numeric components; comparison pads missing components with zeros.
class Version {
 public:
  Version() = default;
  explicit Version(std::vector<int> components) : m_components(std::move(components)) {}

  /// Parses "N", "N.N", "N.N.N" or "N.N.N.N" (digits only); nullopt for anything else.
  static std::optional<Version> parse(std::string_view text);

  const std::vector<int>& components() const { return m_components; }
  int major() const { return component(0); }
  int minor() const { return component(1); }
  int patch() const { return component(2); }
  int component(std::size_t index) const { return index < m_components.size() ? m_components[index] : 0; }
  std::size_t size() const { return m_components.size(); }
  bool empty() const { return m_components.empty(); }

  /// True when every component of `prefix` equals ours: "9" covers "9.1.0", "12.4" covers "12.4.1".
  bool starts_with(const Version& prefix) const;
  /// The first `count` components.
  Version truncated(std::size_t count) const;
  /// Whether this version meets `floor` compared at the precision it was written with: "580.65" meets 580.65.06 (the
  /// components written match), "580.64" does not; a version with as many components as `floor` is compared fully.
  bool at_least_as_written(const Version& floor) const { return *this >= floor.truncated(size()); }

  /// The version as written when parsed ("535.54.03" keeps its zero), else the components joined by dots.
  std::string str() const;

  friend std::strong_ordering operator<=>(const Version& a, const Version& b);
  friend bool operator==(const Version& a, const Version& b) { return (a <=> b) == 0; }

 private:
  std::vector<int> m_components;
  std::string m_text;  ///< the parsed spelling; empty for constructed versions
};

}  // namespace gpuenv::util
