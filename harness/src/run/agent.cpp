#include "run/agent.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "core/parallel.h"
#include "core/result_record.h"
#include "core/utf8.h"
#include "models/cache.h"
#include "models/cost.h"
#include "models/dispatch.h"
#include "models/extract.h"
#include "prompt/feedback.h"
#include "prompt/template.h"
#include "run/agent_loop.h"
#include "run/slot_queue.h"
#include "scoring/records.h"

namespace pkb::run {

nlohmann::json AgentBudget::to_json() const {
  return {{"steps", steps}, {"tokens", tokens}, {"wall_s", wall_s}, {"gpu_s", gpu_s}};
}

uint64_t judge_seed(uint64_t seed) {
  uint64_t s = (seed ^ 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;  // splitmix-style: far from every small seed
  return s == seed ? s + 1 : s;
}

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using models::Message;

std::vector<models::ToolSpec> agent_tools() {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"source", {{"type", "string"}, {"description", "The complete kernel source file (not a diff)."}}}}},
                 {"required", {"source"}},
                 {"additionalProperties", false}};
  return {
      {kAgentTools[0], "Compile the kernel source as a candidate is compiled; returns the diagnostics, or ok.", schema},
      {kAgentTools[1],
       "Evaluate the kernel source on the benchmark's devices: correctness checks, then timing against the "
       "baselines. Returns the status, mismatches, times, speedups and SOL%.",
       schema},
      {kAgentTools[2], "Submit the kernel source as the final answer; ends the task.", schema}};
}

// How a sample's conversation ended; "" while it goes on.
struct Ending {
  std::string how;      // submitted, answered, budget_exhausted, no_code, truncated, refused
  std::string message;  // why, for the record
  std::string answer;   // the judged source's path, relative to the run directory (submitted, answered)
};

// Everything a transcript says about a sample so far; rebuilt by replaying it on resume.
struct AgentState {
  std::vector<Message> conversation;  // after the first prompt
  int steps = 0, requests = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  double cost_usd = 0;
  bool cost_known = true;
  double gpu_s = 0, wall_base_s = 0;  // wall_base_s: the sample's wall time in earlier invocations
  std::map<std::string, int> tools_used;
  std::optional<models::Reply> last_reply;  // the latest reply, when nothing came after it but its tool results
  size_t results_of_last = 0;               // tool results recorded for it
  Ending end;
};

Message assistant_message(const models::Reply& r) {
  // An empty assistant turn is rejected by some APIs (Anthropic): say that it was empty.
  bool blank = r.text.find_first_not_of(" \t\r\n") == std::string::npos;
  return {Message::Role::assistant, blank && r.tool_calls.empty() ? "(empty reply)" : r.text, r.tool_calls, {}};
}

void add_result(AgentState& st, const models::ToolResult& t) {
  if (st.conversation.empty() || st.conversation.back().role != Message::Role::tool)
    st.conversation.push_back({Message::Role::tool, "", {}, {}});
  st.conversation.back().tool_results.push_back(t);
}

const char* kNudge =
    "Your reply was empty. Call one of the tools (compile_kernel, evaluate_kernel, submit_kernel), or answer with "
    "the complete kernel in one ```cuda fenced block.";

class AgentSample {
 public:
  AgentSample(const ProblemSpec& spec, int sample, const RunOptions& o, const generate::GenerateOptions& g,
              const fs::path& run_dir, std::string devices)
      : spec_(spec), sample_(sample), o_(o), g_(g), run_dir_(run_dir), devices_(std::move(devices)) {
    rel_dir_ = fs::path("agent") / spec.folder();
    transcript_ = run_dir_ / rel_dir_ / ("sample_" + std::to_string(sample) + ".jsonl");
  }

  /// Runs (or resumes) the conversation to its end and returns the judged record; nullopt when the model service
  /// failed (service_error says how): the sample stays unrecorded and the next invocation resumes it.
  std::optional<ResultRecord> run(models::Provider& provider, const models::ReplyCache& cache,
                                  const models::PriceTable& prices);
  std::string service_error;
  bool stops_batch = false;

