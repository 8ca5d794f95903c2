// pkb: the driver as users run it. The commands that never load a tensor library (eval, run, regress, topology,
// prompt, generate, report, leaderboard, serve, worker) run here, without libtorch, whose loading alone costs ~1 s of
// CPU per start (Debian's build: hundreds of shared libraries and the operator registry's static initializers); the
// oracle of a new reference-cache entry and `pkb run`'s references on CPU ranks come from pkb-full in processes of
// their own. Every other command line (validate, problems, --help, a usage error) runs pkb-full, beside this program,
// with the same arguments in the same process (execv): signals, exit codes and the process tree stay as if it were
// one program.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include "cli/cli_main.h"
#include "launch/mpirun.h"

namespace {

// The subcommand a command line names: the first argument that is neither a global option nor its value; empty
// when a global flag (--help) comes first.
std::string subcommand_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--root") {
      ++i;
      continue;
    }
    if (a.rfind("--root=", 0) == 0) continue;
    if (!a.empty() && a[0] == '-') return "";
    return a;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const pkb::cli::AddCommands front = pkb::cli::add_torch_free_commands;
  {
    CLI::App here;
    pkb::cli::Action unused;
    front(here, unused);
    const std::string name = subcommand_of(argc, argv);
    bool mine = false;
    for (const CLI::App* sub : here.get_subcommands([](CLI::App*) { return true; })) mine |= sub->get_name() == name;
    if (mine) return pkb::cli::cli_main(argc, argv, front);
  }
  const std::string full = (pkb::executable_dir() / "pkb-full").string();
  execv(full.c_str(), argv);
  std::cerr << "pkb: error: cannot run " << full << ": " << std::strerror(errno) << "\n";
  return 2;
}
