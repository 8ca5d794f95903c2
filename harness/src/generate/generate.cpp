#include "generate/generate.h"

#include <cstdio>
#include <ctime>
#include <string_view>
#include <tuple>

#include "core/error.h"
#include "generate/output.h"
#include "models/cache.h"
#include "models/cost.h"
#include "models/dispatch.h"
#include "models/extract.h"
#include "prompt/template.h"

namespace pkb::generate {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kSchema = "pkb.generation/1";

fs::path sample_path(const char* dir, const ProblemSpec& spec, int sample, const char* ext) {
  return fs::path(dir) / spec.folder() / ("sample_" + std::to_string(sample) + ext);
}

SampleRecord blank_record(const ProblemSpec& spec, int sample, const std::string& model) {
  SampleRecord r;
  r.problem = spec.folder();
  r.problem_id = spec.id;
  r.sample = sample;
  r.model = model;
  return r;
}

// Why this problem is not asked at this W (nothing is sent for it), or nullopt.
std::optional<std::string> skip_reason(const ProblemSpec& spec, const GenerateOptions& o) {
  auto params = spec.parameters;
  for (const auto& [k, v] : o.prompt.params)
    if (params.count(k)) params[k] = v;  // unknown names are reported by build_prompt
  return world_size_violation(spec, o.prompt.world, params);
}

// Writes a sample's candidate, raw answer and reasoning, removing those it lacks so that the directory always
// agrees with generations.jsonl. Returns the candidate's and the raw answer's paths ("" when absent).
std::pair<std::string, std::string> settle_files(const fs::path& out, const ProblemSpec& spec, int k,
                                                 const std::optional<std::string>& code,
                                                 const std::optional<std::string>& raw,
                                                 const std::optional<std::string>& reasoning) {
  place_file(out, sample_path("raw", spec, k, ".reasoning.txt"), reasoning);
  return {place_file(out, sample_path("candidates", spec, k, ".cu"), code),
          place_file(out, sample_path("raw", spec, k, ".txt"), raw)};
}

// ---- offline models ---------------------------------------------------------------------------------------

constexpr std::string_view kReplay = "replay:";

bool is_replay(const std::string& model) { return model.rfind(kReplay, 0) == 0; }
fs::path replay_dir(const std::string& model) { return fs::absolute(model.substr(kReplay.size())); }
bool is_offline(const std::string& model) { return model == "expert" || is_replay(model); }

// The file an offline model takes sample `k` from, or the status and reason when there is none.
std::optional<fs::path> offline_file(const std::string& model, const ProblemSpec& spec, int k, SampleRecord& r) {
  std::vector<fs::path> tries;
  if (model == "expert") {
    tries = {spec.dir / "solution.cu"};
    r.status = SampleStatus::no_solution;
  } else {
    fs::path dir = replay_dir(model);
    tries = {dir / spec.folder() / ("sample_" + std::to_string(k) + ".cu"), dir / (spec.folder() + ".cu")};
    r.status = SampleStatus::missing;
  }
  for (const auto& t : tries)
    if (fs::is_regular_file(t)) return t;
  r.message = "no " + tries[0].string() + (tries.size() > 1 ? " or " + tries[1].string() : "");
  return std::nullopt;
}

void run_offline(const std::vector<const ProblemSpec*>& sel, const GenerateOptions& o, const fs::path& out,
                 std::vector<SampleRecord>& records, ProgressLine& progress) {
  if (is_replay(o.model) && !fs::is_directory(replay_dir(o.model)))
    throw Error("--model " + o.model + ": no such directory");
  for (const ProblemSpec* spec : sel)
    for (int k = 0; k < o.samples; ++k) {
      if (o.wanted && !o.wanted(*spec, k)) continue;
      SampleRecord r = blank_record(*spec, k, o.model);
      std::optional<std::string> code;
      if (auto file = offline_file(o.model, *spec, k, r)) {
        code = prompt::read_text(*file);
        r.status = SampleStatus::ok;
      }
      r.candidate = settle_files(out, *spec, k, code, std::nullopt, std::nullopt).first;
      progress.add(r);
      records.push_back(std::move(r));
    }
}

// ---- language models --------------------------------------------------------------------------------------

// An answer kept although its stop reason is not one pkb knows as a normal end: said, never silent.
std::string unknown_finish_message(const models::Reply& reply) {
  return "kept, but the provider's stop reason " +
         (reply.finish_raw.empty() ? std::string("is missing") : "'" + reply.finish_raw + "' is not one pkb knows") +
         ": the answer may be incomplete";
}

// Files, status and message of one sample from its reply. Called as replies arrive, so a run interrupted
// half-way has already written everything it received.
void settle(SampleRecord& r, const models::Reply& reply, const ProblemSpec& spec, const fs::path& out) {
  r.reply = reply;
  std::optional<std::string> code, raw, reasoning;
  if (!reply.ok()) {
    // A 400 is about this request (models::BatchStop decides when it is the configuration's, after the batch).
    r.status = reply.error == models::ErrorKind::bad_request ? SampleStatus::bad_request : SampleStatus::error;
    r.message = reply.error_message;
  } else {
    raw = reply.text;
    if (!reply.reasoning.empty()) reasoning = reply.reasoning;
    models::Extraction ex = models::extract_code(reply.text, reply.finish);
    r.status = ex.status == models::CodeStatus::ok        ? SampleStatus::ok
               : ex.status == models::CodeStatus::no_code ? SampleStatus::no_code
                                                          : SampleStatus::truncated;
    // Whatever code a filtered or refused answer holds is at best half a kernel.
    if (reply.finish == models::FinishReason::refused) r.status = SampleStatus::refused;
    if (r.status == SampleStatus::ok) code = ex.code;
    if (r.status == SampleStatus::no_code) r.message = "the answer holds no fenced CUDA block";
    if (r.status == SampleStatus::truncated) r.message = "the answer was cut off (" + reply.finish_raw + ")";
    if (r.status == SampleStatus::refused) r.message = "the provider stopped the answer (" + reply.finish_raw + ")";
    if (r.status == SampleStatus::ok && reply.finish == models::FinishReason::other)
      r.message = unknown_finish_message(reply);
  }
  std::tie(r.candidate, r.raw) = settle_files(out, spec, r.sample, code, raw, reasoning);
}

struct Batch {
  std::vector<models::Request> requests;
  std::vector<size_t> record_of;            // request index -> record index
  std::vector<const ProblemSpec*> spec_of;  // request index -> problem
};

// One prompt per problem (saved under OUT/prompts), K requests from it; skipped problems get their records now.
// A later turn: the follow-ups of the selection's problems (a problem the W forbids has none).
Batch plan_follow_ups(const std::vector<const ProblemSpec*>& sel, const GenerateOptions& o,
                      std::vector<SampleRecord>& records, std::string& topology) {
  Batch b;
  for (const ProblemSpec* spec : sel) {
    std::optional<prompt::Prompt> p;
    for (const FollowUp& f : o.follow_ups) {
      if (f.problem != spec->folder()) continue;
      if (!p) p = prompt::build_prompt(*spec, o.prompt);
      topology = p->topology;
      records.push_back(blank_record(*spec, f.sample, o.model));
      records.back().turn = o.turn;
      b.requests.push_back(make_follow_up_request(*p, o.max_tokens, o.temperature, f));
      b.record_of.push_back(records.size() - 1);
      b.spec_of.push_back(spec);
    }
  }
  return b;
}

Batch plan(const std::vector<const ProblemSpec*>& sel, const GenerateOptions& o, const fs::path& out,
           std::vector<SampleRecord>& records, ProgressLine& progress, std::string& topology) {
  if (o.turn > 1) return plan_follow_ups(sel, o, records, topology);
  Batch b;
  for (const ProblemSpec* spec : sel) {
    auto why = skip_reason(*spec, o);
    std::optional<prompt::Prompt> p;
    if (!why) p = prompt::build_prompt(*spec, o.prompt);
    if (p) topology = p->topology;
    if (p)
      place_file(out, fs::path("prompts") / (spec->folder() + ".json"),
                 models::to_json(make_request(*p, o.max_tokens, o.temperature, 0)).dump(2) + "\n");
    for (int k = 0; k < o.samples; ++k) {
      if (o.wanted && !o.wanted(*spec, k)) continue;
      records.push_back(blank_record(*spec, k, o.model));
      if (!p) {
        records.back().status = SampleStatus::skipped;
        records.back().message = *why;
        settle_files(out, *spec, k, std::nullopt, std::nullopt, std::nullopt);
        progress.add(records.back());
        continue;
      }
      b.requests.push_back(make_request(*p, o.max_tokens, o.temperature, k));
      b.record_of.push_back(records.size() - 1);
      b.spec_of.push_back(spec);
    }
  }
  return b;
}

void run_model(const std::vector<const ProblemSpec*>& sel, const GenerateOptions& o, GenerateResult& res,
               ProgressLine& progress) {
  const fs::path& out = res.out_dir;
  std::vector<SampleRecord>& records = res.records;
  models::ModelName name = models::parse_model_name(o.model);
  auto provider = models::make_provider(name, o.provider);
  auto prices = models::PriceTable::load(repo_root() / "pricing" / "prices.json");
  models::ReplyCache cache(o.cache_dir.empty() ? out / "cache" : o.cache_dir);
  Batch b = plan(sel, o, out, records, progress, res.topology);
  models::BatchStop stop;
  models::DispatchOptions d;
  d.max_in_flight = o.concurrency;
  d.cache = &cache;
  d.stop = &stop;
  for (const ProblemSpec* spec : b.spec_of) d.group_of.push_back(spec->folder());
  d.on_reply = [&](const models::Progress& pr) {
    SampleRecord& r = records[b.record_of[pr.index]];
    settle(r, pr.reply, *b.spec_of[pr.index], out);
    r.cost_usd = models::estimate_cost(prices, name.provider, name.model, pr.reply.usage);
    progress.add(r);
  };
  std::vector<models::Reply> replies = models::run_requests(*provider, b.requests, d);
  res.stopped = stop.reason();
  for (size_t i = 0; i < replies.size(); ++i) {
    SampleRecord& r = records[b.record_of[i]];
    // The same 400 for several problems: the configuration's fault, not these requests': no sample, asked again.
    if (stop.configuration_fault(replies[i])) r.status = SampleStatus::error;
    res.unknown_finish +=
        r.status == SampleStatus::ok && replies[i].ok() && replies[i].finish == models::FinishReason::other;
  }
}

json manifest(const GenerateOptions& o, const GenerateResult& res) {
  json counts = json::object();
  for (auto s : {SampleStatus::ok, SampleStatus::no_code, SampleStatus::truncated, SampleStatus::refused,
                 SampleStatus::bad_request, SampleStatus::error, SampleStatus::skipped, SampleStatus::no_solution,
                 SampleStatus::missing})
    if (size_t n = res.count(s)) counts[sample_status_name(s)] = n;
  return {{"schema", kSchema},
          {"model", o.model},
          {"problems", o.problems},
          {"samples", o.samples},
          {"world", o.prompt.world},
          {"topology", res.topology.empty() ? json() : json(res.topology)},
          {"variant", prompt::variant_name(o.prompt.variant)},
          {"dtype", dtype_name(o.prompt.dtype)},
          {"params", o.prompt.params},
          {"max_tokens", o.max_tokens},
          {"temperature", o.temperature ? json(*o.temperature) : json()},  // asked for; records say what was sent
          {"stream", o.provider.stream},  // asked for; each record's "streamed" says how its answer came
          {"stopped", res.stopped.empty() ? json() : json(res.stopped)},
          {"finished_at", std::time(nullptr)},
          {"counts", counts}};
}

}  // namespace

