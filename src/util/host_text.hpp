#pragma once
// Text that others wrote (os-release, nvidia-smi reports, kernel logs, profiles) made safe to print: valid UTF-8,
// no raw control characters, bounded length. The one place every renderer (text, JSON, one line, Prometheus) cleans
// host text, and counts what it changed so the output can say so.

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuenv::util {

/// What cleaning changed, summed over the strings cleaned with it.
struct TextRepairs {
  std::size_t invalid_utf8 = 0;  ///< bytes that were not well-formed UTF-8, each replaced by U+FFFD
  std::size_t control = 0;       ///< control characters escaped (\n, \t, \r, \xNN)
  std::size_t truncated = 0;     ///< strings cut at the length limit
  bool any() const { return invalid_utf8 + control + truncated > 0; }
  /// "2 invalid UTF-8 bytes replaced by U+FFFD, 1 control character escaped"; empty when nothing changed.
  std::string describe() const;
};

/// How to clean one string.
struct CleanOptions {
  bool escape_control = true;    ///< false where the format escapes them itself (JSON)
  std::size_t max_bytes = 4096;  ///< longer strings are cut on a character boundary, with k_cut_marker appended
};

/// Appended to a string cut at the limit.
inline constexpr std::string_view k_cut_marker = "...[cut]";

/// `text` cleaned: each byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF) becomes U+FFFD; C0 controls and DEL become \n, \t, \r or \xNN when
/// `escape_control`; the result is at most `max_bytes` plus the marker. Adds what it changed to `repairs`.
std::string clean_host_text(std::string_view text, const CleanOptions& options, TextRepairs& repairs);
/// The characters that end a quoted POSIX shell word or start an expansion inside one: ' " ` $ \ .
inline constexpr std::string_view k_shell_quote_breakers = "'\"`$\\";

/// `text` as a line a shell cannot be steered by, whoever quotes it and however (NHC's `eval ... "'$*'"`, a
/// wrapper's `eval "reason=\"$out\""`): every character of k_shell_quote_breakers removed, and controls (a newline
/// would start a new command) become spaces. "$(reboot)" reads "(reboot)", "the run's" reads "the runs".
std::string shell_inert(std::string_view text);

/// Whether `text` is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);
/// The longest prefix of (valid UTF-8) `text` of at most `max_bytes` that does not split a character.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

}  // namespace gpuenv::util
