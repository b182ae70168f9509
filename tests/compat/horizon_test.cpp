// The knowledge base's horizon, both sides of each: a version newer than the newest row is a WARN naming the
// horizon; an unknown version inside the known range stays what it was (a FAIL with the nearest real ones). The
// versions are computed from the data, so the test holds as rows are added. And the overlay's rows in the rules.

#include "compat/horizon.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "compat/rule_rows.hpp"
#include "compat/rules.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"

namespace {

using gpuenv::testing::rule_rows::kb;

using gpuenv::compat::Horizon;
using gpuenv::compat::KnowledgeBase;
using gpuenv::profile::Profile;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::util::Version;

/// An Ubuntu 22.04 / CUDA 12.4.1 / runtime profile, changed by `change`.
template <typename Change>
Profile profile(Change change) {
  Profile p;
  p.name = "horizon";
  p.os_distro = "ubuntu";
  p.os_version = "22.04";
  p.cuda_version = "12.4.1";
  p.image_flavor = "runtime";
  change(p);
  return p;
}

Profile pytorch(const std::string& version, const std::string& variant = {}) {
  return profile([&](Profile& p) {
    p.framework_name = "pytorch";
    p.framework_version = version;
    p.framework_python = "3.11";
    p.framework_variant = variant;
  });
}

Profile tensorflow(const std::string& version) {
  return profile([&](Profile& p) {
    p.framework_name = "tensorflow";
    p.framework_version = version;
    p.framework_python = "3.11";
    p.cuda_version = "12.5.1";
  });
}

Version next_patch(const Version& v) { return Version({v.major(), v.minor(), v.component(2) + 1}); }
Version next_minor(const Version& v) { return Version({v.major(), v.minor() + 1, 0}); }
Version next_major(const Version& v) { return Version({v.major() + 1, 0, 0}); }

struct HorizonRow {
  std::string what;
  Profile profile;
  std::string id;
  Status status;
  std::vector<std::string> excerpts;  ///< each in the message or remedy of the finding with `id`
};

void check_rows(const std::vector<HorizonRow>& rows) {
  for (const HorizonRow& row : rows) {
    const std::vector<Finding> findings = gpuenv::compat::check_profile(row.profile, kb());
    std::string all;
    for (const Finding& f : findings)
      all += "  " + f.id + " " + std::string(gpuenv::report::to_string(f.status)) + ": " + f.message + "\n";
    INFO(row.what << "\n" << all);
    const auto found =
        std::find_if(findings.begin(), findings.end(), [&row](const Finding& f) { return f.id == row.id; });
    REQUIRE(found != findings.end());
    CHECK(found->status == row.status);
    for (const std::string& excerpt : row.excerpts)
      CHECK_THAT(found->message + " | " + found->remedy, Catch::Contains(excerpt));
  }
}

std::string ends_at(const Horizon& h) {
  return "gpuenv's data ends at " + h.what + " " + h.newest->str() + " (data as of " + h.as_of + ")";
}

}  // namespace

TEST_CASE("horizon: every table records its date and its newest row", "[compat][horizon]") {
  for (const Horizon& h : gpuenv::compat::horizons(kb())) {
    INFO(h.table << " " << h.what);
    CHECK(h.newest.has_value());
    CHECK(h.as_of.size() == 10);  // YYYY-MM-DD
  }
  CHECK(gpuenv::compat::beyond(gpuenv::compat::cuda_horizon(kb()), Version({99})));
  CHECK_FALSE(gpuenv::compat::beyond(gpuenv::compat::cuda_horizon(kb()), Version({10, 0})));
}

