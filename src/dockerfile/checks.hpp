#pragma once
// What render() re-checks before writing (the checks themselves are dockerfile::check(), dockerfile.hpp).

#include "compat/derive.hpp"
#include "compat/knowledge_base.hpp"
#include "dockerfile/data.hpp"
#include "profile/profile.hpp"
#include "util/version.hpp"

namespace gpuenv::dockerfile {

/// Whether NVIDIA published the tag the profile implies, judged from the knowledge base alone.
bool tag_published(const profile::Profile& profile, const compat::KnowledgeBase& kb, const compat::Derived& derived);

/// Whether the pinned uv installs CPython `python` (major.minor within its range).
bool uv_provides(const Data& data, const util::Version& python);

}  // namespace gpuenv::dockerfile