 private:
  void log(json line) {
    line["wall_s"] = wall_s();
    append_line(transcript_, line.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  double wall_s() const { return st_.wall_base_s + std::chrono::duration<double>(Clock::now() - start_).count(); }
  void replay(const models::Request& first);
  bool over_budget(const char* what);
  void process_reply(const models::Reply& r, size_t first);
  void end_without_call(const models::Reply& r);
  void run_call(const models::ToolCall& call);
  std::string run_tool(const std::string& name, const std::string& source, int step, bool& is_error, json& extra);
  fs::path save_source(const std::string& name, const std::string& source);
  ResultRecord judge();

  const ProblemSpec& spec_;
  int sample_;
  const RunOptions& o_;
  const generate::GenerateOptions& g_;
  fs::path run_dir_, rel_dir_, transcript_;
  std::string devices_;
  AgentState st_;
  Clock::time_point start_ = Clock::now();
};

models::Request first_request(const ProblemSpec& spec, int sample, const RunOptions& o,
                              const generate::GenerateOptions& g) {
  prompt::Prompt p = prompt::build_prompt(spec, g.prompt);
  fs::path dir = g.prompt.prompts_dir.empty() ? repo_root() / "prompts" : g.prompt.prompts_dir;
  const AgentBudget& b = o.agent.budget;
  std::string extra;
  if (b.tokens) extra += ", " + std::to_string(b.tokens) + " tokens";
  if (b.wall_s > 0) extra += ", " + std::to_string(static_cast<long>(b.wall_s)) + " seconds of wall time";
  if (b.gpu_s > 0) extra += ", " + std::to_string(static_cast<long>(b.gpu_s)) + " seconds of evaluation";
  std::string tools =
      prompt::render_file(dir / "agent.txt", {{"max_steps", std::to_string(b.steps)}, {"budget_extra", extra}});
  models::Request r = generate::make_request(p, g.max_tokens, g.temperature, sample);
  r.user += "\n\n" + tools;
  r.tools = agent_tools();
  return r;
}

// Rebuilds the state from the transcript's lines; a line that does not parse (cut by a kill: repaired before) or
// does not belong to this sample is an error, never silently skipped.
void AgentSample::replay(const models::Request& first) {
  std::ifstream in(transcript_);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) throw Error(transcript_.string() + ": line " + std::to_string(n) + " is not JSON");
    std::string type = j.value("type", "");
    st_.wall_base_s = j.value("wall_s", st_.wall_base_s);
    if (type == "start" && (j.value("user", "") != first.user || j.value("system", "") != first.system))
      throw Error(transcript_.string() + ": the transcript began with another prompt: remove it to start over");
    if (type == "reply") {
      models::Reply r = models::reply_from_json(j.at("reply"));
      ++st_.requests;
      st_.input_tokens += r.usage.input_tokens, st_.output_tokens += r.usage.output_tokens;
      if (j.contains("cost_usd") && j["cost_usd"].is_number())
        st_.cost_usd += j["cost_usd"].get<double>();
      else
        st_.cost_known = false;
      st_.conversation.push_back(assistant_message(r));
      st_.last_reply = r, st_.results_of_last = 0;
    } else if (type == "tool_result") {
      add_result(st_, {j.at("call_id"), j.at("name"), j.at("content"), j.value("is_error", false)});
      ++st_.results_of_last;
      if (j.value("counted", true)) ++st_.steps, ++st_.tools_used[j.value("tool", "invalid")];
      st_.gpu_s += j.value("gpu_s", 0.0);
      if (j.value("tool", "") == kAgentTools[2])
        st_.end = {"submitted", "submitted with submit_kernel", j.at("source")};
    } else if (type == "nudge") {
      ++st_.steps;
      st_.conversation.push_back({Message::Role::user, j.at("text"), {}, {}});
      st_.last_reply.reset();
    } else if (type == "end") {
      st_.end = {j.at("end"), j.value("message", ""), j.value("answer", "")};
    }
  }
  if (st_.last_reply && st_.results_of_last >= st_.last_reply->tool_calls.size() && !st_.last_reply->tool_calls.empty())
    st_.last_reply.reset();  // every call answered: the next step is a request
}

