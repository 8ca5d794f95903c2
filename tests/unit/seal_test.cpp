// The sealed channel: frames written by a rank arrive whole; extra, repeated, oversized or cut-off frames make
// the stream one the driver does not believe.
#include "seal/seal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "core/files.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using pkb::FrameKind;
using pkb::SealCollector;
using pkb::SealWriter;

void write_raw(const fs::path& fifo, const std::string& bytes) {
  int fd = ::open(fifo.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

TEST(Seal, FramesArriveAndOnlyKeptOutputsAreStored) {
  pkb::test::TempDir tmp;
  SealCollector c(tmp.path() / "fifo", tmp.path() / "sealed", 2, 1 << 20,
                  [](const std::string& l) { return l != "copy3"; });
  for (int r = 0; r < 2; ++r) {
    SealWriter w((tmp.path() / "fifo" / ("rank" + std::to_string(r))).string());
    w.send(FrameKind::outputs, "trial0", "payload-" + std::to_string(r));
    w.send(FrameKind::outputs, "copy3", std::string(100000, 'x'));  // read and dropped
    w.send(FrameKind::record, "record", "{\"status\":\"ok\"}");
    w.send(FrameKind::record, "record", "{\"status\":\"ok\",\"n\":2}");
    w.send(FrameKind::end, "end", "");
  }
  const auto& got = c.finish();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(got[r].error, "");
    EXPECT_TRUE(got[r].ended);
    EXPECT_EQ(got[r].record, "{\"status\":\"ok\",\"n\":2}");
    EXPECT_EQ(pkb::read_text_file(tmp.path() / "sealed/trial0" / ("rank" + std::to_string(r) + ".safetensors")),
              "payload-" + std::to_string(r));
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "sealed/copy3"));
}

TEST(Seal, AnInjectedFrameBreaksTheSequence) {
  pkb::test::TempDir tmp;
  SealCollector c(tmp.path() / "fifo", tmp.path() / "sealed", 1, 1 << 20, [](const std::string&) { return true; });
  {
    SealWriter w((tmp.path() / "fifo/rank0").string());
    w.send(FrameKind::record, "record", "{}");
    write_raw(tmp.path() / "fifo/rank0", "PKBSEAL1 1 record record 2\n{}");  // candidate code, same fd or not
    w.send(FrameKind::record, "record", "{\"real\":1}");
  }
  EXPECT_NE(c.finish()[0].error.find("where 2 was due"), std::string::npos) << c.finish()[0].error;
}

TEST(Seal, RepeatedOutputsDataAfterEndOversizeAndCutOffAreCorrupt) {
  auto run = [](const std::function<void(SealWriter&, const fs::path&)>& body, uint64_t max_bytes = 1 << 20) {
    pkb::test::TempDir tmp;
    SealCollector c(tmp.path() / "fifo", tmp.path() / "sealed", 1, max_bytes, [](const std::string&) { return true; });
    {
      SealWriter w((tmp.path() / "fifo/rank0").string());
      body(w, tmp.path() / "fifo/rank0");
    }
    return c.finish()[0].error;
  };
  EXPECT_NE(run([](SealWriter& w, const fs::path&) {
              w.send(FrameKind::outputs, "trial0", "a");
              w.send(FrameKind::outputs, "trial0", "b");
            }).find("sent twice"),
            std::string::npos);
  EXPECT_NE(run([](SealWriter& w, const fs::path&) {
              w.send(FrameKind::end, "end", "");
              w.send(FrameKind::record, "record", "{}");
            }).find("after the end"),
            std::string::npos);
  EXPECT_NE(
      run([](SealWriter& w, const fs::path&) { w.send(FrameKind::outputs, "trial0", std::string(5000, 'x')); }, 1000)
          .find("more than 1000 bytes"),
      std::string::npos);
  EXPECT_NE(
      run([](SealWriter&, const fs::path& p) { write_raw(p, "PKBSEAL1 0 outputs trial0 100\nshort"); }).find("cut off"),
      std::string::npos);
  EXPECT_NE(run([](SealWriter&, const fs::path& p) { write_raw(p, "garbage that is no frame\n"); }).find("malformed"),
            std::string::npos);
  EXPECT_NE(run([](SealWriter&, const fs::path& p) {
              write_raw(p, "PKBSEAL1 0 outputs ../../etc 1\nx");
            }).find("unknown frame"),
            std::string::npos);
  EXPECT_EQ(run([](SealWriter& w, const fs::path&) { w.send(FrameKind::end, "end", ""); }), "");
}

}  // namespace
