#pragma once
// Quoting for the two languages user-data is written in: POSIX sh (the per-boot script's settings) and YAML (the
// write_files contents). Pure.

#include <string>
#include <string_view>

namespace gpuenv::cloudinit {

/// `value` as one sh word: single-quoted, each ' written as '\'' (POSIX sh: nothing is special inside '...').
std::string sh_quote(std::string_view value);

/// RFC 4648 base64 of `bytes`, padded, no line breaks.
std::string base64(std::string_view bytes);

/// True when `text` can go into a YAML literal block unchanged: printable ASCII and newlines only, something besides
/// newlines, and no line made only of spaces (a block scalar's indentation rules would change it). Otherwise the caller
/// encodes it (b64).
bool literal_block_safe(std::string_view text);

/// The write_files `content` entry for `text` at `indent` spaces: a literal block (`|2`, `|2-` or `|2+` keeping the
/// text's trailing newlines exactly) when literal_block_safe, else `encoding: b64` and the base64 text.
std::string yaml_content(std::string_view text, int indent);

/// `text` fit for one YAML comment line: characters outside printable ASCII become '?'.
std::string comment_safe(std::string_view text);

}  // namespace gpuenv::cloudinit