bool AgentSample::over_budget(const char* what) {
  const AgentBudget& b = o_.agent.budget;
  std::string why;
  if (b.steps > 0 && st_.steps >= b.steps) why = "steps: " + std::to_string(b.steps) + " tool calls";
  if (b.tokens > 0 && st_.input_tokens + st_.output_tokens >= b.tokens)
    why = "tokens: " + std::to_string(st_.input_tokens + st_.output_tokens) + " of " + std::to_string(b.tokens);
  if (b.wall_s > 0 && wall_s() >= b.wall_s) why = "wall: " + std::to_string(wall_s()) + " s";
  if (b.gpu_s > 0 && st_.gpu_s >= b.gpu_s && std::string(what) == "evaluate_kernel")
    why = "gpu: " + std::to_string(st_.gpu_s) + " s of evaluation";
  if (why.empty()) return false;
  st_.end = {"budget_exhausted", std::string("budget spent before ") + what + " (" + why + ")", ""};
  log({{"type", "end"}, {"end", st_.end.how}, {"message", st_.end.message}});
  return true;
}

std::optional<ResultRecord> AgentSample::run(models::Provider& provider, const models::ReplyCache& cache,
                                             const models::PriceTable& prices) {
  models::Request req = first_request(spec_, sample_, o_, g_);
  fs::create_directories(transcript_.parent_path());
  repair_jsonl_tail(transcript_);
  if (fs::exists(transcript_) && fs::file_size(transcript_) > 0) {
    replay(req);
  } else {
    log({{"type", "start"},
         {"problem", spec_.folder()},
         {"sample", sample_},
         {"model", o_.model},
         {"time", utc_now_iso8601()},
         {"system", req.system},
         {"user", req.user},
         {"tools", models::tools_json(req.tools)},
         {"budget", o_.agent.budget.to_json()}});
  }
  // The step in flight when an earlier invocation stopped: the rest of its reply's calls (or its ending).
  if (st_.end.how.empty() && st_.last_reply) process_reply(*st_.last_reply, st_.results_of_last);
  models::ModelName name = provider.name();
  while (st_.end.how.empty()) {
    if (over_budget("the next request")) break;
    req.conversation = st_.conversation;
    log({{"type", "request"},
         {"index", st_.requests},
         {"messages", req.conversation.size() + 1},
         {"cache_key", models::ReplyCache::key(name, req)},
         {"max_output_tokens", req.max_output_tokens}});
    models::Reply r = models::complete_cached(provider, &cache, req);
    if (!r.ok()) {
      service_error = std::string(models::error_kind_name(r.error)) + ": " + r.error_message;
      stops_batch = models::stops_batch(r.error);
      log({{"type", "service_error"}, {"error", service_error}});
      return std::nullopt;
    }
    std::optional<double> cost = models::estimate_cost(prices, name.provider, name.model, r.usage);
    log({{"type", "reply"},
         {"index", st_.requests},
         {"reply", models::to_json(r)},
         {"cost_usd", cost ? json(*cost) : json()}});
    ++st_.requests;
    st_.input_tokens += r.usage.input_tokens, st_.output_tokens += r.usage.output_tokens;
    if (cost)
      st_.cost_usd += *cost;
    else
      st_.cost_known = false;
    st_.conversation.push_back(assistant_message(r));
    const AgentBudget& b = o_.agent.budget;
    if (b.tokens > 0 && st_.input_tokens + st_.output_tokens > b.tokens) {
      over_budget("this reply's tool calls");
      break;
    }
    process_reply(r, 0);
  }
  return judge();
}

void AgentSample::process_reply(const models::Reply& r, size_t first) {
  if (r.tool_calls.empty()) return end_without_call(r);
  for (size_t i = first; i < r.tool_calls.size(); ++i) {
    const models::ToolCall& call = r.tool_calls[i];
    if (st_.end.how == "submitted") {
      // Calls after submit_kernel in the same reply: answered (in the transcript), never run.
      std::string text = "error: not run: submit_kernel already ended the task";
      log({{"type", "tool_result"},
           {"call_id", call.id},
           {"name", call.name},
           {"content", text},
           {"is_error", true},
           {"counted", false}});
      add_result(st_, {call.id, call.name, text, true});
      continue;
    }
    if (!st_.end.how.empty() || over_budget(call.name == kAgentTools[1] ? kAgentTools[1] : "a tool call")) return;
    run_call(call);
  }
  if (st_.end.how == "submitted") log({{"type", "end"}, {"end", "submitted"}, {"answer", st_.end.answer}});
}