TEST_CASE("horizon: CUDA releases on both sides", "[compat][horizon]") {
  const Horizon h = gpuenv::compat::cuda_horizon(kb());
  const auto cuda = [](const Version& v) { return profile([&v](Profile& p) { p.cuda_version = v.str(); }); };
  REQUIRE(kb().cuda_release(Version({12, 4, 9})) == nullptr);
  const Horizon h124 = gpuenv::compat::cuda_minor_horizon(kb(), Version({12, 4, 9}));
  REQUIRE(h124.newest.has_value());
  check_rows({
      {"the newest known release", cuda(*h.newest), "cuda.release", Status::pass, {}},
      {"one patch past the newest",
       cuda(next_patch(*h.newest)),
       "cuda.release",
       Status::warn,
       {ends_at(h), next_patch(*h.newest).str() + " is newer", "update gpuenv, or add the row to a data overlay"}},
      {"the next minor", cuda(next_minor(*h.newest)), "cuda.release", Status::warn, {ends_at(h)}},
      {"the next major", cuda(next_major(*h.newest)), "cuda.release", Status::warn, {ends_at(h)}},
      // Issue 25, rule 1: a patch past the newest known update of a known minor may have shipped since.
      {"inside the range, a patch past the newest update of its minor",
       cuda(Version({12, 4, 9})),
       "cuda.release",
       Status::warn,
       {"gpuenv's data ends at CUDA 12.4 updates, newest " + h124.newest->str(), "12.4.9 is newer",
        "add the row to a data overlay"}},
      {"inside the range, a minor that never existed",
       cuda(Version({12, 7, 0})),
       "cuda.release",
       Status::fail,
       {"is not a CUDA release; the nearest are"}},
      {"inside the range, below the newest update of its minor",
       cuda(Version({11, 0, 0})),
       "cuda.release",
       Status::fail,
       {"is not a CUDA release; the nearest are"}},
      {"a driver for the next major: no requirement known, past the horizon",
       profile([&h](Profile& p) {
         p.cuda_version = next_major(*h.newest).str();
         p.driver_min = "999.1.1";
       }),
       "driver.cuda_minimum",
       Status::warn,
       {ends_at(h)}},
  });
}

TEST_CASE("horizon: a profile past every horizon warns and never fails", "[compat][horizon]") {
  const Version cuda = next_patch(*gpuenv::compat::cuda_horizon(kb()).newest);
  const Profile p = profile([&cuda](Profile& q) { q.cuda_version = cuda.str(); });
  const auto findings = gpuenv::compat::check_profile(p, kb());
  CHECK(gpuenv::report::count_status(findings, Status::fail) == 0);
  CHECK(gpuenv::report::count_status(findings, Status::warn) >= 1);
}

TEST_CASE("horizon: nvidia/cuda image tags on both sides", "[compat][horizon]") {
  const Horizon h = gpuenv::compat::image_horizon(kb());
  check_rows({
      {"past the newest image",
       profile([&h](Profile& p) { p.cuda_version = next_major(*h.newest).str(); }),
       "image.tag",
       Status::warn,
       {ends_at(h)}},
      {"inside the range, a patch past the newest image of its minor",
       profile([](Profile& p) { p.cuda_version = "12.4.9"; }),
       "image.tag",
       Status::warn,
       {"gpuenv's data ends at nvidia/cuda images of CUDA 12.4, newest 12.4.1", "whether NVIDIA published it"}},
      {"inside the range, a minor never published",
       profile([](Profile& p) { p.cuda_version = "12.7.0"; }),
       "image.tag",
       Status::fail,
       {"nvidia/cuda has no images for CUDA 12.7.0"}},
  });
}

TEST_CASE("horizon: cuDNN on both sides", "[compat][horizon]") {
  const Horizon h = gpuenv::compat::cudnn_horizon(kb());
  const auto cudnn = [](const std::string& v) { return profile([&v](Profile& p) { p.cudnn_version = v; }); };
  check_rows({
      {"a cuDNN major past the newest",
       cudnn(std::to_string(h.newest->major() + 1)),
       "cudnn.cuda_major",
       Status::warn,
       {"gpuenv's data ends at cuDNN " + h.newest->str()}},
      {"a cuDNN minor past the newest",
       cudnn(next_minor(*h.newest).truncated(2).str()),
       "cudnn.cuda_major",
       Status::warn,
       {ends_at(h)}},
      {"inside the range, unknown", cudnn("8.99"), "cudnn.cuda_major", Status::warn, {"is not in the knowledge base"}},
  });
}

