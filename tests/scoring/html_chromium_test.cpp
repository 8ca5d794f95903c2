// report.html and leaderboard.html as a browser sees them: `pkb report` / `pkb leaderboard` write the pages from
// fixtures, headless Chromium loads them with a #sort= fragment and dumps the DOM after the page's script ran.
// The DOM must show the script's work (rows reordered, aria-sort set, data-ready on <body>) and the SVG chart.
// Chromium comes from scripts/setup.sh; without it these tests fail rather than skip.
#include <gtest/gtest.h>

#include <regex>

#include "../unit/test_util.h"
#include "launch/process.h"

using pkb::test::TempDir;

namespace {

const std::string kFixtures = std::string(PKB_SCORING_FIXTURES) + "/fixtures";

std::string chromium_binary() {
  return pkb::capture_stdout({"sh", "-c", "command -v chromium || command -v chromium-browser"}, 10);
}

pkb::ProcessResult run(const std::vector<std::string>& argv, const std::filesystem::path& out_dir) {
  pkb::ProcessOptions o;
  o.timeout_s = 60;
  o.stdout_path = out_dir / "stdout";
  o.stderr_path = out_dir / "stderr";
  return pkb::run_process(argv, o);
}

// The serialized DOM of `page#fragment` once its scripts ran.
std::string dump_dom(const std::filesystem::path& page, const std::string& fragment, const TempDir& tmp) {
  std::string chromium = chromium_binary();
  while (!chromium.empty() && std::isspace(static_cast<unsigned char>(chromium.back()))) chromium.pop_back();
  if (chromium.empty()) {
    ADD_FAILURE() << "chromium is not installed: run scripts/setup.sh (it installs Debian's chromium package)";
    return "";
  }
  auto logs = tmp.path() / "chromium";
  std::filesystem::create_directories(logs);
  // No sandbox and no /dev/shm: containers run as root with a small /dev/shm; a fresh profile per run.
  pkb::ProcessResult r = run({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                              "--no-first-run", "--user-data-dir=" + (tmp.path() / "profile").string(), "--dump-dom",
                              "file://" + page.string() + "#" + fragment},
                             logs);
  EXPECT_TRUE(r.ok()) << "chromium: " << r.summary() << "\n" << pkb::file_tail(logs / "stderr");
  return pkb::file_tail(logs / "stdout", 1 << 24);
}

void pkb_command(const std::vector<std::string>& args, const TempDir& tmp) {
  std::vector<std::string> argv = {PKB_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto logs = tmp.path() / "pkb";
  std::filesystem::create_directories(logs);
  pkb::ProcessResult r = run(argv, logs);
  ASSERT_TRUE(r.ok()) << args[0] << ": " << r.summary() << "\n" << pkb::file_tail(logs / "stderr");
}

// The <table id=...>...</table> of the dumped DOM.
std::string table(const std::string& dom, const std::string& id) {
  size_t start = dom.find("id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return dom.substr(start, dom.find("</table>", start) - start);
}

std::vector<std::string> all_matches(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) out.push_back((*it)[1].str());
  return out;
}

// data-v of column `key` in each body row, in DOM order.
std::vector<std::string> column(const std::string& table_html, const std::string& key) {
  auto keys = all_matches(table_html, R"re(<th data-key="([^"]*)")re");
  auto at = std::find(keys.begin(), keys.end(), key);
  EXPECT_NE(at, keys.end()) << "no column " << key;
  size_t index = at - keys.begin();
  std::vector<std::string> values;
  std::string body = table_html.substr(table_html.find("<tbody>"));
  for (const auto& row : all_matches(body, R"(<tr>([\s\S]*?)</tr>)")) {
    auto cells = all_matches(row, R"re(<td data-v="([^"]*)")re");
    values.push_back(index < cells.size() ? cells[index] : "?");
  }
  return values;
}

bool ready(const std::string& dom) { return std::regex_search(dom, std::regex(R"(<body[^>]*data-ready="1")")); }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(HtmlChromium, ReportSortsFromTheFragmentAndDrawsTheChart) {
  TempDir tmp;
  pkb_command({"report", kFixtures + "/run", "-o", (tmp.path() / "report").string()}, tmp);
  // Written in id order, best speedups 1.2, 0.7, 2.5, -, -, - (013 is missing: in the manifest's selection without
  // a record): only the script can produce the order below.
  std::string dom = dump_dom(tmp.path() / "report" / "report.html", "sort=best_speedup:desc", tmp);
  ASSERT_FALSE(dom.empty());
  EXPECT_TRUE(ready(dom)) << dom.substr(0, 2000);
  std::string problems = table(dom, "problems");
  EXPECT_EQ(column(problems, "best_speedup"), (std::vector<std::string>{"2.5", "1.2", "0.7", "", "", ""}));
  EXPECT_EQ(column(problems, "id"), (std::vector<std::string>{"6", "1", "3", "11", "12", "13"}));  // rows moved whole
  EXPECT_NE(problems.find(R"(data-key="best_speedup" data-type="number" aria-sort="descending")"), std::string::npos);
  EXPECT_NE(dom.find("<svg"), std::string::npos);
  EXPECT_EQ(count(dom, "<polyline"), 2u);  // k = 1 and k = 3
  EXPECT_NE(dom.find("<title>pkb report: model-a &lt;test&gt;</title>"), std::string::npos);
  EXPECT_NE(dom.find("2 GPU evaluations were skipped: no GPU on this machine."), std::string::npos);
  // Read top-down: the headline cards, the curve and the problems first, the settings folded (closed) last.
  size_t cards = dom.find("<div class=\"cards\">"), curve = dom.find("class=\"curve\""),
         problems_at = dom.find("id=\"problems\""), settings = dom.find("<details class=\"settings\" id=\"settings\">");
  for (size_t at : {cards, curve, problems_at, settings}) ASSERT_NE(at, std::string::npos) << dom.substr(0, 2000);
  EXPECT_LT(cards, curve);
  EXPECT_LT(curve, problems_at);
  EXPECT_LT(problems_at, settings);
  EXPECT_GT(dom.find("<dt>selection</dt>"), settings) << "the manifest's rows are inside the folded block";
}

TEST(HtmlChromium, ReportSortsAscendingWithMissingValuesLast) {
  TempDir tmp;
  pkb_command({"report", kFixtures + "/run", "-o", (tmp.path() / "report").string()}, tmp);
  std::string dom = dump_dom(tmp.path() / "report" / "report.html", "sort=best_speedup:asc", tmp);
  EXPECT_TRUE(ready(dom));
  EXPECT_EQ(column(table(dom, "problems"), "best_speedup"),
            (std::vector<std::string>{"0.7", "1.2", "2.5", "", "", ""}));
}

TEST(HtmlChromium, LeaderboardRunsItsScriptAndDrawsOneCurvePerRun) {
  TempDir tmp;
  auto json = tmp.path() / "board" / "leaderboard.json";
  // Two fixtures that cover different problems: ranked together only with --allow-mixed.
  pkb_command({"leaderboard", kFixtures + "/run", kFixtures, "-o", json.string(), "--allow-mixed"}, tmp);
  std::string dom = dump_dom(tmp.path() / "board" / "leaderboard.html", "sort=rank:desc", tmp);
  ASSERT_FALSE(dom.empty());
  EXPECT_TRUE(ready(dom)) << dom.substr(0, 2000);
  EXPECT_EQ(column(table(dom, "ranking"), "rank"), (std::vector<std::string>{"2", "1"}));
  EXPECT_NE(dom.find("<svg"), std::string::npos);
  EXPECT_EQ(count(dom, "<polyline"), 2u);
  EXPECT_NE(dom.find("id=\"matrix\""), std::string::npos);
}
