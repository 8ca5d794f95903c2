// pkb serve's queue and results: one SQLite database in WAL mode (synchronous=FULL), so that an evaluation is
// accepted only once its row is on disk and a `kill -9` at any point loses nothing. Every state change is one
// transaction; `requeue_in_flight` at start puts evaluations a dead server left compiling or running back in the
// queue (they run again), while a finished one is never claimed again. A claim by a remote worker (`pkb worker`)
// holds a lease instead: renewed by its heartbeats, requeued by `requeue_expired` once it lapses, and left alone
// by a restart (the worker may still finish it). One connection behind a mutex: the server's request threads and
// slots share it; `pkb serve token add` writes from another process (WAL).
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

// What a token authenticates: a client (submits and reads evaluations) or a worker (claims them and posts their
// records: docs/serve.md, "Slurm workers"). Neither kind is accepted where the other is expected.
enum class TokenRole { client, worker };
const char* role_name(TokenRole r);

struct EvalRow {
  std::string id, client, batch;
  std::string worker;  // the remote worker holding or last holding its claim ("" = the server's own slots)
  Item item;           // without the source
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
  std::string worker;  // the remote worker that holds it ("" = one of the server's own slots)
};

// Who claims, and what it can take.
struct ClaimOptions {
  int max_world = 1 << 30;  // only evaluations of W <= this (GPUs free now): smaller ones are taken past larger
  std::string worker;       // "" = the server's own slot (no lease: its claims die with the server)
  double lease_s = 0;       // a worker's claim lapses this long after its last heartbeat (s)
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

  // Tokens: a name, its role and its token's sha256 (the token itself is never stored).
  void add_client(const std::string& name, const std::string& token_sha256,
                  TokenRole role = TokenRole::client);  // throws if the name exists
  bool remove_client(const std::string& name);
  std::vector<std::pair<std::string, TokenRole>> client_names();
  // The name the token belongs to, if it has that role.
  std::optional<std::string> client_for_token(const std::string& token_sha256, TokenRole role = TokenRole::client);

  // Submissions, in one transaction; an item whose key the client used before gets that evaluation back.
  std::vector<Accepted> insert(const std::string& client, const std::string& batch, const std::vector<Item>& items);
  int queued_count(const std::string& client);
  // Only the client's own: another client's id is not found.
  std::optional<EvalRow> get(const std::string& client, const std::string& id);
  std::vector<EvalRow> batch_rows(const std::string& client, const std::string& batch);
  // The client's among `ids`, in that order; the others are left out.
  std::vector<EvalRow> rows(const std::string& client, const std::vector<std::string>& ids);
  CancelOutcome cancel(const std::string& client, const std::string& id);

  // Slots and workers. claim_next: the next queued evaluation of W <= max_world, round robin over clients (the
  // first client after the last one served, by name, that has one, then wrapping), by priority then submission
  // order within a client; moves it to compiling (a worker's with a lease). None when nothing fits.
  std::optional<Claim> claim_next(const ClaimOptions& o = {});
  void set_running(const std::string& id, int attempt);
  // A worker's heartbeat: extends the lease of its current claim by `lease_s` (and marks it running); false
  // when the claim is no longer current (cancelled, finished, its lease lapsed and it was requeued).
  bool renew(const Claim& c, double lease_s, bool running);
  // Only while the claim is current (compiling or running at that attempt, by that worker): false if it was
  // cancelled meanwhile, or requeued (a restart, a lapsed lease) and maybe claimed again.
  bool finish(const Claim& c, EvalState state, const std::string& status, const std::string& record,
              const std::string& error, double child_wall_s);
  std::optional<EvalState> state_of(const std::string& id);
  int requeue_in_flight();  // at start: the server's own slots' compiling/running -> queued; how many
  int requeue_expired();    // workers' claims whose lease lapsed -> queued; how many

  // Metrics.
  std::map<std::string, int> count_by_state();
  std::map<std::string, int> done_by_status();

 private:
  sqlite3* db_ = nullptr;
  std::mutex mu_;
  std::string cursor_;  // the round robin's last client served
};

// Seconds since the epoch, as the store records times.
double epoch_seconds();
// A fresh random id with a prefix ("ev_", "b_", "pkb_" for tokens): `bytes` of the system's random source in hex.
std::string random_id(const std::string& prefix, size_t bytes = 10);

}  // namespace pkb::serve