TEST_CASE("horizon: PyTorch releases and wheel variants on both sides", "[compat][horizon]") {
  const Horizon h = gpuenv::compat::torch_horizon(kb());
  const Horizon variants = gpuenv::compat::torch_variant_horizon(kb());
  const Version newer_cuda = next_minor(*variants.newest);
  const std::string newer_variant = "cu" + std::to_string(newer_cuda.major()) + std::to_string(newer_cuda.minor());
  check_rows({
      {"the next torch minor",
       pytorch(next_minor(*h.newest).str()),
       "pytorch.release",
       Status::warn,
       {"gpuenv's data ends at torch " + h.newest->str()}},
      // Issue 25, rule 1 for PyTorch: a patch past the newest known patch of a known minor may have shipped since
      // (torch 2.11.1 when the data ends at 2.11.0); a minor that never existed inside the range (1.14: 1.13 was
      // followed by 2.0) is a typo.
      {"inside the range, not a release",
       pytorch("1.14.0"),
       "pytorch.release",
       Status::fail,
       {"not a PyTorch release"}},
      {"a patch past the newest known one of its minor",
       pytorch("2.4.9"),
       "pytorch.release",
       Status::warn,
       {"gpuenv's data ends at torch 2.4 releases, newest 2.4.1", "2.4.9 is newer"}},
      {"that patch's variants are its minor's",
       pytorch("2.4.9", "cu101"),
       "pytorch.variant",
       Status::fail,
       {"has no cu101 wheel (variants: cu118, cu121, cu124)"}},
      // Issue 25, rule 5: a release the data knows is judged by its own, complete variant list; the horizon is for
      // releases newer than the data.
      {"a known release's variant for a CUDA past every known variant",
       pytorch("2.4.1", newer_variant),
       "pytorch.variant",
       Status::fail,
       {"torch 2.4.1 has no " + newer_variant + " wheel (variants: cu118, cu121, cu124)"}},
      {"an old variant the release never had",
       pytorch("2.4.1", "cu101"),
       "pytorch.variant",
       Status::fail,
       {"has no cu101 wheel"}},
  });
}

TEST_CASE("horizon: TensorFlow releases on both sides", "[compat][horizon]") {
  const Horizon h = gpuenv::compat::tensorflow_horizon(kb());
  check_rows({
      {"the next TensorFlow minor",
       tensorflow(next_minor(*h.newest).truncated(2).str()),
       "tensorflow.release",
       Status::warn,
       {ends_at(h)}},
      {"inside the range, unknown",
       tensorflow("1.99"),
       "tensorflow.release",
       Status::fail,
       {"not in TensorFlow's tested build configurations"}},
  });
}

TEST_CASE("horizon: compute capabilities and GPU models on both sides", "[compat][horizon]") {
  const Horizon h = gpuenv::compat::compute_capability_horizon(kb());
  const std::string newer = std::to_string(h.newest->major() + 1) + ".0";
  const auto cc = [](const std::string& v) { return profile([&v](Profile& p) { p.gpu_compute_capabilities = {v}; }); };
  const auto model = [](const std::string& v) { return profile([&v](Profile& p) { p.gpu_models = {v}; }); };
  check_rows({
      {"a compute capability past the newest", cc(newer), "gpu.cuda_support", Status::warn, {ends_at(h)}},
      {"inside the range, no such architecture",
       cc("9.9"),
       "gpu.cuda_support",
       Status::fail,
       {"not a known NVIDIA architecture"}},
      {"an NVIDIA name the table does not know, no near miss",
       model("NVIDIA Zeta 9000"),
       "gpu.model",
       Status::warn,
       {"may be newer than gpuenv's data", "data as of"}},
      {"a near miss of a known model stays a typo", model("H100X"), "gpu.model", Status::fail, {"did you mean"}},
      {"not an NVIDIA name", model("Instinct MI300X"), "gpu.model", Status::fail, {"not in the knowledge base"}},
  });
}

