#include "scoring/records.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>

#include "core/error.h"
#include "core/result_record.h"

namespace pkb::scoring {
namespace {

using json = nlohmann::json;

Sample make_sample(const ResultRecord& rec, std::vector<std::string>& warnings, const std::string& where) {
  Sample s;
  s.key = rec.sample_key();
  s.sha256 = rec.candidate_sha256;
  s.path = rec.candidate_path;
  s.index = rec.sample.value_or(-1);
  s.turn = rec.turn_number();
  s.input_tokens = rec.input_tokens;
  s.output_tokens = rec.output_tokens;
  s.cost_usd = rec.cost_usd;
  if (const auto it = rec.fields.find("agent"); it != rec.fields.end() && it->is_object())
    if (auto steps = it->find("steps"); steps != it->end() && steps->is_number_integer())
      s.agent_steps = steps->get<int>();
  s.status = rec.status;
  s.generation_status = rec.generation_status;
  const StatusInfo* info = rec.status_entry();
  if (!info) {
    warnings.push_back(where + ": unknown status '" + rec.status + "': counted as a failed sample");
    s.failure = "unknown";
  } else if (info->status == ResultStatus::generation_failed) {
    s.failure = rec.generation_status.empty() ? "generation" : rec.generation_status;
  } else {
    s.failure = info->failure_kind;
  }
  s.robust_pass = rec.correct();
  // Only an evaluated candidate can pass; a stray checks object on a placeholder record must not count.
  s.pkb_pass = info && info->evaluated && rec.pkb_pass.value_or(false);
  s.speedup = rec.speedup;
  s.sol_candidate = rec.sol_candidate;
  s.sol_baseline = rec.sol_baseline;  // of the baseline the speedup was measured against
  s.record = rec;
  return s;
}

void add_distinct(json& array, const json& value) {
  if (!array.is_array()) array = json::array();
  if (std::find(array.begin(), array.end(), value) == array.end()) array.push_back(value);
}

void note_settings(LoadedResults& r, const ResultRecord& rec) {
  for (const auto& [k, v] : rec.provenance.items()) add_distinct(r.fingerprint[k], v);
  add_distinct(r.configurations, {{"world", rec.world ? json(rec.world) : json()},
                                  {"device", rec.device.empty() ? json() : json(rec.device)},
                                  {"dtype", rec.dtype.empty() ? json() : json(rec.dtype)}});
  const StatusInfo* info = rec.status_entry();
  if (!info || !info->evaluated) return;  // placeholders carry no timing method or baseline
  auto or_null = [](const auto& x) { return x ? json(*x) : json(); };
  add_distinct(r.settings["timing"],
               {{"trials", or_null(rec.trials)}, {"warmup", or_null(rec.warmup)}, {"iters", or_null(rec.iters)}});
  if (!rec.baseline.empty()) add_distinct(r.settings["baseline"], rec.baseline);
  // On GPUs where the candidate ran is how both sides were timed (the call gate's flags, or events in process).
  if (!rec.candidate_process.empty() && rec.device == "cuda")
    add_distinct(r.settings["candidate_process"], rec.candidate_process);
  add_distinct(r.settings["timing_method"], rec.timing_method.empty() ? "pkb" : rec.timing_method);
}

bool same_sample(const Sample& a, const Sample& b) {
  // A record with a sample index supersedes an earlier one of the same bytes without an index (records
  // written before records carried `sample`), so resuming an older run directory counts each sample once.
  if (a.turn != b.turn) return false;
  return a.key == b.key || (a.index < 0 && b.index >= 0 && a.sha256 == b.sha256);
}

// Adds the record's sample to its problem. A sample seen before is replaced wherever it was (the later record
// wins): a re-evaluation supersedes the earlier verdict, a GPU evaluation its not_evaluated placeholder, a
// kernel generated on a later invocation the sample's generation_failed record.
void add_record(LoadedResults& r, std::map<std::string, size_t>& problem_at, const ResultRecord& rec, Sample s) {
  auto [it, fresh] = problem_at.emplace(rec.problem_folder, r.problems.size());
  if (fresh)
    r.problems.push_back({rec.problem_id, rec.problem_slug, rec.problem_folder, rec.problem_category, {}, {}, false});
  ProblemSamples& problem = r.problems[it->second];
  const StatusInfo* info = find_status(s.status);
  bool skipped = info && !info->sample;  // not_evaluated: a placeholder until a real evaluation supersedes it
  auto& target = skipped ? problem.not_evaluated : problem.turns;
  auto& other = skipped ? problem.turns : problem.not_evaluated;
  auto same = [&](const Sample& x) { return same_sample(x, s); };
  if (auto at = std::find_if(target.begin(), target.end(), same); at != target.end()) {
    *at = std::move(s);  // in place: the sample keeps its position
    ++r.duplicates;
    return;
  }
  if (auto stale = std::find_if(other.begin(), other.end(), same); stale != other.end()) {
    other.erase(stale);
    ++r.duplicates;
  }
  target.push_back(std::move(s));
}

bool better_turn(const Sample& a, const Sample& b) {  // is a a better outcome than b?
  if (a.robust_pass != b.robust_pass) return a.robust_pass;
  if (a.robust_pass) return a.speedup.value_or(0.0) > b.speedup.value_or(0.0);
  return a.turn > b.turn;  // neither correct: where the sample ended
}

// One Sample per sample from its turns <= t, in the order samples first appear.
std::vector<Sample> collapse(const std::vector<Sample>& turns, int t) {
  std::vector<Sample> out;
  std::map<std::string, size_t> at;
  for (const Sample& s : turns) {
    if (s.turn > t) continue;
    auto [it, fresh] = at.emplace(s.key, out.size());
    if (fresh) {
      out.push_back(s);
      continue;
    }
    Sample& best = out[it->second];
    int count = best.turns + 1;
    bool pkb = best.pkb_pass || s.pkb_pass;
    if (better_turn(s, best)) best = s;
    best.turns = count;
    best.pkb_pass = pkb;
  }
  return out;
}

void collapse_turns(LoadedResults& r) {
  for (auto& p : r.problems) p.samples = collapse(p.turns, std::numeric_limits<int>::max());
}

// The problems `pkb run` selected (manifest.json "selection": id, slug, folder, category, W allowed): one
// without any record (every sample hit a harness error, or the run stopped) is still a problem of the run.
void add_missing(LoadedResults& r) {
  if (!r.run.is_object() || !r.run.contains("selection") || !r.run["selection"].is_array()) return;
  for (const json& p : r.run["selection"]) {
    if (!p.is_object() || !p.contains("folder") || !p["folder"].is_string()) continue;
    std::string folder = p["folder"];
    bool seen = std::any_of(r.problems.begin(), r.problems.end(), [&](const auto& x) { return x.folder == folder; });
    if (!seen)
      r.problems.push_back({p.value("id", 0), p.value("slug", ""), folder, p.value("category", ""), {}, {}, true});
  }
}

// Problems by id, and a problem's samples by index (records without one keep their order), so that the scores
// never depend on the order records were appended in: two evaluation slots, or the shards of a run, interleave
// them differently, and the sums behind geomeans must be taken in one order to agree to the last bit.
void sort_problems(LoadedResults& r) {
  std::sort(r.problems.begin(), r.problems.end(), [](const ProblemSamples& a, const ProblemSamples& b) {
    return std::tie(a.id, a.folder) < std::tie(b.id, b.folder);
  });
  auto by_index = [](const Sample& a, const Sample& b) { return a.index < b.index; };
  for (ProblemSamples& p : r.problems) {
    std::stable_sort(p.samples.begin(), p.samples.end(), by_index);
    std::stable_sort(p.not_evaluated.begin(), p.not_evaluated.end(), by_index);
  }
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

// The records of one results file, added to r (later records supersede earlier ones, also across files).
void parse_lines(LoadedResults& r, std::map<std::string, size_t>& problem_at, std::istream& in,
                 const std::string& name) {
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = name + ":" + std::to_string(no);
    json j = json::parse(line, nullptr, false);
    try {
      if (j.is_discarded()) throw Error("not valid JSON");
      ResultRecord rec = record_from_json(j);
      if (rec.status == "generation_failed" && rec.generation_status == "error") {
        // Written by an older pkb run: the service never answered, which is no sample (the model was not heard).
        r.warnings.push_back(where + ": ignored: a service failure (no answer from the API) is not a sample");
        continue;
      }
      add_record(r, problem_at, rec, make_sample(rec, r.warnings, where));
      note_settings(r, rec);
      ++r.records;
    } catch (const Error& e) {
      ++r.malformed;
      r.warnings.push_back(where + ": skipped: " + e.what());
    }
  }
}

}  // namespace

LoadedResults parse_results(std::istream& in, const std::string& name) { return parse_results({{&in, name}}); }

LoadedResults parse_results(const std::vector<std::pair<std::istream*, std::string>>& inputs) {
  LoadedResults r;
  r.source = inputs.empty() ? "" : inputs.front().second;
  std::map<std::string, size_t> problem_at;
  for (const auto& [in, name] : inputs) parse_lines(r, problem_at, *in, name);
  collapse_turns(r);
  sort_problems(r);
  for (const auto& c : r.configurations) {
    add_distinct(r.settings["world"], c["world"]);
    add_distinct(r.settings["device"], c["device"]);
    add_distinct(r.settings["dtype"], c["dtype"]);
  }
  if (r.configurations.size() > 1)
    r.warnings.push_back(r.source + ": records mix configurations " + r.configurations.dump() + "; scored together");
  return r;
}

void attach_run(LoadedResults& r, nlohmann::json run) {
  r.run = std::move(run);
  add_missing(r);
  sort_problems(r);
}

int max_turn(const LoadedResults& r) {
  int t = 1;
  for (const auto& p : r.problems) {
    for (const auto& s : p.turns) t = std::max(t, s.turn);
    for (const auto& s : p.not_evaluated) t = std::max(t, s.turn);
  }
  return t;
}

LoadedResults at_turn(const LoadedResults& r, int t) {
  LoadedResults v = r;
  for (auto& p : v.problems) {
    p.samples = collapse(p.turns, t);
    std::erase_if(p.not_evaluated, [t](const Sample& s) { return s.turn > t; });
  }
  return v;
}

LoadedResults load_results(const std::filesystem::path& dir_or_jsonl) {
  namespace fs = std::filesystem;
  fs::path file = fs::is_directory(dir_or_jsonl) ? dir_or_jsonl / "results.jsonl" : dir_or_jsonl;
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot open");
  LoadedResults r = parse_results(in, file.string());
  fs::path dir = fs::absolute(file).lexically_normal().parent_path();
  r.source = (dir.filename() / file.filename()).string();
  attach_run(r, read_manifest(dir / "manifest.json", r.warnings));
  return r;
}

}  // namespace pkb::scoring
