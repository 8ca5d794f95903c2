#include "serve/store.h"

#include <sys/random.h>

#include <array>
#include <chrono>
#include <cstdio>

#include "core/error.h"

namespace pkb::serve {
namespace {

using json = nlohmann::json;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta VALUES('schema', 'pkb.serve/1');
CREATE TABLE IF NOT EXISTS clients(name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL UNIQUE, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, client TEXT NOT NULL, batch TEXT NOT NULL,
  idempotency_key TEXT, problem TEXT NOT NULL, world INTEGER NOT NULL, dtype TEXT NOT NULL, params TEXT NOT NULL,
  timing TEXT NOT NULL, priority INTEGER NOT NULL, source TEXT NOT NULL, state TEXT NOT NULL,
  created REAL NOT NULL, started REAL, finished REAL, attempts INTEGER NOT NULL DEFAULT 0, status TEXT,
  record TEXT, error TEXT, child_wall_s REAL, UNIQUE(client, idempotency_key));
CREATE INDEX IF NOT EXISTS queue ON evaluations(state, client, priority DESC, seq);
CREATE INDEX IF NOT EXISTS by_batch ON evaluations(batch);
)sql";

// Columns added since the first schema, added to a database that lacks them (ALTER TABLE ADD COLUMN).
constexpr std::array<std::array<const char*, 3>, 3> kAddedColumns = {{
    {"clients", "role", "TEXT NOT NULL DEFAULT 'client'"},  // TokenRole
    {"evaluations", "worker", "TEXT"},                      // the remote worker holding the claim
    {"evaluations", "lease_until", "REAL"},                 // its lease (seconds since the epoch)
}};

constexpr std::pair<TokenRole, const char*> kRoles[] = {{TokenRole::client, "client"}, {TokenRole::worker, "worker"}};

constexpr std::pair<EvalState, const char*> kStates[] = {
    {EvalState::queued, "queued"}, {EvalState::compiling, "compiling"}, {EvalState::running, "running"},
    {EvalState::done, "done"},     {EvalState::failed, "failed"},       {EvalState::cancelled, "cancelled"}};

// One prepared statement; binds by position (1-based), steps, reads columns. Finalized when it dies.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw Error(std::string("serve database: ") + sqlite3_errmsg(db) + " in: " + sql);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& bind_null_if_empty(int i, const std::string& v) {
    if (v.empty()) sqlite3_bind_null(s_, i);
    return v.empty() ? *this : bind(i, v);
  }
  // True while a row is there; throws on an error (SQLITE_BUSY past the busy timeout included).
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("serve database: ") + sqlite3_errmsg(db_));
  }
  std::string text(int i) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, i))) : std::string();
  }
  int64_t integer(int i) const { return sqlite3_column_int64(s_, i); }
  double real(int i) const { return sqlite3_column_double(s_, i); }
  sqlite3_stmt* get() { return s_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error("serve database: " + msg);
  }
}

