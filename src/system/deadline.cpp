#include "system/deadline.hpp"

#include <algorithm>

namespace gpuenv::system {

DeadlineSystem::DeadlineSystem(System& inner, std::chrono::steady_clock::time_point deadline)
    : m_inner(inner), m_deadline(deadline) {}

std::chrono::milliseconds DeadlineSystem::time_left() {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(m_deadline - m_inner.now());
  return std::max(left, std::chrono::milliseconds(0));
}

std::chrono::milliseconds DeadlineSystem::limit(std::chrono::milliseconds wanted) {
  return std::min(wanted, time_left());
}

void DeadlineSystem::note_cut_short(const std::string& what) {
  if (std::find(m_cut_short.begin(), m_cut_short.end(), what) == m_cut_short.end()) m_cut_short.push_back(what);
}

CommandResult DeadlineSystem::run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  const std::chrono::milliseconds left = time_left();
  if (left <= std::chrono::milliseconds(0)) {
    note_cut_short(command_text(argv));
    CommandResult skipped;
    skipped.timed_out = true;
    skipped.err = "not started: the deadline had passed";
    return skipped;
  }
  CommandResult result = m_inner.run(argv, std::min(timeout, left));
  if (result.timed_out && left < timeout) note_cut_short(command_text(argv));
  return result;
}

util::Expected<HttpResponse> DeadlineSystem::http_request(const HttpRequest& request,
                                                          std::chrono::milliseconds timeout) {
  const std::chrono::milliseconds left = time_left();
  const std::string what = request.method + " http://" + request.host + request.path;
  if (left <= std::chrono::milliseconds(0)) {
    note_cut_short(what);
    return util::Error::input("not sent to " + request.host + ": the deadline had passed");
  }
  auto answer = m_inner.http_request(request, std::min(timeout, left));
  if (!answer && left < timeout && time_left() <= std::chrono::milliseconds(0)) note_cut_short(what);
  return answer;
}

std::string command_text(const std::vector<std::string>& argv) {
  constexpr std::size_t k_longest_argument = 40;
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) text += ' ';
    text += arg.size() > k_longest_argument || arg.find('\n') != std::string::npos ? std::string("...") : arg;
  }
  return text;
}

}  // namespace gpuenv::system
