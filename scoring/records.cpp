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

constexpr std::array<const char*, 8> kStatuses = {"compile_error", "lint_violation", "load_error", "runtime_error",
                                                  "timeout",       "crash",          "incorrect",  "correct"};

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
  s.index = sample_index(s.path);
  s.status = text(j, {"status"}, true);
  if (std::find(kStatuses.begin(), kStatuses.end(), s.status) == kStatuses.end())
    throw Error("unknown status '" + s.status + "'");
  s.robust_pass = s.status == "correct";
  const json* pkb = find(j, {"checks", "pkb_pass"});
  s.pkb_pass = pkb && pkb->is_boolean() && pkb->get<bool>();
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
          text(j, {"problem", "category"}, false), {}};
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

// Adds the record's sample to its problem; a candidate seen before is replaced (the later record wins).
void add_record(LoadedResults& r, std::map<std::string, size_t>& problem_at, ProblemSamples p, Sample s) {
  auto [it, fresh] = problem_at.emplace(p.folder, r.problems.size());
  if (fresh) r.problems.push_back(std::move(p));
  auto& samples = r.problems[it->second].samples;
  auto same = std::find_if(samples.begin(), samples.end(), [&](const Sample& x) { return x.sha256 == s.sha256; });
  if (same == samples.end()) {
    samples.push_back(std::move(s));
  } else {
    *same = std::move(s);
    ++r.duplicates;
  }
}

}  // namespace

const char* policy_name(Policy p) { return p == Policy::robust ? "robust" : "pkb"; }

LoadedResults parse_results(std::istream& in, const std::string& name) {
  LoadedResults r;
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
  auto file = std::filesystem::is_directory(dir_or_jsonl) ? dir_or_jsonl / "results.jsonl" : dir_or_jsonl;
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot open");
  return parse_results(in, file.string());
}

}  // namespace pkb::scoring
