// The owners of CUDA handles (smoke/internal/cuda_handles.hpp): each destroys its handle once, through the entry point
// it was made with; a moved-from or leaked owner destroys nothing.

#include <catch2/catch.hpp>
#include <vector>

#include "smoke/internal/cuda_handles.hpp"

namespace {

std::vector<gpuenv::smoke::CUevent>& destroyed_events() {
  static std::vector<gpuenv::smoke::CUevent> events;
  return events;
}

gpuenv::smoke::CUresult record_event_destroy(gpuenv::smoke::CUevent event) {
  destroyed_events().push_back(event);
  return gpuenv::smoke::cuda_success;
}

gpuenv::smoke::CUresult make_event(gpuenv::smoke::CUevent* event, unsigned flags) {
  static int storage[4];
  *event = reinterpret_cast<gpuenv::smoke::CUevent>(&storage[flags]);
  if (flags == 3) return 1;  // CUDA_ERROR_INVALID_VALUE
  return gpuenv::smoke::cuda_success;
}

}  // namespace

TEST_CASE("smoke: a CUDA handle's owner destroys it once, through the entry point it was made with", "[smoke]") {
  using gpuenv::smoke::CudaEvent;
  destroyed_events().clear();
  gpuenv::smoke::CudaApi api;
  api.event_create = make_event;
  api.event_destroy = record_event_destroy;

  CudaEvent first;
  CHECK(!first);
  REQUIRE(gpuenv::smoke::create_event(api, 0, first) == gpuenv::smoke::cuda_success);
  REQUIRE(first);
  const gpuenv::smoke::CUevent handle = first.get();
  {
    CudaEvent moved = std::move(first);
    CHECK(!first);  // NOLINT(bugprone-use-after-move): a moved-from owner is empty
    CHECK(moved.get() == handle);
  }
  CHECK(destroyed_events() == std::vector<gpuenv::smoke::CUevent>{handle});

  // A failed creation leaves the owner as it was; reset destroys now; a leaked handle is never destroyed.
  CudaEvent second;
  CHECK(gpuenv::smoke::create_event(api, 3, second) != gpuenv::smoke::cuda_success);
  CHECK(!second);
  REQUIRE(gpuenv::smoke::create_event(api, 1, second) == gpuenv::smoke::cuda_success);
  const gpuenv::smoke::CUevent second_handle = second.get();
  second.reset();
  CHECK(!second);
  CHECK(destroyed_events() == std::vector<gpuenv::smoke::CUevent>{handle, second_handle});
  {
    CudaEvent third;
    REQUIRE(gpuenv::smoke::create_event(api, 2, third) == gpuenv::smoke::cuda_success);
    third.leak();
  }
  CHECK(destroyed_events().size() == 2);
}
