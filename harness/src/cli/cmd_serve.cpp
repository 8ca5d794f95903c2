// pkb serve [--port P] [--host H] [--data DIR] [--slots N] ...: pkb's verdicts as an HTTP/JSON service
// (docs/serve.md). pkb serve token add NAME [--worker] | list | revoke NAME: the clients' and workers' bearer tokens.
// Exit codes: 0 done (token commands), 2 usage or input error, or the server could not start; the server itself
// runs until it is killed.
#include <iostream>

#include "cli/commands.h"
#include "serve/server.h"

namespace pkb::cli {
namespace {

struct TokenOptions {
  std::string name;
  bool worker = false;
};

void add_server_flags(CLI::App* cmd, serve::ServeOptions& o) {
  cmd->add_option("--host", o.host, "Address to listen on (default 127.0.0.1: put a TLS proxy in front for more)");
  cmd->add_option("--port", o.port, "Port (default 8737; 0: any free port, printed)")->check(CLI::Range(0, 65535));
  cmd->add_option("--cache", o.cache_dir, "pkb eval's compile and reference-pass cache, shared (default DATA/cache)");
  cmd->add_option("--device", o.device, "cpu, cuda or auto (cuda where GPUs are visible)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--slots", o.slots,
                  "CPU ranks: evaluations at once, each of W ranks (GPUs: one per GPU); 0: none, only workers evaluate")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--lease", o.lease_s, "A worker's claim lapses this long after its last heartbeat, s (default 60)")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--timeout", o.candidate_timeout_s, "pkb eval --timeout: each launch of a candidate's ranks, s")
      ->check(kPositive);
  cmd->add_option("--deadline", o.evaluation_deadline_s, "The whole evaluation's deadline, s (then it has failed)")
      ->check(kPositive);
  cmd->add_flag(
      "--no-sandbox", [&o](int64_t) { o.sandbox = false; }, "pkb eval --no-sandbox: trusted code only");
  cmd->add_option("--max-queued", o.max_queued, "Per client: evaluations queued or running at once")
      ->check(CLI::Range(1, 100000000));
  cmd->add_option("--rate", o.rate, "Per client: requests a second (then 429 with Retry-After)")->check(kPositive);
  cmd->add_option("--burst", o.burst, "Per client: requests at once above the rate")->check(CLI::Range(1.0, 1e9));
  cmd->add_option("--max-body-bytes", o.max_body_bytes, "A request's largest body (then 413)")->check(kPositive);
  cmd->add_option("--max-source-bytes", o.max_source_bytes, "A candidate's largest source (then 413)")
      ->check(kPositive);
  cmd->add_option("--max-batch", o.max_batch, "A batch's most items (then 413)")->check(kPositive);
  cmd->add_option("--http-threads", o.http_threads, "Request threads; each open event stream holds one")
      ->check(CLI::Range(2, 4096));
}

void add_token_commands(CLI::App* serve_cmd, const std::shared_ptr<serve::ServeOptions>& o, Action& action) {
  CLI::App* token = serve_cmd->add_subcommand("token", "The clients' bearer tokens (stored hashed)");
  token->require_subcommand(1);
  auto t = std::make_shared<TokenOptions>();
  CLI::App* add = token->add_subcommand("add", "Add client NAME and print its token (shown this once)");
  add->add_option("name", t->name, "The client's name")->required();
  add->add_flag("--worker", t->worker, "A worker's token (pkb worker): it claims evaluations, it cannot submit");
  CLI::App* revoke = token->add_subcommand("revoke", "Remove client NAME's token");
  revoke->add_option("name", t->name, "The client's name")->required();
  CLI::App* list = token->add_subcommand("list", "The clients' names");
  for (CLI::App* c : {add, revoke, list}) c->add_option("--data", o->data_dir, "The server's data directory");
  add->callback([o, t, &action] {
    action = [o, t] {
      std::cout << serve::add_token(o->data_dir, t->name, t->worker) << "\n";
      return 0;
    };
  });
  revoke->callback([o, t, &action] {
    action = [o, t] {
      if (serve::revoke_token(o->data_dir, t->name)) return 0;
      std::cerr << "pkb: error: no client named '" << t->name << "'\n";
      return 2;
    };
  });
  list->callback([o, &action] {
    action = [o] {
      for (const auto& n : serve::token_names(o->data_dir)) std::cout << n << "\n";
      return 0;
    };
  });
}

}  // namespace

void add_serve_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<serve::ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve evaluations over HTTP/JSON (docs/serve.md)");
  cmd->add_option("--data", o->data_dir, "Where serve.db (queue and results) and scratch go (default results/serve)");
  add_server_flags(cmd, *o);
  add_token_commands(cmd, o, action);
  cmd->callback([cmd, o, &action] {
    if (cmd->get_subcommands().empty()) action = [o] { return serve::run_server(*o); };
  });
}

}  // namespace pkb::cli
