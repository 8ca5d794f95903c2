#include "scoring/records.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <regex>

#include "core/error.h"

namespace pkb::scoring {
namespace {

using json = nlohmann::json;

// `pkb eval`'s outcomes, then `pkb run`'s: a sample the model never produced, a candidate left unevaluated.
constexpr std::array<const char*, 10> kStatuses = {
    "compile_error", "lint_violation", "load_error", "runtime_error", "timeout", "crash", "incorrect", "correct",
    "generation_failed", "not_evaluated"};

// The value at j[k0][k1]..., or nullptr when any step is missing or not an object.
const json* find(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object() || !at->contains(k)) return nullptr;
    at = &(*at)[k];
  }
  return at;
}

std::optional<double> number(const json& j, std::initializer_list<const char*> keys) {
  const json* v = find(j, keys);
  return v && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
}

std::string text(const json& j, std::initializer_list<const char*> keys, bool required) {
  const json* v = find(j, keys);
  if (v && v->is_string()) return v->get<std::string>();
  if (required) throw Error(std::string("missing string field ") + *std::prev(keys.end()));
  return "";
}

int sample_index(const std::string& path) {
  static const std::regex re(R"(sample_(\d+)\.[A-Za-z]+$)");
  std::smatch m;
  return std::regex_search(path, m, re) ? std::stoi(m[1]) : -1;
}

Sample parse_sample(const json& j) {
  Sample s;
  s.sha256 = text(j, {"candidate", "sha256"}, true);
  s.path = text(j, {"candidate", "path"}, false);
  const json* index = find(j, {"sample"});
  s.index = index && index->is_number_integer() ? index->get<int>() : sample_index(s.path);
  s.status = text(j, {"status"}, true);
  if (std::find(kStatuses.begin(), kStatuses.end(), s.status) == kStatuses.end())
    throw Error("unknown status '" + s.status + "'");
  s.generation_status = text(j, {"generation", "status"}, false);
  s.robust_pass = s.status == "correct";
  const json* pkb = find(j, {"checks", "pkb_pass"});
  // Only an evaluated candidate can pass; a stray checks object on a placeholder record must not count.
  bool evaluated = s.status != "generation_failed" && s.status != "not_evaluated";
  s.pkb_pass = evaluated && pkb && pkb->is_boolean() && pkb->get<bool>();
  s.speedup = number(j, {"timing", "speedup"});
  s.sol_candidate = number(j, {"roofline", "sol_candidate"});
  // The baseline the speedup was measured against is the one whose SOL% we report.
  bool eager = text(j, {"timing", "baseline"}, false) == "pytorch_eager";
  s.sol_baseline = number(j, {"roofline", eager ? "sol_baseline_pytorch_eager" : "sol_baseline_libtorch_nccl"});
  return s;
}

ProblemSamples parse_problem(const json& j) {
  const json* id = find(j, {"problem", "id"});
  if (!id || !id->is_number_integer()) throw Error("missing integer field problem.id");
  return {id->get<int>(), text(j, {"problem", "slug"}, false), text(j, {"problem", "folder"}, true),
          text(j, {"problem", "category"}, false), {}, {}};
}

void add_distinct(json& array, const json& value) {
  if (std::find(array.begin(), array.end(), value) == array.end()) array.push_back(value);
}

void note_provenance(LoadedResults& r, const json& j) {
  const json* prov = find(j, {"provenance"});
  if (prov && prov->is_object())
    for (const auto& [k, v] : prov->items()) add_distinct(r.fingerprint[k], v);
  add_distinct(r.configurations, {{"world", j.value("world", json())}, {"device", j.value("device", json())},
                                  {"dtype", j.value("dtype", json())}});
}

std::vector<Sample>::iterator find_candidate(std::vector<Sample>& list, const std::string& sha256) {
  return std::find_if(list.begin(), list.end(), [&](const Sample& x) { return x.sha256 == sha256; });
}

// Adds the record's candidate to its problem. A candidate seen before is replaced wherever it was (the later
// record wins), so a GPU evaluation appended later supersedes the candidate's not_evaluated placeholder.
void add_record(LoadedResults& r, std::map<std::string, size_t>& problem_at, ProblemSamples p, Sample s) {
  auto [it, fresh] = problem_at.emplace(p.folder, r.problems.size());
  if (fresh) r.problems.push_back(std::move(p));
  ProblemSamples& problem = r.problems[it->second];
  bool skipped = s.status == "not_evaluated";
  auto& target = skipped ? problem.not_evaluated : problem.samples;
  auto& other = skipped ? problem.samples : problem.not_evaluated;
  if (auto same = find_candidate(target, s.sha256); same != target.end()) {
    *same = std::move(s);  // in place: the sample keeps its position
    ++r.duplicates;
    return;
  }
  if (auto stale = find_candidate(other, s.sha256); stale != other.end()) {
    other.erase(stale);
    ++r.duplicates;
  }
  // A sample whose generation failed (say, an API error after every retry) and that a later invocation did get
  // a kernel for: the kernel's record supersedes the failure, or the sample would count twice.
  if (s.status != "generation_failed" && s.index >= 0) {
    auto failed = std::find_if(problem.samples.begin(), problem.samples.end(), [&](const Sample& x) {
      return x.status == "generation_failed" && x.index == s.index;
    });
    if (failed != problem.samples.end()) {
      problem.samples.erase(failed);
      ++r.duplicates;
    }
  }
  target.push_back(std::move(s));
}

// manifest.json as `pkb run` wrote it, copied verbatim into reports; null (with a warning if it is unusable)
// when absent or not an object.
json read_manifest(const std::filesystem::path& file, std::vector<std::string>& warnings) {
  std::ifstream in(file);
  if (!in) return nullptr;
  json j = json::parse(in, nullptr, false);
  if (j.is_object()) return j;
  warnings.push_back(file.string() + ": ignored: not a JSON object");
  return nullptr;
}

}  // namespace

const char* policy_name(Policy p) { return p == Policy::robust ? "robust" : "pkb"; }

LoadedResults parse_results(std::istream& in, const std::string& name) {
  LoadedResults r;
  r.source = name;
  std::map<std::string, size_t> problem_at;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = name + ":" + std::to_string(no);
    json j = json::parse(line, nullptr, false);
    try {
      if (j.is_discarded()) throw Error("not valid JSON");
      if (j.value("schema", "") != "pkb.result/1") throw Error("schema is not pkb.result/1");
      add_record(r, problem_at, parse_problem(j), parse_sample(j));
      note_provenance(r, j);
      ++r.records;
    } catch (const Error& e) {
      ++r.malformed;
      r.warnings.push_back(where + ": skipped: " + e.what());
    }
  }
  std::sort(r.problems.begin(), r.problems.end(),
            [](const ProblemSamples& a, const ProblemSamples& b) { return std::tie(a.id, a.folder) < std::tie(b.id, b.folder); });
  if (r.configurations.size() > 1)
    r.warnings.push_back(name + ": records mix configurations " + r.configurations.dump() + "; scored together");
  return r;
}

LoadedResults load_results(const std::filesystem::path& dir_or_jsonl) {
  namespace fs = std::filesystem;
  fs::path file = fs::is_directory(dir_or_jsonl) ? dir_or_jsonl / "results.jsonl" : dir_or_jsonl;
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot open");
  LoadedResults r = parse_results(in, file.string());
  fs::path dir = fs::absolute(file).lexically_normal().parent_path();
  r.source = (dir.filename() / file.filename()).string();
  r.run = read_manifest(dir / "manifest.json", r.warnings);
  return r;
}

}  // namespace pkb::scoring