void AgentSample::end_without_call(const models::Reply& r) {
  bool blank = r.text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (blank && r.finish != models::FinishReason::refused) {
    // An empty reply is the model's mistake, not its answer: it is told so, at the cost of a step.
    if (over_budget("a reply after an empty one")) return;
    ++st_.steps;
    log({{"type", "nudge"}, {"text", kNudge}});
    st_.conversation.push_back({Message::Role::user, kNudge, {}, {}});
    return;
  }
  models::Extraction ex = models::extract_code(r.text, r.finish);
  if (r.finish == models::FinishReason::refused) {
    st_.end = {"refused", "the provider stopped the answer (" + r.finish_raw + ")", ""};
  } else if (ex.status == models::CodeStatus::ok) {
    st_.end = {"answered", "answered without a tool call", save_source("answer", ex.code).string()};
  } else if (ex.status == models::CodeStatus::truncated) {
    st_.end = {"truncated", "the answer was cut off (" + r.finish_raw + ")", ""};
  } else {
    st_.end = {"no_code", "a reply without a tool call and without a fenced code block", ""};
  }
  log({{"type", "end"}, {"end", st_.end.how}, {"message", st_.end.message}, {"answer", st_.end.answer}});
}

fs::path AgentSample::save_source(const std::string& name, const std::string& source) {
  fs::path rel = rel_dir_ / ("sample_" + std::to_string(sample_)) / (name + ".cu");
  fs::create_directories((run_dir_ / rel).parent_path());
  write_file_atomically(run_dir_ / rel, source);
  return rel;
}

// The call's `source`, or the tool error the model reads instead.
std::optional<std::string> source_argument(const models::ToolCall& call, size_t limit, std::string& error) {
  bool known = false;
  for (const char* t : kAgentTools) known = known || call.name == t;
  if (!known) {
    error = "error: unknown tool '" + utf8_prefix(call.name, 200) +
            "': the tools are compile_kernel, evaluate_kernel and submit_kernel";
    return std::nullopt;
  }
  json args = json::parse(call.arguments, nullptr, false);
  if (args.is_discarded() || !args.is_object()) {
    error = "error: the arguments are not a JSON object: " + utf8_prefix(call.arguments, 200);
    return std::nullopt;
  }
  if (!args.contains("source") || !args["source"].is_string()) {
    error = std::string("error: the argument `source` is ") + (args.contains("source") ? "not a string" : "missing") +
            ": pass the complete kernel source as {\"source\": \"...\"}";
    return std::nullopt;
  }
  std::string source = args["source"].get<std::string>();
  if (source.size() > limit) {
    error = "error: the source is " + std::to_string(source.size()) + " bytes; the limit is " + std::to_string(limit) +
            " bytes";
    return std::nullopt;
  }
  return source;
}

void AgentSample::run_call(const models::ToolCall& call) {
  int step = ++st_.steps;
  std::string error;
  std::optional<std::string> source = source_argument(call, o_.agent.max_source_bytes, error);
  bool is_error = !source;
  json extra = json::object();
  auto t0 = Clock::now();
  std::string content = source ? run_tool(call.name, *source, step, is_error, extra) : error;
  content = valid_utf8(content);
  std::string tool = source ? call.name : "invalid";
  ++st_.tools_used[tool];
  json line = {{"type", "tool_result"},
               {"step", step},
               {"call_id", call.id},
               {"name", call.name},
               {"tool", tool},
               {"content", content},
               {"is_error", is_error},
               {"counted", true},
               {"seconds", std::chrono::duration<double>(Clock::now() - t0).count()}};
  line.update(extra);
  log(line);
  add_result(st_, {call.id, call.name, content, is_error});
}