// BEGIN IMMEDIATE ... COMMIT, rolled back if the scope ends without commit().
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { exec(db, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

constexpr const char* kRowColumns =
    "id, client, batch, idempotency_key, problem, world, dtype, params, timing, priority, state, created, "
    "COALESCE(started, 0), COALESCE(finished, 0), attempts, COALESCE(status, ''), COALESCE(record, ''), "
    "COALESCE(error, ''), COALESCE(child_wall_s, 0), COALESCE(worker, '')";

EvalRow read_row(const Stmt& s) {
  EvalRow r;
  r.id = s.text(0), r.client = s.text(1), r.batch = s.text(2);
  r.item.idempotency_key = s.text(3), r.item.problem = s.text(4), r.item.world = static_cast<int>(s.integer(5));
  r.item.dtype = s.text(6), r.item.params = json::parse(s.text(7)), r.item.timing = s.text(8);
  r.item.priority = static_cast<int>(s.integer(9));
  r.state = state_from_name(s.text(10)).value_or(EvalState::failed);
  r.created = s.real(11), r.started = s.real(12), r.finished = s.real(13);
  r.attempts = static_cast<int>(s.integer(14));
  r.status = s.text(15), r.record = s.text(16), r.error = s.text(17), r.child_wall_s = s.real(18);
  r.worker = s.text(19);
  return r;
}

std::optional<Accepted> existing_for_key(sqlite3* db, const std::string& client, const std::string& key) {
  if (key.empty()) return std::nullopt;
  Stmt s(db, "SELECT id, state FROM evaluations WHERE client = ? AND idempotency_key = ?");
  s.bind(1, client).bind(2, key);
  if (!s.step()) return std::nullopt;
  return Accepted{s.text(0), true, state_from_name(s.text(1)).value_or(EvalState::failed)};
}

// The first client by name after `after` with a queued evaluation of W <= max_world ("" = from the start).
std::optional<std::string> next_client(sqlite3* db, const std::string& after, int max_world) {
  Stmt s(db,
         "SELECT client FROM evaluations WHERE state = 'queued' AND client > ? AND world <= ? ORDER BY client LIMIT 1");
  s.bind(1, after).bind(2, max_world);
  if (s.step()) return s.text(0);
  return std::nullopt;
}

void add_missing_columns(sqlite3* db) {
  for (const auto& [table, column, decl] : kAddedColumns) {
    Stmt s(db, (std::string("SELECT 1 FROM pragma_table_info('") + table + "') WHERE name = ?").c_str());
    s.bind(1, std::string(column));
    if (!s.step()) exec(db, (std::string("ALTER TABLE ") + table + " ADD COLUMN " + column + " " + decl).c_str());
  }
}

}  // namespace

const char* role_name(TokenRole r) {
  for (const auto& [v, n] : kRoles)
    if (v == r) return n;
  return "?";
}

const char* state_name(EvalState s) {
  for (const auto& [v, n] : kStates)
    if (v == s) return n;
  return "?";
}

std::optional<EvalState> state_from_name(const std::string& s) {
  for (const auto& [v, n] : kStates)
    if (s == n) return v;
  return std::nullopt;
}

double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string random_id(const std::string& prefix, size_t count) {
  std::vector<unsigned char> bytes(count);
  size_t got = 0;
  while (got < count) {
    ssize_t n = getrandom(bytes.data() + got, count - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  std::string id = prefix;
  char hex[3];
  for (unsigned char b : bytes) std::snprintf(hex, sizeof hex, "%02x", b), id += hex;
  return id;
}

Store::Store(const std::filesystem::path& db_path) {
  if (sqlite3_open_v2(db_path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error("cannot open " + db_path.string() + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);
  try {
    exec(db_, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
    exec(db_, kSchema);
    add_missing_columns(db_);
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

Store::~Store() { sqlite3_close(db_); }

void Store::add_client(const std::string& name, const std::string& token_sha256, TokenRole role) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "INSERT INTO clients(name, token_sha256, created, role) VALUES(?, ?, ?, ?)");
  s.bind(1, name).bind(2, token_sha256).bind(3, epoch_seconds()).bind(4, std::string(role_name(role)));
  try {
    s.step();
  } catch (const Error&) {
    throw Error("a client named '" + name + "' exists already");
  }
}

bool Store::remove_client(const std::string& name) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "DELETE FROM clients WHERE name = ?");
  s.bind(1, name).step();
  return sqlite3_changes(db_) > 0;
}

std::vector<std::pair<std::string, TokenRole>> Store::client_names() {
  std::lock_guard lock(mu_);
  Stmt s(db_, "SELECT name, role FROM clients ORDER BY name");
  std::vector<std::pair<std::string, TokenRole>> names;
  while (s.step()) names.emplace_back(s.text(0), s.text(1) == "worker" ? TokenRole::worker : TokenRole::client);
  return names;
}

std::optional<std::string> Store::client_for_token(const std::string& token_sha256, TokenRole role) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "SELECT name FROM clients WHERE token_sha256 = ? AND role = ?");
  s.bind(1, token_sha256).bind(2, std::string(role_name(role)));
  if (s.step()) return s.text(0);
  return std::nullopt;
}

std::vector<Accepted> Store::insert(const std::string& client, const std::string& batch,
                                    const std::vector<Item>& items) {
  std::lock_guard lock(mu_);
  Transaction t(db_);
  std::vector<Accepted> out;
  const double now = epoch_seconds();
  Stmt s(db_,
         "INSERT INTO evaluations(id, client, batch, idempotency_key, problem, world, dtype, params, timing, "
         "priority, source, state, created) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?)");
  for (const Item& it : items) {
    if (auto seen = existing_for_key(db_, client, it.idempotency_key)) {
      out.push_back(*seen);
      continue;
    }
    Accepted a{random_id("ev_"), false, EvalState::queued};
    sqlite3_reset(s.get());
    s.bind(1, a.id).bind(2, client).bind(3, batch).bind_null_if_empty(4, it.idempotency_key).bind(5, it.problem);
    s.bind(6, it.world).bind(7, it.dtype).bind(8, it.params.dump()).bind(9, it.timing).bind(10, it.priority);
    s.bind(11, it.source).bind(12, now).step();
    out.push_back(a);
  }
  t.commit();
  return out;
}

int Store::queued_count(const std::string& client) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "SELECT COUNT(*) FROM evaluations WHERE client = ? AND state IN ('queued', 'compiling', 'running')");
  s.bind(1, client).step();
  return static_cast<int>(s.integer(0));
}

