#pragma once
// The compatibility rules: a profile plus the knowledge base in, findings out. Pure.

#include <vector>

#include "compat/knowledge_base.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"

namespace gpuenv::compat {

/// What the profile is about to be used for; only image availability depends on it.
enum class Purpose {
  check,       ///< `profile check`, `matrix`: a distro with no nvidia/cuda image is fine
  dockerfile,  ///< `dockerfile`: the image must exist
};

/// Every rule's findings for one profile, in a stable order. Ids are listed in docs/rules.md.
std::vector<report::Finding> check_profile(const profile::Profile& profile, const KnowledgeBase& kb,
                                           Purpose purpose = Purpose::check);

/// How a driver version relates to what a CUDA version needs (shared by the driver and wheel rules).
struct DriverJudgement {
  report::Status status;
  std::string message;
  std::string remedy;
};

/// " (compared at the precision written: ...)" when `written` meets `floor` only at the precision it is written
/// with ("580.65" for 580.65.06), else "".
std::string as_written(const util::Version& written, const util::Version& floor);

/// Judges `driver` for CUDA `cuda` (X.Y or X.Y.Z): pass at or above `required` (compared at the precision `driver` is
/// written with); warn between the major's minor-version-compatibility floor and `required`; fail below the floor.
/// `subject` names the driver in messages.
DriverJudgement judge_driver(const util::Version& driver, const std::string& subject, const util::Version& cuda,
                             const std::optional<util::Version>& required, const KnowledgeBase& kb);

}  // namespace gpuenv::compat

namespace gpuenv::compat {

/// One matrix cell's findings and whether it is usable (no failing finding).
struct CellVerdict {
  profile::Cell cell;
  std::vector<report::Finding> findings;
  bool valid = true;
};

/// Runs check_profile on every cell.
std::vector<CellVerdict> check_cells(const std::vector<profile::Cell>& cells, const KnowledgeBase& kb,
                                     Purpose purpose = Purpose::check);

}  // namespace gpuenv::compat
