#include "run/regress.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "core/files.h"
#include "core/result_record.h"
#include "scoring/html.h"
#include "scoring/records.h"

namespace pkb::run {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The HTML escape (valid XML too), after replacing the control characters XML 1.0 forbids, which compiler logs and
// stderr tails can hold.
std::string xml_escape(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') c = '?';
  return scoring::html::escape(s);
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

struct BaselineEntry {
  bool correct = false;
  double best_speedup = 0;
};

std::map<std::string, BaselineEntry> read_baseline(const fs::path& path) {
  json j = json::parse(read_text_file(path), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("schema", "") != "pkb.report/1" || !j.contains("problems"))
    throw Error(path.string() + ": not a pkb.report/1 report.json");
  std::map<std::string, BaselineEntry> out;
  for (const auto& p : j["problems"]) {
    BaselineEntry e;
    e.correct = p.value("c", 0) > 0;
    if (p.contains("best_speedup") && p["best_speedup"].is_number()) e.best_speedup = p["best_speedup"].get<double>();
    out[p.value("folder", "")] = e;
  }
  return out;
}

// The problems DIR holds a kernel for, as a selection string ("1,7").
std::string submitted_selection(const Catalog& catalog, const fs::path& dir) {
  std::string sel;
  for (const ProblemSpec& p : catalog.problems)
    if (fs::is_regular_file(dir / (p.folder() + ".cu")) || fs::is_regular_file(dir / p.folder() / "sample_0.cu"))
      sel += (sel.empty() ? "" : ",") + std::to_string(p.id);
  return sel;
}

std::string utc_stamp() {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return stamp;
}

}  // namespace

int RegressResult::failures() const {
  int n = 0;
  for (const auto& c : cases) n += c.verdict == "regression" || c.verdict == "fail";
  return n;
}

double parse_slowdown(const std::string& text) {
  static const std::regex kNumber(R"(\s*([0-9]*\.?[0-9]+)\s*(%?)\s*)");
  std::smatch m;
  if (!std::regex_match(text, m, kNumber)) throw Error("--slowdown: '" + text + "' is not a number or a percentage");
  double x = std::stod(m[1]);
  if (m[2] == "%" || x >= 1) x /= 100;  // "10%" and "10" mean ten percent; "0.1" is already a fraction
  if (x < 0 || x >= 1) throw Error("--slowdown must be in [0%, 100%), got '" + text + "'");
  return x;
}

RegressResult regress(const Catalog& catalog, RegressOptions o) {
  auto baseline = read_baseline(o.baseline);
  if (!fs::is_directory(o.candidates)) throw Error(o.candidates.string() + ": no such directory of candidates");
  std::string selection = submitted_selection(catalog, o.candidates);
  if (selection.empty())
    throw Error(o.candidates.string() + ": holds no NNN_slug.cu or NNN_slug/sample_0.cu for any problem");

  RunOptions& r = o.run;
  r.model = "replay:" + fs::absolute(o.candidates).string();
  r.problems = selection;
  r.samples = 1;
  if (r.out_dir.empty()) r.out_dir = fs::path("results/regress") / utc_stamp();  // fresh: every invocation re-evaluates
  if (r.device != "cpu" && visible_gpu_count() == 0)
    throw Error(
        "no GPU on this machine: pkb regress evaluates on GPUs (--device cpu evaluates C++ kernels on CPU ranks)");
  RunSummary run = run_benchmark(catalog, r);

  RegressResult res;
  res.run_dir = run.dir;
  res.junit = o.junit.empty() ? run.dir / "junit.xml" : o.junit;
  // Through the loader that scores runs: the same record wins here as in the run's report.
  std::map<std::string, ResultRecord> latest;  // folder -> its sample's record (one sample per problem)
  if (fs::exists(run.dir / "results.jsonl"))
    for (const auto& p : scoring::load_results(run.dir).problems)
      for (const auto& s : p.samples) latest[p.folder] = s.record;
  for (const ProblemSpec* p : catalog.select(selection)) {
    RegressCase c;
    c.folder = p->folder();
    c.category = category_name(p->category);
    auto rec = latest.find(c.folder);
    if (rec == latest.end()) {
      c.verdict = "fail";
      c.message = "no result recorded (harness error; see the run's output)";
      res.cases.push_back(c);
      continue;
    }
    const ResultRecord& j = rec->second;
    c.status = j.status;
    c.speedup = j.speedup.value_or(0.0);
    c.seconds = j.total_s.value_or(0.0);
    bool correct = j.correct();
    auto base = baseline.find(c.folder);
    if (base == baseline.end() || !base->second.correct) {
      c.verdict = correct ? "pass" : "fail";
      c.message = (base == baseline.end() ? "not in the baseline; " : "no correct kernel in the baseline; ") +
                  (correct ? "correct, " + fmt("%.2fx", c.speedup) : c.status + ": " + j.message);
    } else {
      c.baseline_correct = true;
      c.baseline_speedup = base->second.best_speedup;
      double floor = c.baseline_speedup * (1 - o.slowdown);
      if (!correct) {
        c.verdict = "regression";
        c.message = "was correct in the baseline, now " + c.status + ": " + j.message;
      } else if (c.baseline_speedup > 0 && c.speedup < floor) {
        c.verdict = "regression";
        c.message = "slower: " + fmt("%.2fx", c.speedup) + " vs " + fmt("%.2fx", c.baseline_speedup) +
                    " in the baseline (limit " + fmt("%.2fx", floor) + ", slowdown " + fmt("%.0f%%", 100 * o.slowdown) +
                    ")";
      } else {
        c.verdict = "pass";
        c.message = "correct, " + fmt("%.2fx", c.speedup) + " (baseline " + fmt("%.2fx", c.baseline_speedup) + ")";
      }
    }
    res.cases.push_back(c);
  }
  for (const auto& [folder, entry] : baseline) {
    bool submitted = false;
    for (const auto& c : res.cases) submitted |= c.folder == folder;
    if (submitted || folder.empty()) continue;
    RegressCase skipped;
    skipped.folder = folder;
    skipped.verdict = "skipped";
    skipped.message = "no candidate submitted";
    res.cases.push_back(skipped);
  }
  fs::create_directories(fs::absolute(res.junit).parent_path());
  write_file_atomically(res.junit, junit_xml(res));
  return res;
}

std::string junit_xml(const RegressResult& r) {
  int skipped = 0;
  double total = 0;
  for (const auto& c : r.cases) skipped += c.verdict == "skipped", total += c.seconds;
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  x += "  <testsuite name=\"pkb regress\" tests=\"" + std::to_string(r.cases.size()) + "\" failures=\"" +
       std::to_string(r.failures()) + "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\" time=\"" +
       fmt("%.3f", total) + "\">\n";
  for (const auto& c : r.cases) {
    x += "    <testcase classname=\"pkb." + xml_escape(c.category.empty() ? "baseline" : c.category) + "\" name=\"" +
         xml_escape(c.folder) + "\" time=\"" + fmt("%.3f", c.seconds) + "\">";
    if (c.verdict == "regression" || c.verdict == "fail")
      x += "\n      <failure message=\"" + xml_escape(c.message) + "\" type=\"" + c.verdict + "\">" +
           xml_escape(c.message) + "</failure>\n    ";
    else if (c.verdict == "skipped")
      x += "<skipped message=\"" + xml_escape(c.message) + "\"/>";
    else
      x += "<system-out>" + xml_escape(c.message) + "</system-out>";
    x += "</testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace pkb::run