TEST_CASE("overlay: rows added and replaced in the knowledge base, and said so in findings", "[compat][overlay]") {
  const Version newer = next_patch(*gpuenv::compat::cuda_horizon(kb()).newest);
  const gpuenv::util::Overlay overlay = {
      {"cuda.toml", "/etc/gpuenv/data.d/cuda.toml",
       "# a release gpuenv does not know yet\n[[release]]\nversion = \"" + newer.str() +
           "\"\ndriver_min = \"600.1.2\"\nstatus = \"verified\"\nsource = \"https://docs.nvidia.com/cuda/"
           "cuda-toolkit-release-notes/\"\n\n[[release]]\nversion = \"12.4.1\"\ndriver_min = \"551.0.0\"\n"
           "status = \"verified\"\nsource = \"a corrected row\"\n"}};
  auto merged = gpuenv::compat::load_knowledge_base(overlay);
  REQUIRE(merged);
  CHECK(merged->cuda_releases.size() == kb().cuda_releases.size() + 1);
  CHECK(*gpuenv::compat::cuda_horizon(*merged).newest == newer);
  REQUIRE(merged->cuda_release(Version({12, 4, 1})) != nullptr);
  CHECK(merged->cuda_release(Version({12, 4, 1}))->driver_min->str() == "551.0.0");

  const Profile p = profile([&newer](Profile& q) { q.cuda_version = newer.str(); });
  const auto findings = gpuenv::compat::check_profile(p, *merged);
  const auto release =
      std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.id == "cuda.release"; });
  REQUIRE(release != findings.end());
  CHECK(release->status == Status::pass);
  CHECK_THAT(release->source, Catch::Contains("(from overlay /etc/gpuenv/data.d/cuda.toml:2)"));
}

TEST_CASE("overlay: a cuDNN [[arch_drop]] row replaces the built-in one by its cudnn key", "[compat][overlay]") {
  const gpuenv::util::Overlay overlay = {
      {"cudnn.toml", "/d/cudnn.toml",
       "[[arch_drop]]\ncudnn = \"9.11.0\"\ncompute_capability_below = \"8.0\"\nname = \"Turing\"\n"
       "status = \"unverified\"\nsource = \"a test\"\n"}};
  auto merged = gpuenv::compat::load_knowledge_base(overlay);
  REQUIRE(merged);
  REQUIRE(merged->cudnn_arch_drops.size() == kb().cudnn_arch_drops.size());
  const Profile turing = profile([](Profile& p) {
    p.cuda_version = "12.9.1";
    p.cudnn_version = "9.22";
    p.gpu_compute_capabilities = {"7.5"};
  });
  const auto fails_on_turing = [&turing](const KnowledgeBase& data) {
    const auto findings = gpuenv::compat::check_profile(turing, data);
    return std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
      return f.id == "cudnn.compute_capability" && f.status == Status::fail &&
             f.message.find("dropped Turing") != std::string::npos &&
             f.source.find("(from overlay /d/cudnn.toml:1)") != std::string::npos;
    });
  };
  CHECK(fails_on_turing(*merged));
  CHECK_FALSE(fails_on_turing(kb()));
}

// An overlay row for a newer update of an image release makes the earlier tag end-of-life under NVIDIA's policy; the
// warning cites that row, so it says it came from the overlay.
TEST_CASE("overlay: a newer image update in an overlay supersedes the built-in one, and the warning says so",
          "[compat][overlay]") {
  // The newest image that is also the newest CUDA release of its minor: nothing supersedes it before the overlay.
  Version newest;
  for (const auto& image : kb().images) {
    const bool superseded = std::any_of(kb().cuda_releases.begin(), kb().cuda_releases.end(), [&](const auto& r) {
      return r.version.truncated(2) == image.cuda.truncated(2) && r.version > image.cuda;
    });
    const bool on_ubuntu2404 = std::find(image.os.begin(), image.os.end(), "ubuntu24.04") != image.os.end();
    if (!superseded && on_ubuntu2404 && image.cuda > newest) newest = image.cuda;
  }
  REQUIRE(newest.major() >= 13);
  const Version update = next_patch(newest);
  const gpuenv::util::Overlay overlay = {
      {"images.toml", "/etc/gpuenv/data.d/images.toml",
       "[[image]]\ncuda = \"" + update.str() +
           "\"\nlifecycle = \"active\"\nos = [\"ubuntu24.04\"]\nos_listing = \"partial\"\nstatus = "
           "\"unverified\"\nsource = \"an overlay row\"\n"}};
  auto merged = gpuenv::compat::load_knowledge_base(overlay);
  REQUIRE(merged);
  const auto image_tag = [](const std::vector<Finding>& findings) {
    return std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.id == "image.tag"; });
  };
  const Profile p = profile([&newest](Profile& q) {
    q.cuda_version = newest.str();
    q.os_version = "24.04";
  });
  const auto before = gpuenv::compat::check_profile(p, kb());
  REQUIRE(image_tag(before) != before.end());
  CHECK(image_tag(before)->status == Status::pass);
  const auto after = gpuenv::compat::check_profile(p, *merged);
  REQUIRE(image_tag(after) != after.end());
  CHECK(image_tag(after)->status == Status::warn);
  CHECK_THAT(image_tag(after)->message, Catch::Contains("may vanish; unpatched"));
  CHECK_THAT(image_tag(after)->remedy, Catch::Contains("move cuda.version to " + update.str()));
  CHECK_THAT(image_tag(after)->source, Catch::Contains("(from overlay /etc/gpuenv/data.d/images.toml:1)"));
}

