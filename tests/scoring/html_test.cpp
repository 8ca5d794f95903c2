// report.html's pieces: escaping of hostile names, the SVG chart's geometry against the values it plots, the
// sortable table's markup. The JS itself runs in html_chromium_test.cpp.
#include "scoring/html.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "record_util.h"
#include "scoring/report.h"

using namespace pkb::scoring;
using pkb::test::record_line;

namespace {

struct Point {
  double x, y;
};

// The points of every <polyline> in order of appearance.
std::vector<std::vector<Point>> polylines(const std::string& svg) {
  std::vector<std::vector<Point>> out;
  static const std::regex line_re(R"re(<polyline[^>]* points="([^"]*)")re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), line_re), end; it != end; ++it) {
    std::vector<Point> points;
    std::istringstream in((*it)[1].str());
    std::string pair;
    while (in >> pair) {
      size_t comma = pair.find(',');
      points.push_back({std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1))});
    }
    out.push_back(points);
  }
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

double y_of(double value) {
  const auto& f = html::kChartFrame;
  return f.bottom - value * (f.bottom - f.top);
}

}  // namespace

TEST(Html, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(html::escape(R"(<a href="x">Tom & 'Jerry'</a>)"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;");
  EXPECT_EQ(html::escape("plain text"), "plain text");
}

TEST(Html, HostileNamesNeverReachThePageRaw) {
  const std::string model = R"(<script>alert("m")</script> & co)";
  const std::string slug = R"re(<img src=x onerror="alert(1)">)re";
  std::istringstream in(
      record_line({.folder = "001_<b>bold</b>", .slug = slug, .category = "a&b", .sha256 = "s", .speedup = 2.0}));
  LoadedResults loaded = parse_results(in, "<results>.jsonl");
  loaded.run = {{"model", model}};
  loaded.warnings.push_back("line 3: <bad> & \"worse\"");
  std::string page = report_html(score(loaded, ScoreSettings{}), loaded);
  for (const std::string& raw :
       {model, slug, std::string("<b>bold</b>"), std::string("<bad>"), std::string("<results>")})
    EXPECT_EQ(page.find(raw), std::string::npos) << raw;
  EXPECT_NE(page.find("<title>pkb report: &lt;script&gt;alert(&quot;m&quot;)&lt;/script&gt; &amp; co</title>"),
            std::string::npos);
  EXPECT_NE(page.find("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"), std::string::npos);
  EXPECT_NE(page.find("line 3: &lt;bad&gt; &amp; &quot;worse&quot;"), std::string::npos);
  EXPECT_EQ(count(page, "<script>"), 1u);  // the page's own, and only it
}

TEST(Html, ChartHasOnePolylinePerSeriesAtTheValuesCoordinates) {
  std::string svg = html::curve_svg({0, 1, 2}, {{"k = 1", {1.0, 0.5, 0.0}}, {"k = 3", {1.0, 0.75, 0.25}}}, "fast_p@k");
  auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 2u);
  ASSERT_EQ(lines[0].size(), 3u);
  ASSERT_EQ(lines[1].size(), 3u);
  const auto& f = html::kChartFrame;
  // fast_p@1 = 0.5 at p = 1: mid-axis vertically, and p = 1 is mid-grid horizontally.
  EXPECT_NEAR(lines[0][1].y, (f.top + f.bottom) / 2, 0.01);
  EXPECT_NEAR(lines[0][1].x, (f.left + f.right) / 2, 0.01);
  EXPECT_NEAR(lines[0][0].y, f.top, 0.01);     // 1.0 at the top
  EXPECT_NEAR(lines[0][2].y, f.bottom, 0.01);  // 0.0 on the x axis
  EXPECT_NEAR(lines[1][2].y, y_of(0.25), 0.01);
  EXPECT_NEAR(lines[0][0].x, f.left, 0.01);
  EXPECT_NEAR(lines[0][2].x, f.right, 0.01);
  EXPECT_EQ(count(svg, "<circle"), 6u + 2u);  // a marker per point, one per legend entry
  EXPECT_NE(svg.find("<title>k = 1, p = 1: fast_p@k = 0.5000</title>"), std::string::npos);
  for (const char* tick : {">0<", ">0.5<", ">1<", ">2<", ">0.25<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg, html::curve_svg({0, 1, 2}, {{"k = 1", {1.0, 0.5, 0.0}}, {"k = 3", {1.0, 0.75, 0.25}}},
                                 "fast_p@k"));  // deterministic
}

// A grid extended to large speedups is drawn by log2 p (each doubling the same width), a narrow one linearly.
TEST(Html, AWideGridIsDrawnOnALogAxis) {
  std::vector<double> wide = {0, 0.5, 1, 2, 4, 8, 16};
  auto line = polylines(html::curve_svg(wide, {{"k = 1", std::vector<double>(wide.size(), 0.5)}}, "fast_p@k"));
  ASSERT_EQ(line.size(), 1u);
  ASSERT_EQ(line[0].size(), wide.size());
  double octave = line[0][2].x - line[0][1].x;
  EXPECT_GT(octave, 0);
  for (size_t j = 1; j < wide.size(); ++j)
    EXPECT_NEAR(line[0][j].x - line[0][j - 1].x, octave, 0.02) << "p = 0 one octave left of 0.5, then doublings";

  std::vector<double> narrow = {0, 1, 4};
  auto linear = polylines(html::curve_svg(narrow, {{"k = 1", {1, 0.5, 0}}}, "fast_p@k"));
  ASSERT_EQ(linear[0].size(), 3u);
  EXPECT_NEAR(linear[0][2].x - linear[0][1].x, 3 * (linear[0][1].x - linear[0][0].x), 0.02);
}

// The Run section shows the manifest as rows (nested settings under dotted keys), never as raw JSON.
TEST(Html, TheRunSectionShowsTheManifestAsRows) {
  LoadedResults loaded = load_results(std::string(PKB_SCORING_FIXTURES) + "/fixtures/run");
  loaded.run["settings"] = {{"samples", 3}, {"timing", {{"method", "pkb"}, {"iters", 100}}}, {"ks", {1, 3}}};
  std::string page = report_html(score(loaded, ScoreSettings{}), loaded);
  for (const char* row : {"<dt>samples</dt><dd>3</dd>", "<dt>settings.timing.method</dt><dd>pkb</dd>",
                          "<dt>settings.timing.iters</dt><dd>100</dd>", "<dt>settings.ks</dt><dd>1, 3</dd>",
                          "<dt>selection</dt><dd>6 entries (manifest.json)</dd>"})
    EXPECT_NE(page.find(row), std::string::npos) << row;
  EXPECT_EQ(page.find("&quot;method&quot;"), std::string::npos) << "no JSON in the Run section";
}

// Top-down: the headline cards, then the curve, then the per-problem table; the ~50 settings rows of a run's
// manifest come last, folded in a <details> that starts closed.
TEST(Html, TheReportReadsTopDownWithTheSettingsFoldedLast) {
  LoadedResults loaded = load_results(std::string(PKB_SCORING_FIXTURES) + "/fixtures/run");
  loaded.run["settings"] = {{"samples", 3}, {"timing", {{"method", "pkb"}, {"iters", 100}}}};
  std::string page = report_html(score(loaded, ScoreSettings{}), loaded);
  size_t title = page.find("<h1>"), notice = page.find("id=\"not-evaluated\""),
         cards = page.find("<div class=\"cards\">"), curve = page.find("class=\"curve\""),
         problems = page.find("<table class=\"sortable\" id=\"problems\">"),
         settings = page.find("<details class=\"settings\" id=\"settings\">"),
         manifest_row = page.find("<dt>settings.timing.method</dt>"), model_row = page.find("<dt>model</dt>"),
         gpu_row = page.find("<dt>GPU</dt>");
  for (size_t at : {title, notice, cards, curve, problems, settings, manifest_row, model_row, gpu_row})
    ASSERT_NE(at, std::string::npos) << page.substr(0, 3000);
  EXPECT_LT(title, notice);
  EXPECT_LT(notice, cards);
  EXPECT_LT(cards, curve);
  EXPECT_LT(curve, problems);
  EXPECT_LT(problems, settings);
  for (size_t row : {manifest_row, model_row, gpu_row}) EXPECT_GT(row, settings) << "a settings row above the fold";
  EXPECT_EQ(page.find("<details class=\"settings\" id=\"settings\" open"), std::string::npos) << "folded";
  EXPECT_EQ(page.find("</details>", settings), page.rfind("</details>")) << "the last block of the page";
}

// A run whose ranks shared one GPU: the reader learns why there is no speedup before any number.
TEST(Html, AOneGpuRunSaysWhyNoSpeedupIsClaimedUnderTheTitle) {
  std::string lines;
  for (const char* sha : {"a", "b"}) {
    auto j = nlohmann::json::parse(
        record_line({.sha256 = sha, .status = sha == std::string("a") ? "correct" : "incorrect"}));
    j["gpu_sharing"] = {{"ranks_per_gpu", 2}, {"mps", true}, {"note", "2 ranks share each of 1 GPU (MPS)"}};
    j["timing"]["contended"] = true;
    lines += j.dump() + "\n";
  }
  std::istringstream in(lines);
  LoadedResults loaded = parse_results(in, "one-gpu.jsonl");
  std::string page = report_html(score(loaded, ScoreSettings{}), loaded);
  size_t title = page.find("</h1>"), notice = page.find("<div class=\"notice\" id=\"shared-gpu\">"),
         cards = page.find("<div class=\"cards\">");
  ASSERT_NE(notice, std::string::npos) << page.substr(0, 3000);
  ASSERT_NE(cards, std::string::npos);
  EXPECT_LT(title, notice);
  EXPECT_LT(notice, cards);
  EXPECT_EQ(page.find("<h2>", title), page.find("<h2>Headline</h2>")) << "nothing but notices above the headline";
  EXPECT_NE(page.find("No speedups are claimed: the ranks of every evaluated sample (2) shared a GPU", notice),
            std::string::npos);
  EXPECT_NE(page.find("none claimed: ranks shared a GPU"), std::string::npos)
      << "the geomean card says why it is empty";
}

// Bars from the 1x line by log2: 2x and 0.5x equally long on either side; a problem without a speedup says why.
TEST(Html, SpeedupBarsGoRightWhenFasterAndLeftWhenSlower) {
  std::string svg = html::speedup_bars_svg({{"001_fast", 2.0, ""},
                                            {"002_slow", 0.5, ""},
                                            {"003_far", 8.0, ""},
                                            {"004_none", std::nullopt, "no correct sample: incorrect 3"}});
  static const std::regex rect_re(R"re(<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)")re");
  std::vector<std::pair<double, double>> rects;  // x, width
  for (std::sregex_iterator it(svg.begin(), svg.end(), rect_re), end; it != end; ++it)
    rects.push_back({std::stod((*it)[1]), std::stod((*it)[2])});
  ASSERT_EQ(rects.size(), 3u) << "no bar for a problem without a speedup";
  const auto& f = html::kBarFrame;
  double mid = (f.left + f.right) / 2;
  EXPECT_NEAR(rects[0].first, mid, 0.01) << "2x starts at the 1x line";
  EXPECT_NEAR(rects[1].first + rects[1].second, mid, 0.01) << "0.5x ends at it";
  EXPECT_NEAR(rects[0].second, rects[1].second, 0.01);
  EXPECT_NEAR(rects[2].second, 3 * rects[0].second, 0.01) << "8x is three octaves";
  EXPECT_NEAR(rects[2].first + rects[2].second, f.right, 0.01) << "the range holds the largest";
  EXPECT_NE(svg.find(">no correct sample: incorrect 3</text>"), std::string::npos);
  EXPECT_NE(svg.find(">8x</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.125x</text>"), std::string::npos);
}

TEST(Html, ReportChartPlotsTheCurveOfEachK) {
  LoadedResults loaded = load_results(std::string(PKB_SCORING_FIXTURES) + "/fixtures/run");
  ScoreSettings st;
  st.ks = {1, 2, 3};
  Scores s = score(loaded, st);
  std::string page = report_html(s, loaded);
  auto lines = polylines(page);
  ASSERT_EQ(lines.size(), st.ks.size());
  for (size_t i = 0; i < st.ks.size(); ++i) {
    ASSERT_EQ(lines[i].size(), s.settings.thresholds.size());
    size_t j = 0;
    for (const CurvePoint& c : s.curve)
      if (c.k == st.ks[i]) {
        EXPECT_NEAR(lines[i][j++].y, y_of(c.value), 0.01) << "k=" << c.k << " p=" << c.p;
      }
  }
  // The default grid is crowded around 1 (0.8, 1, 1.25): the headline threshold keeps its label.
  for (const char* label : {"0.8", "1", "1.25"})
    EXPECT_TRUE(std::regex_search(page, std::regex(std::string("class=\"xtick\"[^>]*>") + label + "</text>"))) << label;
  EXPECT_NE(page.find("id=\"not-evaluated\""), std::string::npos);
  EXPECT_NE(page.find("2 GPU evaluations were skipped: no GPU on this machine."), std::string::npos);
}

TEST(Html, TablesCarrySortKeysAndMissingValuesAreEmpty) {
  std::string table = html::sortable_table(
      "t", {{"name", "name", false}, {"best_speedup", "best speedup"}},
      {{html::text_cell("a"), html::number_cell(1.5, 2, "x")}, {html::text_cell("b"), html::number_cell({}, 2)}});
  EXPECT_NE(table.find("<th data-key=\"best_speedup\" data-type=\"number\">best speedup</th>"), std::string::npos);
  EXPECT_NE(table.find("<td data-v=\"1.5\">1.50x</td>"), std::string::npos) << table;
  EXPECT_NE(table.find("<td data-v=\"\">-</td>"), std::string::npos) << table;
  EXPECT_NE(table.find("<td data-v=\"a\" class=\"text\">a</td>"), std::string::npos) << table;
}

TEST(Html, PageIsSelfContained) {
  LoadedResults loaded = load_results(std::string(PKB_SCORING_FIXTURES) + "/fixtures/run");
  std::string page = report_html(score(loaded, ScoreSettings{}), loaded);
  // The SVG namespace is an identifier, not a fetch.
  for (size_t at; (at = page.find("http://www.w3.org/2000/svg")) != std::string::npos;) page.erase(at, 26);
  for (const char* external : {"http://", "https://", "src=", "<link", "@import", "url("})
    EXPECT_EQ(page.find(external), std::string::npos) << external;
  EXPECT_NE(page.find("data-ready"), std::string::npos);
  EXPECT_NE(page.find("<table class=\"sortable\" id=\"problems\">"), std::string::npos);
  EXPECT_NE(page.find("<table class=\"sortable\" id=\"categories\">"), std::string::npos);
}

// A run that evaluated nothing (no GPU: every sample compiled, none judged) shows "-" in its headline cards, never a
// 0.000 that reads as a measured failure.
TEST(Html, HeadlineCardsShowADashWhenNothingWasEvaluated) {
  std::istringstream in(
      record_line({.sha256 = "a", .status = "not_evaluated"}) +
      record_line({.id = 2, .folder = "002_allgather", .slug = "allgather", .sha256 = "b", .status = "not_evaluated"}));
  LoadedResults loaded = parse_results(in, "nothing.jsonl");
  std::string page = report_html(score(loaded, ScoreSettings{}), loaded);
  size_t cards = page.find("<div class=\"cards\">"), end = page.find("</div>\n<p class=\"note\">", cards);
  ASSERT_NE(cards, std::string::npos) << page.substr(0, 3000);
  std::string headline = page.substr(cards, end - cards);
  EXPECT_EQ(headline.find("0.000"), std::string::npos) << headline;
  EXPECT_GE(count(headline, "<div class=\"v\">-</div>"), 3u) << headline;
}
