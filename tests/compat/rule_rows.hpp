#pragma once
// Table rows for compat::check_profile tests: a profile made of fields as a profile file spells them, the rule id
// under test and the status every finding with that id must have. Shared by the compat rule tests.

#include <algorithm>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "compat/rules.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"

namespace gpuenv::testing::rule_rows {

using gpuenv::compat::KnowledgeBase;
using gpuenv::compat::Purpose;
using gpuenv::profile::Profile;
using gpuenv::report::Finding;

/// One profile field as the profile file spells it; list fields take comma-separated values.
struct Field {
  std::string_view key;
  std::string value;
};

inline std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > start) out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

inline void set(Profile& profile, std::string_view key, const std::string& value) {
  if (key == "os.distro")
    profile.os_distro = value;
  else if (key == "os.version")
    profile.os_version = value;
  else if (key == "os.arch")
    profile.os_arch = value;
  else if (key == "cuda.version")
    profile.cuda_version = value;
  else if (key == "cudnn.version")
    profile.cudnn_version = value;
  else if (key == "driver.min")
    profile.driver_min = value;
  else if (key == "driver.branch")
    profile.driver_branch = value;
  else if (key == "driver.modules")
    profile.driver_modules = value;
  else if (key == "image.flavor")
    profile.image_flavor = value;
  else if (key == "framework.name")
    profile.framework_name = value;
  else if (key == "framework.version")
    profile.framework_version = value;
  else if (key == "framework.python")
    profile.framework_python = value;
  else if (key == "framework.variant")
    profile.framework_variant = value;
  else if (key == "gpu.compute_capabilities")
    profile.gpu_compute_capabilities = split_commas(value);
  else if (key == "gpu.models")
    profile.gpu_models = split_commas(value);
  else
    throw std::invalid_argument("test bug: unknown profile field " + std::string(key));
}

/// An Ubuntu 22.04 / CUDA 12.4.1 / runtime profile with `fields` applied.
inline Profile make_profile(const std::vector<Field>& fields) {
  Profile profile;
  profile.name = "test";
  profile.os_distro = "ubuntu";
  profile.os_version = "22.04";
  profile.cuda_version = "12.4.1";
  profile.image_flavor = "runtime";
  for (const Field& field : fields) set(profile, field.key, field.value);
  return profile;
}

inline const KnowledgeBase& kb() {
  const auto loaded = gpuenv::compat::builtin_knowledge_base();
  if (!loaded) throw std::runtime_error("builtin knowledge base: " + loaded.error().message);
  return **loaded;
}

/// What a row expects of the findings with its rule id: every one of them has this status, or there is none.
enum class Expect { pass, warn, fail, skip, absent };

inline std::string_view name_of(Expect expect) {
  switch (expect) {
    case Expect::pass:
      return "pass";
    case Expect::warn:
      return "warn";
    case Expect::fail:
      return "fail";
    case Expect::skip:
      return "skip";
    case Expect::absent:
      return "absent";
  }
  return "?";
}

struct Row {
  std::string what;           ///< why the verdict follows (reference fact)
  std::vector<Field> fields;  ///< on top of make_profile's defaults
  std::string id;             ///< rule id under test
  Expect expect;
  std::string contains;  ///< "" or text one of the findings' message/remedy must contain
  Purpose purpose;
};

inline Row row(std::string what, std::vector<Field> fields, std::string id, Expect expect, std::string contains = {},
               Purpose purpose = Purpose::check) {
  return Row{std::move(what), std::move(fields), std::move(id), expect, std::move(contains), purpose};
}

inline std::string describe(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) {
    out += "  " + f.id + " " + std::string(gpuenv::report::to_string(f.status)) + ": " + f.message;
    if (!f.remedy.empty()) out += " | remedy: " + f.remedy;
    out += "\n";
  }
  return out;
}

inline void check_rows(const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    const Profile profile = make_profile(r.fields);
    const std::vector<Finding> findings = gpuenv::compat::check_profile(profile, kb(), r.purpose);
    std::vector<const Finding*> matching;
    for (const Finding& f : findings) {
      if (f.id == r.id) matching.push_back(&f);
    }
    INFO("row: " << r.what << "\nexpect " << r.id << " = " << name_of(r.expect) << "\nfindings:\n"
                 << describe(findings));
    if (r.expect == Expect::absent) {
      CHECK(matching.empty());
      continue;
    }
    REQUIRE_FALSE(matching.empty());
    for (const Finding* f : matching) CHECK(gpuenv::report::to_string(f->status) == name_of(r.expect));
    if (!r.contains.empty()) {
      bool found = false;
      for (const Finding* f : matching) {
        found = found || f->message.find(r.contains) != std::string::npos ||
                f->remedy.find(r.contains) != std::string::npos;
      }
      INFO("expected text: " << r.contains);
      CHECK(found);
    }
    // A finding that does not pass says what to do about it.
    for (const Finding* f : matching) {
      if (f->status == gpuenv::report::Status::warn || f->status == gpuenv::report::Status::fail)
        CHECK_FALSE(f->remedy.empty());
    }
  }
}

inline Field torch(const char* version) { return {"framework.version", version}; }

}  // namespace gpuenv::testing::rule_rows
