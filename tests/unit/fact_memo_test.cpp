// core/fact_memo: facts kept between processes are believed only for the same inputs and unchanged files, and a memo
// that is damaged, missing or unwritable is learned afresh, never an error.
#include "core/fact_memo.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/files.h"
#include "launch/sandbox.h"
#include "test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// PKB_FACTS_DIR pointed at `dir` for a scope.
struct FactsDirFor {
  explicit FactsDirFor(const fs::path& dir) {
    if (const char* before = getenv("PKB_FACTS_DIR")) saved = before, had = true;
    setenv("PKB_FACTS_DIR", dir.c_str(), 1);
  }
  ~FactsDirFor() { had ? setenv("PKB_FACTS_DIR", saved.c_str(), 1) : unsetenv("PKB_FACTS_DIR"); }
  std::string saved;
  bool had = false;
};

bool is_string(const json& v) { return v.is_string(); }

// Learns "v<n>" (n counting its calls), depending on `file`.
struct CountingLearner {
  fs::path file;
  std::atomic<int> calls{0};
  std::function<pkb::LearnedFact()> learn() {
    return [this] { return pkb::LearnedFact{"v" + std::to_string(++calls), {file}}; };
  }
};

TEST(FactMemo, KeptForTheSameInputsUntilAFileItDependsOnChanges) {
  pkb::test::TempDir tmp;
  FactsDirFor facts(tmp.path() / "facts");
  CountingLearner l{tmp.path() / "tool"};
  pkb::test::write_file(l.file, "one");
  EXPECT_EQ(pkb::memoized_fact("tool_version", {{"tool", "a"}}, l.learn(), is_string), "v1");
  EXPECT_EQ(pkb::memoized_fact("tool_version", {{"tool", "a"}}, l.learn(), is_string), "v1") << "kept";
  EXPECT_EQ(pkb::memoized_fact("tool_version", {{"tool", "b"}}, l.learn(), is_string), "v2") << "other inputs";
  EXPECT_EQ(pkb::memoized_fact("other_kind", {{"tool", "a"}}, l.learn(), is_string), "v3") << "another kind of fact";
  // The same size and contents written again still changes the stamp (the change time moves on).
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  pkb::test::write_file(l.file, "one");
  EXPECT_EQ(pkb::memoized_fact("tool_version", {{"tool", "a"}}, l.learn(), is_string), "v4");
  fs::remove(l.file);
  EXPECT_EQ(pkb::memoized_fact("tool_version", {{"tool", "a"}}, l.learn(), is_string), "v5") << "a file gone";
  EXPECT_EQ(pkb::memoized_fact("tool_version", {{"tool", "a"}}, l.learn(), is_string), "v5") << "and kept as gone";
}

TEST(FactMemo, DamagedUnwritableOrSwitchedOffMemosAreLearnedAgain) {
  pkb::test::TempDir tmp;
  CountingLearner l{tmp.path() / "tool"};
  pkb::test::write_file(l.file, "x");
  {
    FactsDirFor facts(tmp.path() / "facts");
    pkb::memoized_fact("k", {{"i", 1}}, l.learn(), is_string);
    for (const auto& e : fs::directory_iterator(tmp.path() / "facts")) pkb::test::write_file(e.path(), "{\"inputs\":");
    EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, l.learn(), is_string), "v2") << "a torn memo";
    for (const auto& e : fs::directory_iterator(tmp.path() / "facts"))
      pkb::test::write_file(e.path(), json{{"inputs", {{"i", 1}}}, {"value", "forged"}, {"stamps", "no"}}.dump());
    EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, l.learn(), is_string), "v3") << "stamps that are not a list";
    for (const auto& e : fs::directory_iterator(tmp.path() / "facts")) {
      json kept = pkb::read_json_or_null(e.path());
      kept["value"] = 42;  // inputs and stamps intact, a value of another shape
      pkb::write_json_atomically(e.path(), kept);
    }
    EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, l.learn(), is_string), "v4") << "a value the caller cannot believe";
  }
  {
    pkb::test::write_file(tmp.path() / "a-file", "");
    FactsDirFor facts(tmp.path() / "a-file" / "facts");  // no folder can be made there
    EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, l.learn(), is_string), "v5");
    EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, l.learn(), is_string), "v6");
  }
  {
    FactsDirFor facts("");
    EXPECT_TRUE(pkb::facts_dir().empty());
    EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, l.learn(), is_string), "v7");
    EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, l.learn(), is_string), "v8");
  }
}

