// core/files: the one checked writer, JSONL appends and their tail repair, cache entries placed by rename.
#include "core/files.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST(WriteFileAtomically, ReplacesTheFileAndLeavesNothingBeside) {
  pkb::test::TempDir tmp;
  fs::path f = tmp.path() / "record.json";
  pkb::write_file_atomically(f, "first");
  std::string binary("a\0b\xff", 4);
  pkb::write_file_atomically(f, binary);
  EXPECT_EQ(pkb::read_text_file(f), binary);
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"record.json"});
}

// Lowers this process's file-size limit for a scope; the signal a write past it raises is ignored meanwhile, so
// write(2) fails with EFBIG as it would with ENOSPC on a full disk.
struct FileSizeLimit {
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved);
    old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lower = saved;
    lower.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lower);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, old_handler);
  }
  rlimit saved{};
  void (*old_handler)(int) = nullptr;
};

TEST(WriteFileAtomically, AWriteThatCannotFinishThrowsAndKeepsTheOldFile) {
  pkb::test::TempDir tmp;
  fs::path f = tmp.path() / "rank0.json";
  pkb::write_file_atomically(f, "{\"complete\": true}\n");
  // 600 bytes stay in the stream's buffer until the close (libstdc++ writes chunks of 1 KiB and more at once),
  // a megabyte fails while being written.
  for (size_t bytes : {size_t{600}, size_t{1} << 20}) {
    try {
      FileSizeLimit limit(256);
      pkb::write_file_atomically(f, std::string(bytes, 'x'));
      ADD_FAILURE() << bytes << " bytes were written under a 256-byte limit";
    } catch (const pkb::Error& e) {
      EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cannot write"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(pkb::read_text_file(f), "{\"complete\": true}\n");
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"rank0.json"}) << "the partial temporary is removed";
}

TEST(WriteFileAtomically, AMissingDirectoryIsAnErrorNamingTheFile) {
  pkb::test::TempDir tmp;
  fs::path f = tmp.path() / "no-such-dir" / "junit.xml";
  try {
    pkb::write_file_atomically(f, "<testsuites/>");
    FAIL() << "no error";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find(f.string() + ": cannot create"), std::string::npos) << e.what();
  }
}

TEST(WriteFileAtomically, ConcurrentWritersLeaveOneWholeVersion) {
  pkb::test::TempDir tmp;
  fs::path f = tmp.path() / "validation.json";
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) pkb::write_file_atomically(f, std::string(10000, static_cast<char>('a' + t)));
    });
  for (auto& w : writers) w.join();
  std::string text = pkb::read_text_file(f);
  ASSERT_EQ(text.size(), 10000u);
  EXPECT_EQ(text, std::string(10000, text[0])) << "bytes of two writers mixed";
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"validation.json"});
}

TEST(AppendLine, ConcurrentAppendersNeverInterleave) {
  pkb::test::TempDir tmp;
  fs::path f = tmp.path() / "results.jsonl";
  std::vector<std::thread> appenders;
  for (int t = 0; t < 8; ++t)
    appenders.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) pkb::append_line(f, std::string(3000, static_cast<char>('a' + t)));
    });
  for (auto& a : appenders) a.join();
  std::string text = pkb::read_text_file(f);
  size_t lines = 0;
  for (size_t at = 0; at < text.size(); ++lines) {
    size_t end = text.find('\n', at);
    ASSERT_NE(end, std::string::npos);
    std::string line = text.substr(at, end - at);
    ASSERT_EQ(line, std::string(3000, line[0])) << "line " << lines;
    at = end + 1;
  }
  EXPECT_EQ(lines, 400u);
}

TEST(RepairJsonlTail, CutsOnlyAnIncompleteLastLine) {
  pkb::test::TempDir tmp;
  fs::path f = tmp.path() / "results.jsonl";
  EXPECT_EQ(pkb::repair_jsonl_tail(f), 0u) << "absent";
  pkb::test::write_file(f, "{\"a\":1}\n{\"b\":2}\n");
  EXPECT_EQ(pkb::repair_jsonl_tail(f), 0u);
  EXPECT_EQ(pkb::read_text_file(f), "{\"a\":1}\n{\"b\":2}\n");
  pkb::test::write_file(f, "{\"a\":1}\n{\"b\":2}\n{\"c\":");
  EXPECT_EQ(pkb::repair_jsonl_tail(f), 5u);
  EXPECT_EQ(pkb::read_text_file(f), "{\"a\":1}\n{\"b\":2}\n");
  pkb::test::write_file(f, "{\"only\":");
  EXPECT_EQ(pkb::repair_jsonl_tail(f), 8u);
  EXPECT_EQ(pkb::read_text_file(f), "");
}

TEST(PlaceDirectory, TheFirstCompleteEntryWinsAndAnIncompleteOneIsReplaced) {
  pkb::test::TempDir tmp;
  fs::path entry = tmp.path() / "entry";
  fs::path first = pkb::private_work_dir(entry), second = pkb::private_work_dir(entry);
  EXPECT_NE(first, second);
  pkb::test::write_file(first / "complete.json", "first");
  pkb::test::write_file(second / "complete.json", "second");
  pkb::place_directory(first, entry, "complete.json");
  pkb::place_directory(second, entry, "complete.json");  // lost the race: dropped
  EXPECT_EQ(pkb::read_text_file(entry / "complete.json"), "first");
  EXPECT_FALSE(fs::exists(second));

  fs::remove(entry / "complete.json");  // as an interrupted older pkb leaves it
  fs::path third = pkb::private_work_dir(entry);
  pkb::test::write_file(third / "complete.json", "third");
  pkb::place_directory(third, entry, "complete.json");
  EXPECT_EQ(pkb::read_text_file(entry / "complete.json"), "third");

  fs::path empty = pkb::private_work_dir(tmp.path() / "other");
  EXPECT_THROW(pkb::place_directory(empty, tmp.path() / "other", "complete.json"), pkb::Error);
}

}  // namespace
