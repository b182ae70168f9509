#include "watch/sqlite.hpp"

#include <sqlite3.h>

#include <cstdint>
#include <utility>

#include "system/symbols.hpp"

namespace gpuenv::watch::sqlite {

// The entry points gpuenv calls, typed by sqlite3.h (so a signature mismatch fails the build) and resolved at run time.
struct Api {
  decltype(&::sqlite3_libversion_number) libversion_number = nullptr;
  decltype(&::sqlite3_libversion) libversion = nullptr;
  decltype(&::sqlite3_open_v2) open_v2 = nullptr;
  decltype(&::sqlite3_close_v2) close_v2 = nullptr;
  decltype(&::sqlite3_errmsg) errmsg = nullptr;
  decltype(&::sqlite3_errstr) errstr = nullptr;
  decltype(&::sqlite3_exec) exec = nullptr;
  decltype(&::sqlite3_busy_timeout) busy_timeout = nullptr;
  decltype(&::sqlite3_prepare_v2) prepare_v2 = nullptr;
  decltype(&::sqlite3_step) step = nullptr;
  decltype(&::sqlite3_reset) reset = nullptr;
  decltype(&::sqlite3_finalize) finalize = nullptr;
  decltype(&::sqlite3_bind_int64) bind_int64 = nullptr;
  decltype(&::sqlite3_bind_double) bind_double = nullptr;
  decltype(&::sqlite3_bind_text) bind_text = nullptr;
  decltype(&::sqlite3_bind_null) bind_null = nullptr;
  decltype(&::sqlite3_column_type) column_type = nullptr;
  decltype(&::sqlite3_column_int64) column_int64 = nullptr;
  decltype(&::sqlite3_column_double) column_double = nullptr;
  decltype(&::sqlite3_column_text) column_text = nullptr;
  decltype(&::sqlite3_column_bytes) column_bytes = nullptr;
};

namespace {

sqlite3* handle_of(void* handle) { return static_cast<sqlite3*>(handle); }
sqlite3_stmt* statement_of(void* statement) { return static_cast<sqlite3_stmt*>(statement); }

Code code_of(int code) {
  switch (code & 0xff) {  // the primary code of an extended one
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
      return Code::ok;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Code::busy;
    case SQLITE_CORRUPT:
      return Code::corrupt;
    case SQLITE_NOTADB:
      return Code::not_a_database;
    default:
      return Code::other;
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------------ library

util::Expected<std::shared_ptr<const Library>> Library::load(system::System& system, const std::string& name) {
  auto loaded = system.load_library(name);
  if (!loaded) {
    return util::Error::input("cannot load SQLite (" + name + "): " + loaded.error().message,
                              "install the distribution's SQLite library (Debian/Ubuntu: libsqlite3-0; RHEL: "
                              "sqlite-libs), or run without a history (--db none)");
  }
  std::shared_ptr<Library> library(new Library());
  library->m_library = std::move(*loaded);
  library->m_api = std::make_unique<Api>();
  Api& api = *library->m_api;
  system::DynamicLibrary& lib = *library->m_library;
  system::SymbolBinder binder(lib);
  binder.require(api.libversion_number, "sqlite3_libversion_number");
  binder.require(api.libversion, "sqlite3_libversion");
  binder.require(api.open_v2, "sqlite3_open_v2");
  binder.require(api.close_v2, "sqlite3_close_v2");
  binder.require(api.errmsg, "sqlite3_errmsg");
  binder.require(api.errstr, "sqlite3_errstr");
  binder.require(api.exec, "sqlite3_exec");
  binder.require(api.busy_timeout, "sqlite3_busy_timeout");
  binder.require(api.prepare_v2, "sqlite3_prepare_v2");
  binder.require(api.step, "sqlite3_step");
  binder.require(api.reset, "sqlite3_reset");
  binder.require(api.finalize, "sqlite3_finalize");
  binder.require(api.bind_int64, "sqlite3_bind_int64");
  binder.require(api.bind_double, "sqlite3_bind_double");
  binder.require(api.bind_text, "sqlite3_bind_text");
  binder.require(api.bind_null, "sqlite3_bind_null");
  binder.require(api.column_type, "sqlite3_column_type");
  binder.require(api.column_int64, "sqlite3_column_int64");
  binder.require(api.column_double, "sqlite3_column_double");
  binder.require(api.column_text, "sqlite3_column_text");
  binder.require(api.column_bytes, "sqlite3_column_bytes");
  if (!binder.missing().empty())
    return util::Error::input(name + " does not export " + binder.missing().front() + " (not SQLite 3?)");
  if (api.libversion_number() < k_minimum_version) {
    return util::Error::input("SQLite " + library->version() + " is older than 3.22.0, the oldest gpuenv watch uses",
                              "update the distribution's SQLite library, or run without a history (--db none)");
  }
  return std::shared_ptr<const Library>(std::move(library));
}

Library::~Library() = default;

std::string Library::version() const { return m_api->libversion(); }

// ------------------------------------------------------------------------------------------------ database

util::Expected<std::unique_ptr<Database>> Database::open(std::shared_ptr<const Library> library,
                                                         const std::string& path, Mode mode) {
  const Api& api = library->api();
  sqlite3* handle = nullptr;
  // NOMUTEX: one connection per thread (the serialized mode's locks are not needed); no URI filenames.
  const int flags = (mode == Mode::read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                    SQLITE_OPEN_NOMUTEX;
  const int code = api.open_v2(path.c_str(), &handle, flags, nullptr);
  if (code != SQLITE_OK) {
    std::string message = handle != nullptr ? api.errmsg(handle) : api.errstr(code);
    if (handle != nullptr) api.close_v2(handle);
    return util::Error::input("cannot open the database " + path + ": " + message);
  }
  // A writer holding the lock (the daemon's checkpoint, `gpuenv events` beside it) is waited for, not failed.
  api.busy_timeout(handle, 5000);
  return std::unique_ptr<Database>(new Database(std::move(library), handle, path));
}

Database::~Database() { api().close_v2(handle_of(m_handle)); }

util::Error Database::failure(int code, const std::string& what) {
  m_last_code = code_of(code);
  return util::Error::input(m_path + ": " + what + ": " + api().errmsg(handle_of(m_handle)));
}

util::Expected<util::Ok> Database::exec(const std::string& sql) {
  // No error-message argument: sqlite3_errmsg gives the same text without a copy to free.
  const int code = api().exec(handle_of(m_handle), sql.c_str(), nullptr, nullptr, nullptr);
  if (code != SQLITE_OK) return failure(code, "cannot run \"" + sql.substr(0, 60) + "\"");
  return util::Ok{};
}

util::Expected<Statement> Database::prepare(const std::string& sql) {
  sqlite3_stmt* statement = nullptr;
  const int code =
      api().prepare_v2(handle_of(m_handle), sql.c_str(), static_cast<int>(sql.size()), &statement, nullptr);
  if (code != SQLITE_OK) return failure(code, "cannot prepare \"" + sql.substr(0, 60) + "\"");
  return Statement(*this, statement);
}

util::Expected<std::string> Database::query_text(const std::string& sql) {
  GPUENV_TRY_ASSIGN(auto statement, prepare(sql));
  GPUENV_TRY_ASSIGN(auto row, statement.step());
  return row ? statement.text(0) : std::string();
}

util::Expected<std::int64_t> Database::query_integer(const std::string& sql) {
  GPUENV_TRY_ASSIGN(auto statement, prepare(sql));
  GPUENV_TRY_ASSIGN(auto row, statement.step());
  return row ? statement.integer(0) : 0;
}

// ------------------------------------------------------------------------------------------------ statement

Statement::Statement(Statement&& other) noexcept
    : m_database(other.m_database), m_statement(std::exchange(other.m_statement, nullptr)) {}

Statement::~Statement() {
  if (m_statement != nullptr) m_database->api().finalize(statement_of(m_statement));
}

void Statement::bind(int index, std::int64_t value) {
  m_database->api().bind_int64(statement_of(m_statement), index, value);
}
void Statement::bind(int index, double value) {
  m_database->api().bind_double(statement_of(m_statement), index, value);
}
void Statement::bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT (sqlite3.h: ((sqlite3_destructor_type)-1)): SQLite copies the text before bind returns.
  const auto transient = reinterpret_cast<sqlite3_destructor_type>(static_cast<std::intptr_t>(-1));
  m_database->api().bind_text(statement_of(m_statement), index, value.data(), static_cast<int>(value.size()),
                              transient);
}
void Statement::bind_null(int index) { m_database->api().bind_null(statement_of(m_statement), index); }

util::Expected<bool> Statement::step() {
  const int code = m_database->api().step(statement_of(m_statement));
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  return m_database->failure(code, "a statement failed");
}

util::Expected<util::Ok> Statement::run() {
  auto done = step();
  reset();
  GPUENV_TRY(done);
  return util::Ok{};
}

void Statement::reset() { m_database->api().reset(statement_of(m_statement)); }

bool Statement::is_null(int column) const {
  return m_database->api().column_type(statement_of(m_statement), column) == SQLITE_NULL;
}
std::int64_t Statement::integer(int column) const {
  return m_database->api().column_int64(statement_of(m_statement), column);
}
double Statement::real(int column) const { return m_database->api().column_double(statement_of(m_statement), column); }
std::string Statement::text(int column) const {
  const unsigned char* text = m_database->api().column_text(statement_of(m_statement), column);
  if (text == nullptr) return {};
  const int bytes = m_database->api().column_bytes(statement_of(m_statement), column);
  return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(bytes));
}
std::optional<std::int64_t> Statement::optional_integer(int column) const {
  if (is_null(column)) return std::nullopt;
  return integer(column);
}
std::optional<double> Statement::optional_real(int column) const {
  if (is_null(column)) return std::nullopt;
  return real(column);
}

// ------------------------------------------------------------------------------------------------ transaction

Transaction::Transaction(Database& database) : m_database(database), m_begun(database.exec("BEGIN IMMEDIATE")) {}

Transaction::~Transaction() {
  if (m_begun && !m_done) (void)m_database.exec("ROLLBACK");
}

util::Expected<util::Ok> Transaction::commit() {
  GPUENV_TRY(m_begun);
  auto committed = m_database.exec("COMMIT");
  m_done = static_cast<bool>(committed);
  return committed;
}

}  // namespace gpuenv::watch::sqlite