std::string AgentSample::run_tool(const std::string& name, const std::string& source, int step, bool& is_error,
                                  json& extra) {
  fs::path rel = save_source(name == kAgentTools[2] ? "submitted" : "step_" + std::to_string(step), source);
  extra["source"] = rel.string();
  if (name == kAgentTools[2]) {
    st_.end = {"submitted", "submitted with submit_kernel", rel.string()};
    return "submitted: the kernel will be judged by a fresh evaluation";
  }
  if (name == kAgentTools[0]) {
    CompileOptions co = eval_compile_options(o_.eval);
    CompileResult c;
    try {
      c = compile_candidate(run_dir_ / rel, co);
    } catch (const Error& e) {  // the compiler (or its sandbox) could not be started: pkb's failure, not the kernel's
      is_error = true;
      extra["status"] = "harness_error";
      return std::string("the compile tool failed: ") + e.what();
    }
    extra["status"] = compile_status_name(c.status);
    if (c.status == CompileStatus::ok) return "ok";
    is_error = false;  // the tool worked; the kernel did not compile
    std::string text = std::string(compile_status_name(c.status)) + "\n";
    for (const LintFinding& f : c.lint) text += "line " + std::to_string(f.line) + ": " + f.rule + ": " + f.text + "\n";
    return utf8_prefix(text + trim_log(c.log), prompt::kMaxFeedbackBytes);
  }
  EvalOptions e = o_.eval;
  e.visible_devices = devices_;
  e.out_dir = run_dir_ / "eval" / ("sample_" + std::to_string(sample_) + "_agent");
  auto t0 = Clock::now();
  ResultRecord rec = record_from_json(evaluate_candidate(spec_, run_dir_ / rel, e).record);
  double gpu = std::chrono::duration<double>(Clock::now() - t0).count();
  st_.gpu_s += gpu;
  extra["gpu_s"] = gpu;
  extra["status"] = rec.status;
  if (rec.speedup) extra["speedup"] = *rec.speedup;
  return prompt::feedback_text(rec);
}

ResultRecord base_record(const ProblemSpec& spec, int sample, const RunOptions& o) {
  ResultRecord r;
  r.time = utc_now_iso8601();
  r.problem_id = spec.id;
  r.problem_slug = spec.slug;
  r.problem_folder = spec.folder();
  r.problem_category = category_name(spec.category);
  r.candidate_sha256 = "agent:" + spec.folder() + ":" + std::to_string(sample);
  r.world = o.world;
  r.device = enum_name(o.eval.device);
  r.dtype = o.eval.dtype;
  return r;
}

ResultRecord AgentSample::judge() {
  ResultRecord r;
  const std::string& how = st_.end.how;
  if (how == "submitted" || how == "answered") {
    EvalOptions e = o_.eval;
    e.seed = judge_seed(o_.eval.seed);  // inputs no tool evaluation drew
    e.visible_devices = devices_;
    e.out_dir = run_dir_ / "eval" / ("sample_" + std::to_string(sample_) + "_judged");
    r = record_from_json(evaluate_candidate(spec_, run_dir_ / st_.end.answer, e).record);
  } else if (how == "budget_exhausted") {
    r = base_record(spec_, sample_, o_);
    r.status = result_status_name(ResultStatus::budget_exhausted);
    r.message = st_.end.message;
  } else {
    r = base_record(spec_, sample_, o_);
    r.status = result_status_name(ResultStatus::generation_failed);
    r.generation_status = how;
    r.generation_message = st_.end.message;
    r.message = "no kernel to judge: " + how + ": " + st_.end.message;
  }
  r.sample = sample_;
  r.model = o_.model;
  r.input_tokens = st_.input_tokens, r.output_tokens = st_.output_tokens;
  if (st_.cost_known) r.cost_usd = st_.cost_usd;
  json used = json::array();
  for (const auto& [tool, n] : st_.tools_used)
    if (n) used.push_back(tool);
  r.fields["agent"] = {{"end", how},
                       {"steps", st_.steps},
                       {"requests", st_.requests},
                       {"tool_calls", st_.tools_used},
                       {"tools_used", used},
                       {"input_tokens", st_.input_tokens},
                       {"output_tokens", st_.output_tokens},
                       {"cost_usd", st_.cost_known ? json(st_.cost_usd) : json()},
                       {"gpu_s", st_.gpu_s},
                       {"wall_s", wall_s()},
                       {"budget", o_.agent.budget.to_json()},
                       {"judge_seed", std::to_string(judge_seed(o_.eval.seed))},
                       {"transcript", (rel_dir_ / transcript_.filename()).string()}};
  return r;
}

