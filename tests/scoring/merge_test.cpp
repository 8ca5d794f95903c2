// The shards of a run (run/shard.h's partition) scored as one run (scoring/merge.h): the partition covers every
// (problem, sample) once, a merge of shards gives the unsharded run's report to the byte, and shards that are
// not one run are refused with the field named.
#include "scoring/merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>

#include "../unit/test_util.h"
#include "core/error.h"
#include "core/files.h"
#include "record_util.h"
#include "run/shard.h"
#include "scoring/report.h"

using namespace pkb::scoring;
using pkb::run::in_shard;
using pkb::run::parse_shard;
using pkb::run::Shard;
using pkb::test::record_line;
using pkb::test::RecordSpec;
using pkb::test::TempDir;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

TEST(Shard, EveryItemOfTheGridBelongsToExactlyOneShardInContiguousBalancedBlocks) {
  for (long total = 0; total <= 40; ++total)
    for (int count = 1; count <= 9; ++count) {
      std::vector<int> owner(total, -1);
      std::vector<long> size(count, 0);
      for (int i = 0; i < count; ++i)
        for (long item = 0; item < total; ++item)
          if (in_shard({i, count}, item, total)) {
            ASSERT_EQ(owner[item], -1) << "item " << item << " of " << total << " in two of " << count << " shards";
            owner[item] = i;
            ++size[i];
          }
      for (long item = 0; item < total; ++item) {
        ASSERT_GE(owner[item], 0) << "item " << item << " of " << total << " in no shard of " << count;
        if (item) {
          ASSERT_LE(owner[item - 1], owner[item]) << "blocks are not contiguous";
        }
      }
      auto [lo, hi] = std::minmax_element(size.begin(), size.end());
      EXPECT_LE(*hi - *lo, 1) << total << " items over " << count << " shards";
    }
}

