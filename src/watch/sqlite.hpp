#pragma once
// The node's SQLite (libsqlite3.so.0) opened with dlopen through System, as the NVIDIA libraries are: gpuenv links
// nothing but glibc, and the database engine stays the one the distribution patches. A small symbol table of the
// stable C API (https://www.sqlite.org/c3ref/funclist.html), typed from sqlite3.h at build time.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::watch::sqlite {

/// The soname gpuenv opens.
inline constexpr const char* k_library = "libsqlite3.so.0";
/// The oldest SQLite gpuenv accepts: 3.22.0 (2018-01, Ubuntu 18.04; RHEL 8 has 3.26). WITHOUT ROWID tables need
/// 3.8.2 and WAL 3.7.0 (https://www.sqlite.org/changes.html).
inline constexpr int k_minimum_version = 3022000;

struct Api;

/// libsqlite3 and its resolved entry points; shared by every database opened from it.
class Library {
 public:
  /// Loads `name` through `system`; an input Error when it is missing, lacks an entry point or is older than
  /// k_minimum_version.
  static util::Expected<std::shared_ptr<const Library>> load(system::System& system,
                                                             const std::string& name = k_library);
  ~Library();
  /// "3.40.1".
  std::string version() const;
  const Api& api() const { return *m_api; }

 private:
  Library() = default;
  std::unique_ptr<system::DynamicLibrary> m_library;
  std::unique_ptr<Api> m_api;
};

/// SQLite's primary result codes gpuenv tells apart (sqlite3.h).
enum class Code { ok, busy, corrupt, not_a_database, other };

class Database;

/// A prepared statement, bindings numbered from 1. Errors are recorded on its database (Database::last_code).
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  void bind(int index, std::int64_t value);
  void bind(int index, double value);
  void bind(int index, std::string_view value);
  void bind_null(int index);
  template <typename T>
  void bind(int index, const std::optional<T>& value) {
    if (!value) return bind_null(index);
    if constexpr (std::is_floating_point_v<T>) {
      bind(index, static_cast<double>(*value));
    } else {
      bind(index, static_cast<std::int64_t>(*value));
    }
  }
  /// Advances: true with a row to read, false when done.
  util::Expected<bool> step();
  /// Runs a statement that returns no rows (INSERT, UPDATE, DELETE), then resets it for the next run.
  util::Expected<util::Ok> run();
  /// Makes the statement ready to run again (bindings kept).
  void reset();

  bool is_null(int column) const;
  std::int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::optional<std::int64_t> optional_integer(int column) const;
  std::optional<double> optional_real(int column) const;

 private:
  friend class Database;
  Statement(Database& database, void* statement) : m_database(&database), m_statement(statement) {}
  Database* m_database;
  void* m_statement;
};

/// One open database (a connection); closed on destruction.
class Database {
 public:
  enum class Mode { read_write_create, read_only };
  /// Opens `path`. SQLite opens any file without reading it: a foreign or corrupt file fails at the first
  /// statement, with last_code() Code::not_a_database or Code::corrupt.
  static util::Expected<std::unique_ptr<Database>> open(std::shared_ptr<const Library> library, const std::string& path,
                                                        Mode mode);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  /// Runs one or more statements that return no rows.
  util::Expected<util::Ok> exec(const std::string& sql);
  /// Compiles one statement.
  util::Expected<Statement> prepare(const std::string& sql);
  /// The first column of the first row of `sql` as text ("" with no row).
  util::Expected<std::string> query_text(const std::string& sql);
  /// The first column of the first row of `sql` as an integer (0 with no row).
  util::Expected<std::int64_t> query_integer(const std::string& sql);
  /// The primary result code of the last call that failed on this connection (Code::ok when none has).
  Code last_code() const { return m_last_code; }
  const Api& api() const { return m_library->api(); }
  const std::string& path() const { return m_path; }

 private:
  friend class Statement;
  Database(std::shared_ptr<const Library> library, void* handle, std::string path)
      : m_library(std::move(library)), m_handle(handle), m_path(std::move(path)) {}
  /// Records a failed call's code and returns an input Error with SQLite's message and `what`.
  util::Error failure(int code, const std::string& what);
  std::shared_ptr<const Library> m_library;
  void* m_handle;
  std::string m_path;
  Code m_last_code = Code::ok;
};

/// A transaction: BEGIN IMMEDIATE at construction, ROLLBACK unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Database& database);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  /// Whether BEGIN succeeded.
  const util::Expected<util::Ok>& begun() const { return m_begun; }
  util::Expected<util::Ok> commit();

 private:
  Database& m_database;
  util::Expected<util::Ok> m_begun;
  bool m_done = false;
};

}  // namespace gpuenv::watch::sqlite