std::optional<EvalRow> Store::get(const std::string& client, const std::string& id) {
  std::lock_guard lock(mu_);
  Stmt s(db_, (std::string("SELECT ") + kRowColumns + " FROM evaluations WHERE id = ? AND client = ?").c_str());
  s.bind(1, id).bind(2, client);
  if (s.step()) return read_row(s);
  return std::nullopt;
}

std::vector<EvalRow> Store::batch_rows(const std::string& client, const std::string& batch) {
  std::lock_guard lock(mu_);
  Stmt s(
      db_,
      (std::string("SELECT ") + kRowColumns + " FROM evaluations WHERE batch = ? AND client = ? ORDER BY seq").c_str());
  s.bind(1, batch).bind(2, client);
  std::vector<EvalRow> rows;
  while (s.step()) rows.push_back(read_row(s));
  return rows;
}

std::vector<EvalRow> Store::rows(const std::string& client, const std::vector<std::string>& ids) {
  std::lock_guard lock(mu_);
  Stmt s(db_, (std::string("SELECT ") + kRowColumns + " FROM evaluations WHERE id = ? AND client = ?").c_str());
  std::vector<EvalRow> rows;
  for (const auto& id : ids) {
    sqlite3_reset(s.get());
    s.bind(1, id).bind(2, client);
    if (s.step()) rows.push_back(read_row(s));
  }
  return rows;
}

CancelOutcome Store::cancel(const std::string& client, const std::string& id) {
  std::lock_guard lock(mu_);
  Stmt s(db_,
         "UPDATE evaluations SET state = 'cancelled', finished = ? WHERE id = ? AND client = ? AND state IN "
         "('queued', 'compiling', 'running')");
  s.bind(1, epoch_seconds()).bind(2, id).bind(3, client).step();
  if (sqlite3_changes(db_) > 0) return CancelOutcome::cancelled;
  Stmt q(db_, "SELECT 1 FROM evaluations WHERE id = ? AND client = ?");
  q.bind(1, id).bind(2, client);
  return q.step() ? CancelOutcome::already_finished : CancelOutcome::not_found;
}

std::optional<Claim> Store::claim_next(const ClaimOptions& o) {
  std::lock_guard lock(mu_);
  Transaction t(db_);
  std::optional<std::string> client = next_client(db_, cursor_, o.max_world);
  if (!client) client = next_client(db_, "", o.max_world);
  if (!client) return std::nullopt;
  Stmt s(db_,
         "SELECT id, problem, world, dtype, params, timing, priority, source, attempts, created FROM evaluations "
         "WHERE state = 'queued' AND client = ? AND world <= ? ORDER BY priority DESC, seq LIMIT 1");
  s.bind(1, *client).bind(2, o.max_world);
  if (!s.step()) return std::nullopt;
  Claim c;
  c.id = s.text(0), c.client = *client, c.worker = o.worker;
  c.item.problem = s.text(1), c.item.world = static_cast<int>(s.integer(2)), c.item.dtype = s.text(3);
  c.item.params = json::parse(s.text(4)), c.item.timing = s.text(5), c.item.priority = static_cast<int>(s.integer(6));
  c.item.source = s.text(7), c.attempt = static_cast<int>(s.integer(8)) + 1, c.created = s.real(9);
  const double now = epoch_seconds();
  Stmt u(db_,
         "UPDATE evaluations SET state = 'compiling', started = ?, attempts = ?, worker = ?, lease_until = ? "
         "WHERE id = ?");
  u.bind(1, now).bind(2, c.attempt).bind_null_if_empty(3, o.worker);
  if (o.worker.empty())
    sqlite3_bind_null(u.get(), 4);
  else
    u.bind(4, now + o.lease_s);
  u.bind(5, c.id).step();
  t.commit();
  cursor_ = *client;
  return c;
}