TEST(Shard, ParsesIOverNAndNamesWhatIsWrong) {
  Shard s = parse_shard("2/5");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.dir_name(), "shard-2-of-5");
  EXPECT_FALSE(parse_shard("0/1").sharded());
  for (auto [text, why] : {std::pair{"2/2", "below the count"},
                           {"1", "no '/'"},
                           {"a/3", "index 'a'"},
                           {"-1/2", "index '-1'"},
                           {"0/0", "at least 1"},
                           {"1/x", "count 'x'"}}) {
    try {
      parse_shard(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const pkb::Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
}

struct Problem {
  int id;
  std::string folder, slug;
};
const std::vector<Problem> kProblems = {{1, "001_allreduce", "allreduce"},
                                        {2, "002_gather", "gather"},
                                        {3, "003_broadcast", "broadcast"},
                                        {4, "004_reduce", "reduce"}};
constexpr int kSamples = 5;

json settings(const json& shard) {
  return {{"model", "anthropic:m"}, {"problems", "1-4"}, {"world", 2},
          {"dtype", "bf16"},        {"trials", 5},       {"shard", shard}};
}

json selection(const std::vector<size_t>& positions) {
  json out = json::array();
  for (size_t p : positions)
    out.push_back({{"id", kProblems[p].id},
                   {"slug", kProblems[p].slug},
                   {"folder", kProblems[p].folder},
                   {"category", "collective"}});
  return out;
}

json manifest(const json& shard, const std::vector<size_t>& positions) {
  return {{"schema", "pkb.run/1"},
          {"model", "anthropic:m"},
          {"samples", kSamples},
          {"settings", settings(shard)},
          {"selection", selection(positions)},
          {"host", "node"},
          {"invocations", 1},
          {"gpu_evaluation", true}};
}

// One record per (problem, sample) of problems 1-3 (problem 4 has none: missing), varied statuses and speedups
// whose sums depend on their order, and a re-evaluation that supersedes an earlier record.
std::vector<std::pair<long, std::string>> records() {
  std::vector<std::pair<long, std::string>> out;  // (grid item, line)
  const char* statuses[] = {"correct", "incorrect", "correct", "generation_failed", "correct"};
  for (size_t p = 0; p < 3; ++p)
    for (int k = 0; k < kSamples; ++k) {
      RecordSpec r;
      r.id = kProblems[p].id, r.folder = kProblems[p].folder, r.slug = kProblems[p].slug;
      r.sample = k;
      r.status = statuses[(k + p) % kSamples];
      r.sha256 = r.status == "generation_failed" ? "generation:" + r.folder + ":" + std::to_string(k)
                                                 : std::string(64, static_cast<char>('a' + p * kSamples + k));
      if (r.status == "correct") r.speedup = 0.1 + 1.0 / (3 + 7 * p + k);
      long item = static_cast<long>(p) * kSamples + k;
      if (p == 1 && k == 2) {  // first recorded as a timeout, then re-evaluated
        RecordSpec first = r;
        first.status = "timeout", first.speedup.reset();
        out.push_back({item, record_line(first)});
      }
      out.push_back({item, record_line(r)});
    }
  return out;
}

void write_dir(const fs::path& dir, const json& m, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l;
  pkb::test::write_file(dir / "results.jsonl", text);
  pkb::test::write_file(dir / "manifest.json", m.dump(2));
}

// The run's records split over `count` shards under dir, each shard's lines shuffled (slots interleave).
void write_shards(const fs::path& dir, int count) {
  long grid = static_cast<long>(kProblems.size()) * kSamples;
  std::mt19937 rng(count);
  for (int i = 0; i < count; ++i) {
    std::map<long, std::vector<std::string>> by_item;  // a sample's records stay in order: the last one wins
    for (const auto& [item, line] : records())
      if (in_shard({i, count}, item, grid)) by_item[item].push_back(line);
    std::vector<std::vector<std::string>> per_sample;
    for (auto& [item, sample] : by_item) per_sample.push_back(sample);
    std::vector<size_t> positions;
    for (size_t p = 0; p < kProblems.size(); ++p)
      for (int k = 0; k < kSamples; ++k)
        if (in_shard({i, count}, static_cast<long>(p) * kSamples + k, grid)) {
          positions.push_back(p);
          break;
        }
    std::shuffle(per_sample.begin(), per_sample.end(), rng);
    std::vector<std::string> lines;
    for (const auto& sample : per_sample) lines.insert(lines.end(), sample.begin(), sample.end());
    Shard s{i, count};
    write_dir(dir / s.dir_name(), manifest(pkb::run::shard_json(s, kSamples), positions), lines);
  }
}

json without_run(const Scores& s, const LoadedResults& l) {
  json j = json::parse(report_json(s, l).dump());
  j.erase("run");
  return j;
}

TEST(Merge, ShardsGiveTheUnshardedRunsReportToTheByte) {
  TempDir tmp;
  std::vector<std::string> lines;
  for (const auto& [item, line] : records()) lines.push_back(line);
  write_dir(tmp.path() / "whole", manifest(nullptr, {0, 1, 2, 3}), lines);
  LoadedResults whole = load_results(tmp.path() / "whole");
  Scores ws = score(whole, ScoreSettings{});
  for (int count : {2, 3, 7}) {
    fs::path dir = tmp.path() / ("n" + std::to_string(count));
    write_shards(dir, count);
    LoadedResults merged = load_run(dir);
    Scores ms = score(merged, ScoreSettings{});
    EXPECT_EQ(without_run(ws, whole).dump(2), without_run(ms, merged).dump(2)) << count << " shards";
    EXPECT_EQ(summary_md(ws, whole), summary_md(ms, merged)) << count << " shards";
    EXPECT_EQ(curves_csv(ws), curves_csv(ms)) << count << " shards";
    EXPECT_EQ(merged.records, 16);
    EXPECT_EQ(merged.duplicates, 1);  // the re-evaluation, as in the unsharded file
    ASSERT_EQ(merged.run["shards"].size(), static_cast<size_t>(count));
    EXPECT_TRUE(merged.run["settings"]["shard"].is_null());
    EXPECT_EQ(merged.run["selection"].size(), 4u);  // problem 4 stays a problem of the run: missing, counts 0
  }
  EXPECT_EQ(ws.missing, std::vector<std::string>{"004_reduce"});
}

std::string merge_error(const std::vector<fs::path>& dirs, bool partial = false) {
  try {
    load_shards(dirs, partial);
  } catch (const pkb::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Merge, RefusesShardsThatAreNotOneRunNamingTheField) {
  TempDir tmp;
  write_shards(tmp.path(), 3);
  std::vector<fs::path> shards = shard_subdirectories(tmp.path());
  ASSERT_EQ(shards.size(), 3u);

  EXPECT_NE(merge_error({shards[0], shards[2]}).find("shards missing: 1/3"), std::string::npos);
  LoadedResults partial = load_shards({shards[0], shards[2]}, true);
  EXPECT_LT(partial.records, 16);

  EXPECT_NE(merge_error({shards[0], shards[1], shards[1], shards[2]}).find("given twice"), std::string::npos);

  json m = pkb::read_json_or_null(shards[1] / "manifest.json");
  m["settings"]["dtype"] = "fp32";
  pkb::test::write_file(shards[1] / "manifest.json", m.dump());
  std::string e = merge_error(shards);
  EXPECT_NE(e.find("settings.dtype = \"fp32\""), std::string::npos) << e;
  EXPECT_NE(e.find("\"bf16\""), std::string::npos) << e;

  m["settings"]["dtype"] = "bf16";
  m["settings"]["shard"]["samples"] = 9;
  pkb::test::write_file(shards[1] / "manifest.json", m.dump());
  e = merge_error(shards);
  EXPECT_NE(e.find("settings.shard.samples"), std::string::npos) << e;

  m["settings"]["shard"] = nullptr;
  pkb::test::write_file(shards[1] / "manifest.json", m.dump());
  e = merge_error(shards);
  EXPECT_NE(e.find("settings.shard is absent"), std::string::npos) << e;
}

TEST(Merge, RefusesASampleRecordedByTwoShards) {
  TempDir tmp;
  write_shards(tmp.path(), 2);
  std::vector<fs::path> shards = shard_subdirectories(tmp.path());
  RecordSpec r;  // sample 0 of problem 1 belongs to shard 0; shard 1 records it too
  r.sample = 0, r.sha256 = std::string(64, 'z');
  std::ofstream(shards[1] / "results.jsonl", std::ios::app) << record_line(r);
  std::string e = merge_error(shards);
  EXPECT_NE(e.find("sample 001_allreduce#0 is recorded by both"), std::string::npos) << e;
}

}  // namespace