const char* sample_status_name(SampleStatus s) {
  switch (s) {
    case SampleStatus::ok:
      return "ok";
    case SampleStatus::no_code:
      return "no_code";
    case SampleStatus::truncated:
      return "truncated";
    case SampleStatus::refused:
      return "refused";
    case SampleStatus::bad_request:
      return "bad_request";
    case SampleStatus::error:
      return "error";
    case SampleStatus::skipped:
      return "skipped";
    case SampleStatus::no_solution:
      return "no_solution";
    case SampleStatus::missing:
      return "missing";
  }
  return "?";
}

bool model_failed(SampleStatus s) {
  return s == SampleStatus::no_code || s == SampleStatus::truncated || s == SampleStatus::refused ||
         s == SampleStatus::bad_request;
}

nlohmann::ordered_json SampleRecord::to_json() const {
  using ojson = nlohmann::ordered_json;
  auto or_null = [](const std::string& s) { return s.empty() ? ojson() : ojson(s); };
  ojson j = {{"schema", kSchema},
             {"problem", problem},
             {"problem_id", problem_id},
             {"sample", sample},
             {"turn", turn},
             {"model", model},
             {"status", sample_status_name(status)},
             {"finish", nullptr},
             {"finish_raw", nullptr},
             {"input_tokens", nullptr},
             {"output_tokens", nullptr},
             {"reasoning_tokens", nullptr},
             {"cost_usd", cost_usd ? ojson(*cost_usd) : ojson()},
             {"spent_usd", cost_usd ? ojson(*cost_usd) : ojson()},  // this invocation's spend: 0 from the cache
             {"latency_s", 0},
             {"attempts", 0},
             {"from_cache", false},
             {"streamed", false},
             {"broken_streams", 0},
             {"error", nullptr},
             {"message", or_null(message)},
             {"candidate", or_null(candidate)},
             {"raw", or_null(raw)}};
  if (!reply) return j;
  if (reply->ok())
    j["finish"] = models::finish_reason_name(reply->finish), j["finish_raw"] = reply->finish_raw;
  else
    j["error"] = models::error_kind_name(reply->error);
  if (reply->usage.known) {
    j["input_tokens"] = reply->usage.input_tokens;
    j["output_tokens"] = reply->usage.output_tokens;
    j["reasoning_tokens"] = reply->usage.reasoning_tokens;
  }
  j["latency_s"] = reply->latency_s;
  j["attempts"] = reply->attempts;
  j["from_cache"] = reply->from_cache;
  j["streamed"] = reply->streamed;
  j["broken_streams"] = reply->broken_streams;  // attempts the provider may bill beyond the answer
  if (reply->from_cache && cost_usd) j["spent_usd"] = 0.0;
  j["sent"] = reply->sent;
  return j;
}