void Store::set_running(const std::string& id, int attempt) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "UPDATE evaluations SET state = 'running' WHERE id = ? AND attempts = ? AND state = 'compiling'");
  s.bind(1, id).bind(2, attempt).step();
}

bool Store::renew(const Claim& c, double lease_s, bool running) {
  std::lock_guard lock(mu_);
  Stmt s(db_,
         "UPDATE evaluations SET lease_until = ?, state = CASE WHEN ? THEN 'running' ELSE state END "
         "WHERE id = ? AND attempts = ? AND worker = ? AND state IN ('compiling', 'running')");
  s.bind(1, epoch_seconds() + lease_s).bind(2, running ? 1 : 0).bind(3, c.id).bind(4, c.attempt).bind(5, c.worker);
  s.step();
  return sqlite3_changes(db_) > 0;
}

bool Store::finish(const Claim& c, EvalState state, const std::string& status, const std::string& record,
                   const std::string& error, double child_wall_s) {
  std::lock_guard lock(mu_);
  Stmt s(db_,
         "UPDATE evaluations SET state = ?, finished = ?, status = ?, record = ?, error = ?, child_wall_s = ?, "
         "lease_until = NULL WHERE id = ? AND attempts = ? AND COALESCE(worker, '') = ? AND state IN ('compiling', "
         "'running')");
  s.bind(1, std::string(state_name(state))).bind(2, epoch_seconds()).bind_null_if_empty(3, status);
  s.bind_null_if_empty(4, record).bind_null_if_empty(5, error).bind(6, child_wall_s).bind(7, c.id);
  s.bind(8, c.attempt).bind(9, c.worker).step();
  return sqlite3_changes(db_) > 0;
}

std::optional<EvalState> Store::state_of(const std::string& id) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "SELECT state FROM evaluations WHERE id = ?");
  s.bind(1, id);
  if (s.step()) return state_from_name(s.text(0));
  return std::nullopt;
}

int Store::requeue_in_flight() {
  std::lock_guard lock(mu_);
  Stmt s(db_, "UPDATE evaluations SET state = 'queued' WHERE state IN ('compiling', 'running') AND worker IS NULL");
  s.step();
  return sqlite3_changes(db_);
}

int Store::requeue_expired() {
  std::lock_guard lock(mu_);
  Stmt s(db_,
         "UPDATE evaluations SET state = 'queued', lease_until = NULL WHERE state IN ('compiling', 'running') AND "
         "lease_until < ?");
  s.bind(1, epoch_seconds()).step();
  return sqlite3_changes(db_);
}

std::map<std::string, int> Store::count_by_state() {
  std::lock_guard lock(mu_);
  std::map<std::string, int> counts;
  for (const auto& [v, n] : kStates) counts[n] = 0;
  Stmt s(db_, "SELECT state, COUNT(*) FROM evaluations GROUP BY state");
  while (s.step()) counts[s.text(0)] = static_cast<int>(s.integer(1));
  return counts;
}

std::map<std::string, int> Store::done_by_status() {
  std::lock_guard lock(mu_);
  std::map<std::string, int> counts;
  Stmt s(db_, "SELECT status, COUNT(*) FROM evaluations WHERE state = 'done' GROUP BY status");
  while (s.step()) counts[s.text(0)] = static_cast<int>(s.integer(1));
  return counts;
}

}  // namespace pkb::serve