TEST_CASE("overlay: a row without `source` or with an unknown key is bad input naming file:line", "[compat][overlay]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[[gpu]]\nmodel = \"Zeta\"\ncompute_capability = \"12.0\"\nstatus = \"verified\"\n",
       "/d/gpus.toml:1: [[gpu]]: missing `source`"},
      {"\n[[gpu]]\nmodel = \"Zeta\"\ncompute_capability = \"12.0\"\nstatus = \"verified\"\nsource = \"s\"\ncc = 1\n",
       "/d/gpus.toml:2: [[gpu]]: unexpected key `cc`"},
  };
  for (const auto& [text, excerpt] : cases) {
    auto merged = gpuenv::compat::load_knowledge_base({{"gpus.toml", "/d/gpus.toml", text}});
    REQUIRE_FALSE(merged);
    CHECK(merged.error().kind == gpuenv::util::ErrorKind::input);
    CHECK_THAT(merged.error().message, Catch::Contains(excerpt));
  }
}

// Issue 25 rule 6, the half no shipped row exercises now: a CUDA release row alone (its images not in the data yet)
// makes the images of the update it supersedes end-of-life; `images = false` on it (NVIDIA shipped the toolkit but no
// images, as 13.2.2) keeps them supported.
TEST_CASE("overlay: a release row alone supersedes the images of its minor, unless it has no images",
          "[compat][overlay][issue25]") {
  const auto image_tag_of = [](const KnowledgeBase& data) {
    const Profile p = profile([](Profile& q) { q.cuda_version = "13.3.1"; });
    const auto findings = gpuenv::compat::check_profile(p, data);
    const auto tag =
        std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.id == "image.tag"; });
    REQUIRE(tag != findings.end());
    return *tag;
  };
  CHECK(image_tag_of(kb()).status == Status::pass);
  const std::string release = "[[release]]\nversion = \"13.3.2\"\nstatus = \"unverified\"\nsource = \"a test\"\n";
  auto superseded = gpuenv::compat::load_knowledge_base({{"cuda.toml", "/d/cuda.toml", release}});
  REQUIRE(superseded);
  const Finding eol = image_tag_of(*superseded);
  CHECK(eol.status == Status::warn);
  CHECK_THAT(eol.message, Catch::Contains("superseded by 13.3.2") &&
                              Catch::Contains("the CUDA 13.3.2 images are not in gpuenv's data yet"));
  auto imageless = gpuenv::compat::load_knowledge_base(
      {{"cuda.toml", "/d/cuda.toml", release + "images = false\nimages_source = \"a test\"\n"}});
  REQUIRE(imageless);
  CHECK(image_tag_of(*imageless).status == Status::pass);
}

TEST_CASE("overlay: images = false needs images_source, and images_source needs images = false", "[compat][overlay]") {
  const std::string head = "[[release]]\nversion = \"13.3.2\"\nstatus = \"unverified\"\nsource = \"a test\"\n";
  const auto bad = gpuenv::compat::load_knowledge_base({{"cuda.toml", "/d/cuda.toml", head + "images = false\n"}});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("`images = false` needs `images_source`"));
  const auto stray =
      gpuenv::compat::load_knowledge_base({{"cuda.toml", "/d/cuda.toml", head + "images_source = \"x\"\n"}});
  REQUIRE_FALSE(stray);
  CHECK_THAT(stray.error().message, Catch::Contains("`images_source` comes with `images = false`"));
}
