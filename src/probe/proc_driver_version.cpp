#include "probe/proc_driver_version.hpp"

#include <vector>

#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::probe {
namespace {

using util::Error;
using util::Expected;

/// A whitespace-separated word and where it ends in the text it came from.
struct Word {
  std::string_view text;
  std::size_t end = 0;
};

/// Whitespace-separated words; the banner pads fields with two spaces, which must not make empty words.
std::vector<Word> words(std::string_view text) {
  std::vector<Word> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) out.push_back({text.substr(start, i - start), i});
  }
  return out;
}

/// The text after the first occurrence of `word` (a whole word) in `text`, or nullopt.
std::optional<std::string_view> after_word(std::string_view text, std::string_view word) {
  std::size_t pos = 0;
  while ((pos = text.find(word, pos)) != std::string_view::npos) {
    const bool starts = pos == 0 || text[pos - 1] == ' ' || text[pos - 1] == '\t';
    const std::size_t end = pos + word.size();
    const bool ends = end == text.size() || text[end] == ' ' || text[end] == '\t';
    if (starts && ends) return text.substr(end);
    pos = end;
  }
  return std::nullopt;
}

}  // namespace

Expected<KernelModuleBanner> parse_kernel_module_banner(std::string_view banner) {
  const std::string_view text = util::trim(banner);
  const std::string where = "NVIDIA kernel module banner \"" + std::string(text.substr(0, 120)) + "\"";
  if (!util::starts_with(text, "NVIDIA UNIX")) {
    return Error::input(where + " does not start with \"NVIDIA UNIX\"");
  }
  // Proprietary: "NVIDIA UNIX x86_64 Kernel Module  460.39  <date>".
  // Open:        "NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (builder)  <date>".
  const auto rest = after_word(text, "Module");
  if (!rest) return Error::input(where + " has no \"Kernel Module\"");
  KernelModuleBanner out;
  const std::string_view head = text.substr(0, text.size() - rest->size());
  out.open_module = util::contains(head, "Open Kernel Module");
  const std::vector<Word> head_words = words(head);
  const std::vector<Word> tail = words(*rest);
  std::size_t version_index = 0;
  if (out.open_module) {
    if (tail.size() >= 2 && tail[0].text == "for") {
      out.architecture = std::string(tail[1].text);
      version_index = 2;
    }
  } else if (head_words.size() == 5) {
    // "NVIDIA UNIX <arch> Kernel Module": the third word is the architecture.
    out.architecture = std::string(head_words[2].text);
  }
  if (tail.size() <= version_index || !util::Version::parse(tail[version_index].text)) {
    return Error::input(where + " has no version number after \"Kernel Module\"");
  }
  out.version = std::string(tail[version_index].text);
  out.build_info = std::string(util::trim(rest->substr(tail[version_index].end)));
  return out;
}

Expected<ProcDriverVersion> parse_proc_driver_version(std::string_view text) {
  ProcDriverVersion out;
  bool found = false;
  for (const std::string_view raw : util::split_lines(text)) {
    const std::string_view line = util::trim(raw);
    if (util::starts_with(line, "NVRM version:") && !found) {
      auto banner = parse_kernel_module_banner(line.substr(std::string_view("NVRM version:").size()));
      if (!banner) return Error::input("/proc/driver/nvidia/version: " + banner.error().message);
      out.module = std::move(banner).value();
      found = true;
    } else if (util::starts_with(line, "GCC version:")) {
      out.gcc_line = std::string(util::trim(line.substr(std::string_view("GCC version:").size())));
      // "gcc version 7.5.0 (Ubuntu 7.5.0-3ubuntu1~18.04)": the first dotted number after "version".
      if (const auto after = after_word(out.gcc_line, "version")) {
        for (const Word& word : words(*after)) {
          if (util::Version::parse(word.text)) {
            out.gcc_version = std::string(word.text);
            break;
          }
        }
      }
    }
  }
  if (!found) {
    return Error::input("/proc/driver/nvidia/version has no \"NVRM version:\" line",
                        "check that the NVIDIA kernel module is loaded (lsmod | grep nvidia)");
  }
  return out;
}

}  // namespace gpuenv::probe