// Samples already recorded, by sample key.
std::set<std::string> recorded_samples(const fs::path& results) {
  std::set<std::string> out;
  if (!fs::exists(results)) return out;
  for (const auto& p : scoring::load_results(results).problems)
    for (const auto& s : p.turns) out.insert(s.key);
  return out;
}

}  // namespace

void run_agent_samples(const std::vector<const ProblemSpec*>& problems, const RunOptions& o,
                       const generate::GenerateOptions& g, const std::vector<std::string>& slots,
                       const std::function<bool(const ProblemSpec*, int)>& mine, const fs::path& results,
                       RunSummary& sum) {
  std::set<std::string> done = recorded_samples(results);
  models::ModelName name = models::parse_model_name(o.model);
  auto provider = models::make_provider(name, g.provider);
  auto prices = models::PriceTable::load(repo_root() / "pricing" / "prices.json");
  models::ReplyCache cache(g.cache_dir.empty() ? sum.dir / "cache" : g.cache_dir);
  using Sample = std::pair<const ProblemSpec*, int>;
  std::deque<std::vector<Sample>> groups;  // a problem's samples share one slot
  for (const ProblemSpec* p : problems) {
    if (world_size_violation(*p, o.world, p->parameters)) continue;  // not asked at this W: no sample
    groups.emplace_back();
    for (int k = 0; k < o.samples; ++k) {
      if (!mine(p, k)) continue;
      ++sum.samples;
      if (done.count(sample_key(p->folder(), k, ""))) {
        ++sum.resumed;
        continue;
      }
      groups.back().emplace_back(p, k);
    }
  }
  if (o.progress && sum.resumed)
    std::fprintf(stderr, "resuming: %d of %d samples already recorded\n", sum.resumed, sum.samples);
  std::mutex mu;  // sum and the results file
  std::atomic<bool> stopped{false};
  SlotWork<Sample> work;
  work.evaluate = [&](const Sample& s, const std::string& devices) -> std::string {
    auto [spec, k] = s;
    AgentSample a(*spec, k, o, g, sum.dir, devices);
    std::optional<ResultRecord> rec;
    if (!stopped) rec = a.run(*provider, cache, prices);
    std::lock_guard<std::mutex> lock(mu);
    if (!rec) {  // the model service failed: unrecorded, retried by the next invocation
      ++sum.service_failures;
      if (sum.service_error.empty())
        sum.service_error = stopped ? "not sent: an earlier request failed" : a.service_error;
      if (a.stops_batch) stopped = true;
      return "";
    }
    append_line(results, record_line(*rec));
    ++sum.recorded;
    if (o.progress)
      std::fprintf(stderr, "%s sample %d: %s after %d steps (%s)\n", spec->folder().c_str(), k, rec->status.c_str(),
                   rec->fields["agent"]["steps"].get<int>(), rec->fields["agent"]["end"].get<std::string>().c_str());
    if (rec->status != result_status_name(ResultStatus::harness_error)) return "";
    ++sum.harness_errors;
    return "sample " + std::to_string(k) + " of this problem: " + rec->message;
  };
  work.record_harness_error = [&](const Sample& s, const std::string& why) {
    ResultRecord r = base_record(*s.first, s.second, o);
    r.sample = s.second;
    r.model = o.model;
    r.status = result_status_name(ResultStatus::harness_error);
    r.message = "harness error, no verdict: " + why;
    std::lock_guard<std::mutex> lock(mu);
    append_line(results, record_line(r));
    ++sum.recorded, ++sum.harness_errors;
  };
  work.group_failed = [](const Sample& s, const std::string& why) {
    std::fprintf(stderr, "pkb run: %s: harness error, recorded harness_error (the next invocation retries): %s\n",
                 s.first->folder().c_str(), why.c_str());
  };
  evaluate_on_slots(std::move(groups), slots, work);
}

}  // namespace pkb::run