TEST(FactMemo, AFailureToLearnIsNotKept) {
  pkb::test::TempDir tmp;
  FactsDirFor facts(tmp.path() / "facts");
  int calls = 0;
  auto failing = [&] { return pkb::LearnedFact{"unknown", {}, ++calls > 1}; };
  EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, failing, is_string), "unknown");
  EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, failing, is_string), "unknown");
  EXPECT_EQ(calls, 2) << "the first answer was a failure, so it was asked again";
  EXPECT_EQ(pkb::memoized_fact("k", {{"i", 1}}, failing, is_string), "unknown");
  EXPECT_EQ(calls, 2) << "the second was kept";
}

// Processes of one run (and threads of pkb run) learn and keep the same fact side by side.
TEST(FactMemo, ConcurrentLearnersAgree) {
  pkb::test::TempDir tmp;
  FactsDirFor facts(tmp.path() / "facts");
  pkb::test::write_file(tmp.path() / "dep", "d");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        json v = pkb::memoized_fact(
            "shared", {{"i", i % 3}},
            [&] {
              return pkb::LearnedFact{"answer" + std::to_string(i % 3), {tmp.path() / "dep"}};
            },
            is_string);
        wrong += v != "answer" + std::to_string(i % 3);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  int files = 0;
  for (const auto& e : fs::directory_iterator(tmp.path() / "facts")) files += e.path().extension() == ".json";
  EXPECT_EQ(files, 3) << "one memo per inputs, no temporary files left";
}

TEST(FactMemo, FindsProgramsAsExecDoes) {
  EXPECT_EQ(pkb::find_program("sh"), fs::canonical("/bin/sh"));
  EXPECT_TRUE(pkb::find_program("no-such-program-pkb").empty());
  EXPECT_EQ(pkb::find_program("/bin/sh"), fs::canonical("/bin/sh"));
}

// The loader's answer for a binary is kept, and a kept answer that names a library that is no longer there is not
// believed: the libraries are asked of ldd again.
TEST(FactMemo, SharedLibrariesAreKeptAndAStaleAnswerIsAskedAgain) {
  pkb::test::TempDir tmp;
  FactsDirFor facts(tmp.path() / "facts");
  fs::copy_file("/bin/true", tmp.path() / "first");
  const auto libs = pkb::shared_libraries(tmp.path() / "first");
  ASSERT_FALSE(libs.empty());
  std::vector<fs::path> memos;
  for (const auto& e : fs::directory_iterator(tmp.path() / "facts")) memos.push_back(e.path());
  ASSERT_EQ(memos.size(), 1u);
  // A binary of its own path (the process keeps answers per path) finds the same memo: its inputs name the real file.
  fs::create_symlink(tmp.path() / "first", tmp.path() / "second");
  json memo = pkb::read_json_or_null(memos[0]);
  memo["value"] = json::array({"/nonexistent/libforged.so"});
  memo["stamps"].push_back({"/nonexistent/libforged.so", "1:2:3"});
  pkb::write_json_atomically(memos[0], memo);
  EXPECT_EQ(pkb::shared_libraries(tmp.path() / "second"), libs);
  // And that new answer was kept in its place.
  EXPECT_EQ(pkb::read_json_or_null(memos[0])["value"].size(), libs.size());
  fs::create_symlink(tmp.path() / "first", tmp.path() / "third");
  memo = pkb::read_json_or_null(memos[0]);
  memo["value"] = json::array({"/kept/answer.so"});  // stamps untouched: a kept answer is believed
  pkb::write_json_atomically(memos[0], memo);
  EXPECT_EQ(pkb::shared_libraries(tmp.path() / "third"), std::vector<fs::path>{"/kept/answer.so"});
  memo["value"] = json::array({42});  // not a list of paths: ldd is asked instead
  pkb::write_json_atomically(memos[0], memo);
  fs::create_symlink(tmp.path() / "first", tmp.path() / "fourth");
  EXPECT_EQ(pkb::shared_libraries(tmp.path() / "fourth"), libs);
}

}  // namespace
