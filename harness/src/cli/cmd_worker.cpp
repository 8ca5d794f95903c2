// pkb worker --server URL [--token T] [--slots N] [--device cpu|cuda] ...: claims evaluations from a pkb serve and
// posts their records back (docs/serve.md, "Slurm workers"; scripts/slurm/pkb-worker.sbatch). The token may come
// from $PKB_WORKER_TOKEN instead (kept off the command line, which other users of a node can read).
// Exit codes: 0 idle past --idle-exit, 2 usage error or the server refused the worker; otherwise it runs until
// killed (SIGTERM kills its evaluations' children; its claims go back to the queue when their lease lapses).
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "serve/worker.h"

namespace pkb::cli {

void add_worker_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<serve::WorkerOptions>();
  CLI::App* cmd = app.add_subcommand("worker", "Evaluate for a pkb serve elsewhere: claim, run, post the record");
  cmd->add_option("--server", o->server, "The server's URL, e.g. http://10.0.0.5:8737")->required();
  cmd->add_option("--token", o->token, "A worker token (pkb serve token add NAME --worker; or $PKB_WORKER_TOKEN)");
  cmd->add_option("--name", o->name, "This worker's name in the server's records (default HOST:PID)");
  cmd->add_option("--device", o->device, "cpu or cuda: the server's device")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--slots", o->slots, "CPU ranks: evaluations at once, each of W ranks (GPUs: one per GPU)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--dir", o->dir, "Scratch (DIR/work) and cache (DIR/cache) (default $TMPDIR/pkb-worker-NAME)");
  cmd->add_option("--cache", o->cache_dir, "pkb eval's compile and reference-pass cache (default DIR/cache)");
  cmd->add_option("--idle-exit", o->idle_exit_s, "Exit 0 once idle this long, s (default: never)")->check(kPositive);
  cmd->callback([o, &action] {
    action = [o] {
      if (o->token.empty())
        if (const char* t = std::getenv("PKB_WORKER_TOKEN")) o->token = t;
      if (o->token.empty()) {
        std::cerr << "pkb worker: error: no token: --token or $PKB_WORKER_TOKEN\n";
        return 2;
      }
      return serve::run_worker(*o);
    };
  });
}

}  // namespace pkb::cli
