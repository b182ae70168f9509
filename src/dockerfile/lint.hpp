#pragma once
// Structural checks on Dockerfile text where the offline linter (dockerfile-utils) is blind: image names,
// the nvidia/cuda tag grammar, stage references, the final USER, and the package-manager discipline gpuenv
// promises. Pure; used by render() on its own output and by the tests on every generated file.

#include <string>
#include <string_view>
#include <vector>

namespace gpuenv::dockerfile {

/// One instruction, continuation lines joined: "RUN", "apt-get update && ...", 1-based first line.
struct Instruction {
  std::string keyword;  ///< upper-cased
  std::string arguments;
  std::size_t line = 0;
};

/// Splits Dockerfile text into instructions (comments and blank lines dropped, `\` continuations joined).
std::vector<Instruction> parse_instructions(std::string_view text);

/// True for an nvidia/cuda tag of the published grammar: X.Y.Z-<flavor>-<os><version>, e.g.
/// "12.4.1-cudnn-runtime-ubuntu22.04".
bool is_cuda_tag(std::string_view tag);

/// True for a first line `# syntax=docker/dockerfile:1`, optionally behind a registry and pinned by digest
/// ("# syntax=docker.m.daocloud.io/docker/dockerfile:1@sha256:<hex>").
bool is_syntax_directive(std::string_view line);

/// Every problem found, each "line N: what is wrong"; empty when the text is sound.
/// `allowed_images` lists the non-nvidia images a FROM may name (exact references, tag included).
/// `root_allowed`: a final `USER root` is what the profile asked for (`[image] user = "root"`), not a problem.
std::vector<std::string> structural_problems(std::string_view text, const std::vector<std::string>& allowed_images,
                                             bool root_allowed = false);

}  // namespace gpuenv::dockerfile
