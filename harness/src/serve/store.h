// pkb serve's queue and results: one SQLite database in WAL mode (synchronous=FULL), so that an evaluation is
// accepted only once its row is on disk and a `kill -9` at any point loses nothing. Every state change is one
// transaction; `requeue_in_flight` at start puts evaluations a dead server left compiling or running back in the
// queue (they run again), while a finished one is never claimed again. One connection behind a mutex: the
// server's request threads and slots share it; `pkb serve token add` writes from another process (WAL).
// Known limit: the scheduler does not look ahead past an evaluation whose W does not fit the free GPUs.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkb::serve {

enum class EvalState { queued, compiling, running, done, failed, cancelled };
const char* state_name(EvalState s);
std::optional<EvalState> state_from_name(const std::string& s);
inline bool terminal(EvalState s) {
  return s == EvalState::done || s == EvalState::failed || s == EvalState::cancelled;
}

// One evaluation as submitted (validated already: serve/submission.h).
struct Item {
  std::string problem;  // the problem's folder, e.g. 001_allreduce
  int world = 2;
  std::string dtype = "bf16";
  nlohmann::json params = nlohmann::json::object();  // name -> integer overrides
  std::string timing = "standard";                   // a preset's name
  int priority = 0;                                  // higher first, within one client
  std::string idempotency_key;                       // "" = none
  std::string source;
};

struct EvalRow {
  std::string id, client, batch;
  Item item;  // without the source
  EvalState state = EvalState::queued;
  double created = 0, started = 0, finished = 0;  // seconds since the epoch; 0 = not yet
  int attempts = 0;                               // how many times a slot claimed it
  std::string status;                             // the record's status (done, and failed with a record)
  std::string record, error;                      // the record's JSON text; why it failed
  double child_wall_s = 0;                        // the `pkb eval` child's wall time (s)
};

// What a slot takes: the row (source included) and the attempt it is.
struct Claim {
  std::string id, client;
  Item item;
  int attempt = 0;
  double created = 0;  // when it was submitted (seconds since the epoch)
};

struct Accepted {
  std::string id;
  bool duplicate = false;  // the client's idempotency key named an evaluation it had submitted already
  EvalState state = EvalState::queued;
};

enum class CancelOutcome { not_found, cancelled, already_finished };

class Store {
 public:
  explicit Store(const std::filesystem::path& db_path);  // creates the schema; throws pkb::Error
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Clients: a name and its token's sha256 (the token itself is never stored).
  void add_client(const std::string& name, const std::string& token_sha256);  // throws if the name exists
  bool remove_client(const std::string& name);
  std::vector<std::string> client_names();
  std::optional<std::string> client_for_token(const std::string& token_sha256);

  // Submissions, in one transaction; an item whose key the client used before gets that evaluation back.
  std::vector<Accepted> insert(const std::string& client, const std::string& batch, const std::vector<Item>& items);
  int queued_count(const std::string& client);
  // Only the client's own: another client's id is not found.
  std::optional<EvalRow> get(const std::string& client, const std::string& id);
  std::vector<EvalRow> batch_rows(const std::string& client, const std::string& batch);
  // The client's among `ids`, in that order; the others are left out.
  std::vector<EvalRow> rows(const std::string& client, const std::vector<std::string>& ids);
  CancelOutcome cancel(const std::string& client, const std::string& id);

  // Slots. claim_next: the next queued evaluation, round robin over clients (the first client after `*cursor`
  // by name that has one, then wrapping), by priority then submission order within a client; moves it to
  // compiling and advances the cursor. None when the queue is empty.
  std::optional<Claim> claim_next(std::string* cursor);
  void set_running(const std::string& id, int attempt);
  // Only while the claim is current (compiling or running at that attempt): false if it was cancelled meanwhile.
  bool finish(const Claim& c, EvalState state, const std::string& status, const std::string& record,
              const std::string& error, double child_wall_s);
  std::optional<EvalState> state_of(const std::string& id);
  int requeue_in_flight();  // at start: compiling/running -> queued; how many

  // Metrics.
  std::map<std::string, int> count_by_state();
  std::map<std::string, int> done_by_status();

 private:
  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

// Seconds since the epoch, as the store records times.
double epoch_seconds();
// A fresh random id with a prefix ("ev_", "b_", "pkb_" for tokens): `bytes` of the system's random source in hex.
std::string random_id(const std::string& prefix, size_t bytes = 10);

}  // namespace pkb::serve