size_t GenerateResult::count(SampleStatus s) const {
  size_t n = 0;
  for (const auto& r : records) n += r.status == s;
  return n;
}

models::Request make_request(const prompt::Prompt& p, int max_tokens, std::optional<double> temperature, int sample) {
  models::Request r;
  r.system = p.system;
  r.user = p.user;
  r.max_output_tokens = max_tokens;
  r.temperature = temperature;
  r.sample_index = sample;
  return r;
}

models::Request make_follow_up_request(const prompt::Prompt& p, int max_tokens, std::optional<double> temperature,
                                       const FollowUp& f) {
  if (f.answers.empty() || f.answers.size() != f.follow_ups.size())
    throw Error(f.problem + " sample " + std::to_string(f.sample) + ": a follow-up needs one answer per follow-up");
  models::Request r = make_request(p, max_tokens, temperature, f.sample);
  std::string user = r.user;
  for (size_t i = 0; i < f.answers.size(); ++i) {
    // An API rejects an empty assistant turn (Anthropic) or drops it: say that the answer was empty.
    r.history.push_back({user, f.answers[i].empty() ? "(empty answer)" : f.answers[i]});
    user = f.follow_ups[i];
  }
  r.user = user;
  return r;
}

GenerateResult run_generate(const Catalog& catalog, const GenerateOptions& o) {
  if (o.samples < 1) throw Error("--samples must be at least 1");
  if (o.turn > 1 && is_offline(o.model))
    throw Error("--model " + o.model + " cannot take feedback: later turns need a language model");
  std::vector<const ProblemSpec*> sel = catalog.select(o.problems);
  GenerateResult res;
  res.out_dir = fs::absolute(o.out_dir.empty() ? fs::path("results") / "generate" / file_safe(o.model) : o.out_dir);
  fs::create_directories(res.out_dir);
  size_t total = o.turn > 1 ? o.follow_ups.size() : 0;
  if (o.turn == 1)
    for (const ProblemSpec* spec : sel)
      for (int k = 0; k < o.samples; ++k) total += !o.wanted || o.wanted(*spec, k);
  ProgressLine progress(total, o.progress);
  if (is_offline(o.model))
    run_offline(sel, o, res.out_dir, res.records, progress);
  else
    run_model(sel, o, res, progress);
  progress.finish();
  if (!res.stopped.empty())
    std::fprintf(stderr, "pkb generate: stopped early, %zu requests not answered: %s\n", res.count(SampleStatus::error),
                 res.stopped.c_str());
  if (size_t n = res.count(SampleStatus::bad_request))
    std::fprintf(stderr,
                 "pkb generate: warning: %zu requests rejected by the model service (bad_request): see "
                 "their records' message\n",
                 n);
  if (res.unknown_finish)
    std::fprintf(stderr,
                 "pkb generate: warning: %zu answers kept whose stop reason pkb does not know as a normal "
                 "end: see their records' finish_raw and message\n",
                 res.unknown_finish);
  write_records(res.out_dir, res.records);
  place_file(res.out_dir, "generation.json",
             manifest(o, res).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return res;
}

}  // namespace pkb::generate
