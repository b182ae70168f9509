#pragma once
// Errors are values: every fallible function returns Expected<T>; only cli maps an Error to an exit code.

#include <string>
#include <utility>
#include <variant>

namespace gpuenv::util {

/// What kind of failure an Error is; cli maps each kind to one exit code.
enum class ErrorKind {
  usage,     ///< the command line is wrong (exit 2)
  input,     ///< a user-supplied file or value is unreadable or malformed (exit 2)
  internal,  ///< a bug or an unexpected system failure (exit 3)
};

/// A failure with a message that names what went wrong and, where known, how to fix it.
struct Error {
  ErrorKind kind = ErrorKind::internal;
  std::string message;
  std::string remedy;  ///< may be empty

  static Error usage(std::string message, std::string remedy = {}) {
    return {ErrorKind::usage, std::move(message), std::move(remedy)};
  }
  static Error input(std::string message, std::string remedy = {}) {
    return {ErrorKind::input, std::move(message), std::move(remedy)};
  }
  static Error internal(std::string message) { return {ErrorKind::internal, std::move(message), {}}; }
};

/// Either a T or an Error; a small stand-in for std::expected (C++23).
template <typename T>
class [[nodiscard]] Expected {
 public:
  using value_type = T;

  Expected(T value) : m_state(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit by design
  Expected(Error error) : m_state(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit by design

  bool has_value() const { return m_state.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(m_state); }
  const T& value() const& { return std::get<0>(m_state); }
  T&& value() && { return std::get<0>(std::move(m_state)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(m_state); }
  Error&& take_error() && { return std::get<1>(std::move(m_state)); }

 private:
  std::variant<T, Error> m_state;
};

/// Success without a value.
struct Ok {};

}  // namespace gpuenv::util

#define GPUENV_EXPECTED_CONCAT_INNER_(a, b) a##b
#define GPUENV_EXPECTED_CONCAT_(a, b) GPUENV_EXPECTED_CONCAT_INNER_(a, b)

/// GPUENV_TRY(expr): evaluates the Expected `expr` once; when it holds an Error, returns that Error from the enclosing
/// function (whose return type must be constructible from util::Error).
#define GPUENV_TRY(...)                                                 \
  do {                                                                  \
    if (auto&& gpuenv_try_result_ = (__VA_ARGS__); !gpuenv_try_result_) \
      return ::gpuenv::util::Error(gpuenv_try_result_.error());         \
  } while (false)

/// GPUENV_TRY_ASSIGN(declaration, expr): evaluates the Expected `expr` once; returns its Error from the enclosing
/// function when it failed, else declares `declaration` (e.g. `auto profile`) initialised with the moved value.
#define GPUENV_TRY_ASSIGN(declaration, ...) \
  GPUENV_TRY_ASSIGN_IMPL_(GPUENV_EXPECTED_CONCAT_(gpuenv_try_assign_, __COUNTER__), declaration, __VA_ARGS__)
#define GPUENV_TRY_ASSIGN_IMPL_(temporary, declaration, ...)                       \
  auto temporary = (__VA_ARGS__);                                                  \
  if (!temporary) return ::gpuenv::util::Error(std::move(temporary).take_error()); \
  declaration = std::move(temporary).value()
