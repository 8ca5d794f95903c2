#include "scoring/merge.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/files.h"

namespace pkb::scoring {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct ShardDir {
  fs::path dir;
  json manifest;
  int index = 0, count = 0, samples = 0;
};

ShardDir read_shard(const fs::path& dir) {
  fs::path file = dir / "manifest.json";
  ShardDir s{dir, read_json_or_null(file)};
  if (!s.manifest.is_object())
    throw Error(file.string() + ": missing or not a JSON object (not a run directory of pkb run --shard)");
  json shard = s.manifest.value("settings", json::object()).value("shard", json());
  if (!shard.is_object())
    throw Error(file.string() + ": settings.shard is absent: a run made without --shard is not a shard");
  for (auto [field, target] : {std::pair{"index", &s.index}, {"count", &s.count}, {"samples", &s.samples}}) {
    if (!shard.contains(field) || !shard[field].is_number_integer())
      throw Error(file.string() + ": settings.shard." + field + " is missing or not an integer");
    *target = shard[field].get<int>();
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw Error(file.string() + ": settings.shard is " + shard.dump() + ": the index must lie in [0, count)");
  return s;
}

// Every setting but the shard itself must match the first shard's, field by field.
void check_same_run(const ShardDir& first, const ShardDir& s) {
  json a = first.manifest.value("settings", json::object()), b = s.manifest.value("settings", json::object());
  std::set<std::string> fields;
  for (const auto& [k, v] : a.items()) fields.insert(k);
  for (const auto& [k, v] : b.items()) fields.insert(k);
  auto mismatch = [&](const std::string& field, const json& x, const json& y) {
    return Error((s.dir / "manifest.json").string() + ": " + field + " = " + y.dump() + ", but " +
                 (first.dir / "manifest.json").string() + " has " + x.dump() + ": shards of different runs");
  };
  for (const std::string& f : fields)
    if (f != "shard" && a.value(f, json()) != b.value(f, json()))
      throw mismatch("settings." + f, a.value(f, json()), b.value(f, json()));
  if (s.count != first.count) throw mismatch("settings.shard.count", first.count, s.count);
  if (s.samples != first.samples) throw mismatch("settings.shard.samples", first.samples, s.samples);
}

// The sample keys each shard holds; a key in two shards means the shards overlap (not one partition).
void check_disjoint(const std::vector<ShardDir>& shards, const std::vector<LoadedResults>& each) {
  std::map<std::string, size_t> owner;
  for (size_t i = 0; i < each.size(); ++i)
    for (const ProblemSamples& p : each[i].problems)
      for (const auto* list : {&p.samples, &p.not_evaluated})
        for (const Sample& s : *list) {
          auto [it, fresh] = owner.emplace(s.key, i);
          if (!fresh && it->second != i)
            throw Error("sample " + s.key + " is recorded by both " + shards[it->second].dir.string() + " and " +
                        shards[i].dir.string() + ": the shards do not partition one run");
        }
}

// The shards' common manifest: settings without the shard, the union of the selections, and each shard's own
// provenance (host, times, invocations, revision) under "shards".
json merged_manifest(const std::vector<ShardDir>& shards) {
  json run = shards.front().manifest;
  for (const char* own : {"created", "updated", "invocations", "host", "pkb_git", "selection", "gpu_evaluation"})
    run.erase(own);
  run["settings"]["shard"] = nullptr;
  run["samples"] = shards.front().samples;
  std::map<std::pair<int, std::string>, json> selection;
  bool gpu = true;
  run["shards"] = json::array();
  for (const ShardDir& s : shards) {
    const json& m = s.manifest;
    for (const json& p : m.value("selection", json::array()))
      if (p.is_object()) selection.emplace(std::pair{p.value("id", 0), p.value("folder", "")}, p);
    gpu = gpu && m.value("gpu_evaluation", false);
    json entry = {{"index", s.index}, {"count", s.count}, {"dir", s.dir.string()}};
    for (const char* own : {"host", "created", "updated", "invocations", "pkb_git", "gpu_evaluation"})
      if (m.contains(own)) entry[own] = m[own];
    run["shards"].push_back(entry);
  }
  run["selection"] = json::array();
  for (const auto& [key, p] : selection) run["selection"].push_back(p);
  run["gpu_evaluation"] = gpu;
  return run;
}

}  // namespace

std::vector<fs::path> shard_subdirectories(const fs::path& dir) {
  static const std::regex name(R"(shard-([0-9]+)-of-([0-9]+))");
  std::vector<std::pair<std::pair<long, long>, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    std::string base = e.path().filename().string();
    if (e.is_directory() && std::regex_match(base, m, name) && fs::exists(e.path() / "manifest.json"))
      found.push_back({{std::stol(m[2]), std::stol(m[1])}, e.path()});
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [key, p] : found) out.push_back(p);
  return out;
}

LoadedResults load_shards(const std::vector<fs::path>& shard_dirs, bool partial) {
  if (shard_dirs.empty()) throw Error("no shard directories to merge");
  std::vector<ShardDir> shards;
  for (const fs::path& d : shard_dirs) shards.push_back(read_shard(d));
  std::sort(shards.begin(), shards.end(), [](const ShardDir& a, const ShardDir& b) { return a.index < b.index; });
  for (size_t i = 0; i < shards.size(); ++i) {
    check_same_run(shards.front(), shards[i]);
    if (i && shards[i].index == shards[i - 1].index)
      throw Error("shard " + std::to_string(shards[i].index) + "/" + std::to_string(shards[i].count) +
                  " is given twice: " + shards[i - 1].dir.string() + " and " + shards[i].dir.string());
  }
  std::string absent;
  for (int i = 0, at = 0; i < shards.front().count; ++i) {
    if (at < static_cast<int>(shards.size()) && shards[at].index == i) {
      ++at;
      continue;
    }
    absent += (absent.empty() ? "" : ", ") + std::to_string(i) + "/" + std::to_string(shards.front().count);
  }
  if (!absent.empty() && !partial)
    throw Error("shards missing: " + absent + " (give every shard's directory, or --partial to score those given)");

  // A shard that has recorded nothing yet has no results.jsonl: it contributes no record, only its selection.
  std::vector<std::unique_ptr<std::ifstream>> files;
  std::vector<std::pair<std::istream*, std::string>> inputs;
  std::vector<std::string> warnings;
  std::vector<LoadedResults> each;
  for (const ShardDir& s : shards) {
    fs::path file = s.dir / "results.jsonl";
    if (!fs::exists(file)) warnings.push_back(file.string() + ": absent: the shard has recorded nothing yet");
    files.push_back(std::make_unique<std::ifstream>(file));
    std::ifstream one(file);
    each.push_back(parse_results(one, file.string()));
    inputs.push_back({files.back().get(), file.string()});
  }
  check_disjoint(shards, each);
  LoadedResults r = parse_results(inputs);
  r.warnings.insert(r.warnings.begin(), warnings.begin(), warnings.end());
  if (!absent.empty()) r.warnings.push_back("partial: shards " + absent + " were not given");
  fs::path parent = fs::absolute(shards.front().dir).lexically_normal().parent_path();
  r.source = (parent.filename() / "shard-*").string();
  attach_run(r, merged_manifest(shards));
  return r;
}

LoadedResults load_run(const fs::path& path) {
  if (fs::is_directory(path) && !fs::exists(path / "results.jsonl")) {
    std::vector<fs::path> shards = shard_subdirectories(path);
    if (!shards.empty()) return load_shards(shards);
  }
  return load_results(path);
}

}  // namespace pkb::scoring
