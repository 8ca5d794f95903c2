// pkb built with PKB_BUILD_SERVE=OFF (no cpp-httplib or SQLite on the machine): `pkb serve` and `pkb worker` are
// still commands, and say how to get them, rather than being unknown.
#include <iostream>

#include "cli/commands.h"

namespace pkb::cli {
namespace {

void add_absent(CLI::App& app, Action& action, const char* name, const char* what) {
  CLI::App* cmd = app.add_subcommand(name, what);
  cmd->allow_extras();
  cmd->callback([&action, name] {
    action = [name] {
      std::cerr << "pkb " << name
                << ": error: this pkb was built without pkb serve (PKB_BUILD_SERVE=OFF: cpp-httplib or SQLite was "
                   "missing); install libcpp-httplib-dev and libsqlite3-dev and build again\n";
      return 2;
    };
  });
}

}  // namespace

void add_serve_command(CLI::App& app, Action& action) {
  add_absent(app, action, "serve", "Serve evaluations over HTTP/JSON (not built here)");
}
void add_worker_command(CLI::App& app, Action& action) {
  add_absent(app, action, "worker", "Evaluate for a pkb serve elsewhere (not built here)");
}

}  // namespace pkb::cli
