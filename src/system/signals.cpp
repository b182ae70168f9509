#include "system/signals.hpp"

#include <signal.h>

#include <cerrno>
#include <ctime>

namespace gpuenv::system {
namespace {

class SignalWakeups final : public Wakeups {
 public:
  SignalWakeups() {
    sigemptyset(&m_set);
    sigaddset(&m_set, SIGTERM);
    sigaddset(&m_set, SIGINT);
    sigaddset(&m_set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &m_set, nullptr);
  }

  Reason wait_until(std::chrono::steady_clock::time_point when) override {
    for (;;) {
      const auto left = when - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) return Reason::time;
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      const timespec timeout{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
      const int signal = ::sigtimedwait(&m_set, nullptr, &timeout);
      if (signal == SIGHUP) return Reason::reload;
      if (signal == SIGTERM || signal == SIGINT) return Reason::stop;
      if (signal < 0 && errno == EAGAIN) return Reason::time;
      // EINTR (another signal's handler ran): wait again for what is left.
    }
  }

 private:
  sigset_t m_set{};
};

}  // namespace

std::unique_ptr<Wakeups> make_signal_wakeups() { return std::make_unique<SignalWakeups>(); }

}  // namespace gpuenv::system
