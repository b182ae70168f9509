#pragma once
// The install state file (<state-dir>/install-state.json): which steps completed and which failed, written
// atomically after every step so --resume continues after a reboot or a fix.

#include <optional>
#include <string>
#include <vector>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::install {

struct InstallState {
  std::string profile;
  std::string target;  ///< Target::label()
  std::vector<std::string> completed;
  std::string failed;   ///< the failing step's id; empty when none
  /// The boot ids from which gpuenv rebooted the node for this profile and target (every run counts them, with or
  /// without --resume), so a module that never loads ends in a failure instead of a reboot loop.
  std::vector<std::string> reboots;
  std::string updated;  ///< UTC time of the last write

  bool is_completed(const std::string& id) const;
};

/// The state file's text (JSON).
std::string state_json(const InstallState& state);
/// Parses a state file; an input Error naming `path` when it is not one.
util::Expected<InstallState> parse_state(const std::string& text, const std::string& path);
/// Reads the state at `path`; nullopt when there is none; an input Error when someone other than root and the
/// running user could have changed it (System::trust_problem).
util::Expected<std::optional<InstallState>> load_state(system::System& system, const std::string& path);
/// Writes the state atomically.
util::Expected<util::Ok> save_state(system::System& system, const std::string& path, const InstallState& state);

}  // namespace gpuenv::install
