// The candidate library as both of its hosts load and call it: pkb-runner (worker/runner_main.cpp, its own process)
// and, on GPUs, the rank program itself (worker/candidate_calls.cpp). Header-only: pkb-runner links almost nothing.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "worker/runner_protocol.h"

extern "C" {
#include "../../include/pkb/abi.h"
}

namespace pkb {

// pkb_run, and pkb_setup and pkb_teardown where the library exports them (harness/include/pkb/abi.h).
struct CandidateLibrary {
  using SetupFn = int (*)(pkb_context*, const pkb_tensor*, int, const pkb_tensor*, int);
  using RunFn = int (*)(pkb_context*, const pkb_tensor*, int, pkb_tensor*, int);
  using TeardownFn = void (*)(pkb_context*);
  RunFn run = nullptr;
  SetupFn setup = nullptr;
  TeardownFn teardown = nullptr;
  std::string error;  // "" once loaded with pkb_run; else why not

  // Loading runs the library's constructors: candidate code from here on.
  static CandidateLibrary open(const std::string& path) {
    CandidateLibrary lib;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      lib.error = e ? e : "dlopen failed";
      return lib;
    }
    lib.run = reinterpret_cast<RunFn>(dlsym(handle, "pkb_run"));
    lib.setup = reinterpret_cast<SetupFn>(dlsym(handle, "pkb_setup"));
    lib.teardown = reinterpret_cast<TeardownFn>(dlsym(handle, "pkb_teardown"));
    if (!lib.run) lib.error = "the library does not export pkb_run (missing, misspelled, or not extern \"C\")";
    return lib;
  }

  // The call `op` names, on the inputs of one slot: its return value (pkb_run's or pkb_setup's; 0 otherwise).
  int call(runner::Op op, pkb_context* ctx, std::vector<pkb_tensor>& in, std::vector<pkb_tensor>& out) const {
    const int n_in = static_cast<int>(in.size()), n_out = static_cast<int>(out.size());
    if (op == runner::kSetup && setup) return setup(ctx, in.data(), n_in, out.data(), n_out);
    if (op == runner::kRun && run) return run(ctx, in.data(), n_in, out.data(), n_out);
    if (op == runner::kTeardown && teardown) teardown(ctx);
    return 0;
  }
};

// The parameters and groups a pkb_context points into, kept alive beside it.
struct ContextTables {
  std::vector<std::string> param_names;
  std::vector<int64_t> param_values;
  std::vector<std::pair<std::string, std::vector<int>>> group_members;  // name, world ranks in group order

  // Points ctx's parameter and group fields here (after the tables are filled; they must not change afterwards).
  void fill(pkb_context& ctx) {
    name_ptrs_.clear(), groups_.clear();
    for (const auto& n : param_names) name_ptrs_.push_back(n.c_str());
    ctx.n_params = static_cast<int>(param_names.size());
    ctx.param_names = name_ptrs_.data();
    ctx.param_values = param_values.data();
    for (const auto& [name, m] : group_members) {
      const int idx = static_cast<int>(std::find(m.begin(), m.end(), ctx.rank) - m.begin());
      groups_.push_back({name.c_str(), static_cast<int>(m.size()), idx, m.data()});
    }
    ctx.n_groups = static_cast<int>(groups_.size());
    ctx.groups = groups_.data();
  }
  // pkb_context::param: the value of `name`, -1 if the problem has no such parameter.
  int64_t param(const char* name) const {
    for (size_t i = 0; i < param_names.size(); ++i)
      if (param_names[i] == name) return param_values[i];
    return -1;
  }

 private:
  std::vector<const char*> name_ptrs_;
  std::vector<pkb_group> groups_;
};

// Every field of the pkb_context a candidate sees, set in one place for both ways of calling it (pkb-runner, and the
// rank program in process): the ABI version, where this rank stands, its device and stream, the heaps, the parameters
// and groups (`tables`, which must outlive ctx and not change afterwards) and the callbacks. `user` stays the
// candidate's.
struct ContextFields {
  int rank = 0, world = 1, local_rank = 0, device = -1;
  void* stream = nullptr;
  void* const* heap_bases = nullptr;
  void* const* heap_bases_device = nullptr;
  size_t heap_size = 0;
  decltype(pkb_context::symm_alloc) symm_alloc = nullptr;
  decltype(pkb_context::symm_peer) symm_peer = nullptr;
  decltype(pkb_context::barrier) barrier = nullptr;
  decltype(pkb_context::param) param = nullptr;
};
inline void build_context(pkb_context& c, const ContextFields& f, ContextTables& tables) {
  c.abi_version = PKB_ABI_VERSION;
  c.rank = f.rank;
  c.world_size = f.world;
  c.local_rank = f.local_rank;
  c.device = f.device;
  c.stream = f.stream;
  tables.fill(c);
  c.heap_bases = f.heap_bases;
  c.heap_bases_device = f.heap_bases_device;
  c.heap_size = f.heap_size;
  c.symm_alloc = f.symm_alloc;
  c.symm_peer = f.symm_peer;
  c.barrier = f.barrier;
  c.param = f.param;
}

}  // namespace pkb
