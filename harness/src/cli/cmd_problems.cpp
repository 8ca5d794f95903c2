// pkb problems list [--json] | show ID|slug [-w W]
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "reference/registered.h"
#include "spec/catalog.h"

namespace pkb::cli {
namespace {

using json = nlohmann::json;

struct ProblemsOptions {
  bool as_json = false;
  std::string selection = "all";
  int world = 0;  // 0: the smallest allowed W >= 2
};

int report_load_errors(const Catalog& c) {
  for (const auto& e : c.errors) std::cerr << "pkb: error: " << e << "\n";
  return c.errors.empty() ? 0 : 2;
}

std::string world_text(const ProblemSpec& p) {
  std::string s = "W>=" + std::to_string(p.world_size.min);
  if (p.world_size.max < kUnboundedWorld) s += ",<=" + std::to_string(p.world_size.max);
  for (const auto& c : p.world_size.constraints) s += "," + c.text();
  return s;
}

json problem_json(const ProblemSpec& p) {
  return {{"id", p.id},
          {"slug", p.slug},
          {"folder", p.folder()},
          {"title", p.title},
          {"category", category_name(p.category)},
          {"source", p.source},
          {"world_size", world_text(p)},
          {"parameters", p.parameters},
          {"has_reference", has_registered_reference(p.slug)},
          {"has_solution", std::filesystem::exists(p.dir / "solution.cu")}};
}

int run_list(const ProblemsOptions& o) {
  Catalog c = load_catalog(repo_root() / "problems");
  if (o.as_json) {
    json arr = json::array();
    for (const auto& p : c.problems) arr.push_back(problem_json(p));
    std::cout << arr.dump(2) << "\n";
  } else {
    std::printf("%-4s %-28s %-18s %-20s %-4s %-4s %s\n", "id", "slug", "category", "world size", "ref", "sol", "title");
    for (const auto& p : c.problems)
      std::printf("%-4d %-28s %-18s %-20s %-4s %-4s %s\n", p.id, p.slug.c_str(), category_name(p.category),
                  world_text(p).c_str(), has_registered_reference(p.slug) ? "yes" : "no",
                  std::filesystem::exists(p.dir / "solution.cu") ? "yes" : "no", p.title.c_str());
    std::printf("%zu problems\n", c.problems.size());
  }
  return report_load_errors(c);
}

int run_show(const ProblemsOptions& o) {
  Catalog c = load_catalog(repo_root() / "problems");
  int rc = report_load_errors(c);
  for (const ProblemSpec* p : c.select(o.selection)) {
    int w = o.world;
    if (w == 0)
      for (w = std::max(2, p->world_size.min); world_size_violation(*p, w, p->parameters) && w < 64;) ++w;
    std::cout << p->folder() << ": " << p->title << "\n"
              << "  category:    " << category_name(p->category) << "\n"
              << "  source:      " << p->source << "\n"
              << "  world size:  " << world_text(*p) << "\n"
              << "  description: " << p->description << "\n";
    std::cout << "  parameters: ";
    for (const auto& [k, v] : p->parameters) std::cout << " " << k << "=" << v;
    std::cout << "\n";
    if (auto why = world_size_violation(*p, w, p->parameters)) {
      std::cout << "  (shapes not shown: " << *why << ")\n";
      continue;
    }
    RunShape run = resolve_run(*p, w, DType::bf16);
    auto shape_str = [&](const TensorSpec& t, int r) {
      std::string s = "(";
      auto sh = tensor_shape(t, run, r);
      for (size_t i = 0; i < sh.size(); ++i) s += (i ? ", " : "") + std::to_string(sh[i]);
      return s + ") " + dtype_name(tensor_dtype(t, run));
    };
    std::cout << "  at W=" << w << ", bf16, rank 0:\n";
    for (const auto& in : p->inputs) {
      if (in.scalar)
        std::cout << "    in  " << in.scalar->name << " = " << in.scalar->value.eval(run.vars()) << "\n";
      else
        std::cout << "    in  " << in.tensor->name << " " << shape_str(*in.tensor, 0)
                  << (in.tensor->replicated ? " replicated" : "") << "\n";
    }
    for (const auto& out : p->outputs)
      std::cout << "    out " << out.name << " " << shape_str(out, 0) << (out.replicated ? " replicated" : "") << "\n";
    std::cout << "  roofline per GPU:";
    for (const auto& [k, e] : p->roofline) std::cout << " " << k << "=" << e.eval(run.vars());
    std::cout << "\n";
    for (const auto& d : p->deviations) std::cout << "  deviation: " << d << "\n";
  }
  return rc;
}

}  // namespace

void add_problems_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ProblemsOptions>();
  CLI::App* cmd = app.add_subcommand("problems", "List or show the problems");
  cmd->require_subcommand(1);
  CLI::App* list = cmd->add_subcommand("list", "One line per problem");
  list->add_flag("--json", o->as_json, "Machine-readable output");
  list->callback([o, &action] { action = [o] { return run_list(*o); }; });
  CLI::App* show = cmd->add_subcommand("show", "Details of problems: ids, ranges (9-30), lists (1,4,7), slugs or all");
  show->add_option("problems", o->selection, "Problem selection")->required();
  show->add_option("-w,--world", o->world, "World size for the shapes shown");
  show->callback([o, &action] { action = [o] { return run_show(*o); }; });
}

}  // namespace pkb::cli
