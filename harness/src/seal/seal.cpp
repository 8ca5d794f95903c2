#include "seal/seal.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;

constexpr int kPipeBytes = 1 << 20;  // /proc/sys/fs/pipe-max-size's default

// Keeps what one rank's parser accepts: the last record's payload, kept outputs in files, every outputs label.
class RankStore final : public FrameSink {
 public:
  RankStore(SealedRank& out, int rank, const fs::path& out_dir, const std::function<bool(const std::string&)>& keep)
      : out_(out), rank_(rank), out_dir_(out_dir), keep_(keep) {}

  std::string begin(const FrameHeader& h) override {
    if (h.kind != FrameKind::outputs || !keep_(h.label)) return "";
    std::error_code ec;  // every rank's thread creates the label's directory: no throwing here
    fs::create_directories(out_dir_ / h.label, ec);
    fs::path path = out_dir_ / h.label / ("rank" + std::to_string(rank_) + ".safetensors");
    file_.open(path, std::ios::binary | std::ios::trunc);
    return file_.is_open() ? "" : "cannot store frame " + h.label + " in " + path.string();
  }

  void payload(const FrameHeader& h, const char* data, size_t len) override {
    if (h.kind == FrameKind::record)
      record_.append(data, len);
    else if (file_.is_open())
      file_.write(data, static_cast<std::streamsize>(len));
  }

  std::string complete(const FrameHeader& h) override {
    std::string why;
    if (h.kind == FrameKind::record) out_.record = std::move(record_), record_.clear();
    if (file_.is_open()) {
      file_.close();
      if (!file_) why = "cannot store frame " + h.label;
    }
    if (h.kind == FrameKind::outputs) out_.outputs.push_back(h.label);
    return why;
  }

  // The stream is over: a frame cut off leaves its file as far as it got.
  void close() {
    if (file_.is_open()) file_.close();
  }

 private:
  SealedRank& out_;
  int rank_;
  const fs::path& out_dir_;
  const std::function<bool(const std::string&)>& keep_;
  std::string record_;  // the payload of the record frame being read
  std::ofstream file_;  // the kept outputs frame being read
};

// Reads what the FIFO holds now into the parser; true at end-of-file. A broken stream is still read (the parser
// ignores it), so its writer never blocks.
bool drain(int fd, FrameParser& parser, std::vector<char>& buf) {
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      parser.feed(buf.data(), static_cast<size_t>(n));
      continue;
    }
    return n == 0;
  }
}

}  // namespace

SealWriter::SealWriter(const std::string& fifo_path) {
  if (fifo_path.empty()) return;
  fd_ = ::open(fifo_path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error("sealed channel " + fifo_path + ": cannot open: " + std::strerror(errno));
}

SealWriter::~SealWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void SealWriter::send(FrameKind kind, const std::string& label, const std::string& payload) {
  if (fd_ < 0) return;
  std::string frame = frame_header({seq_++, kind, label, payload.size()});
  for (const std::string* part : std::initializer_list<const std::string*>{&frame, &payload}) {
    size_t done = 0;
    while (done < part->size()) {
      ssize_t n = ::write(fd_, part->data() + done, part->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(std::string("sealed channel: write failed: ") + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
  }
}

// One rank's FIFO and its parser.
struct SealCollector::Stream {
  Stream(SealedRank& out, int rank, const fs::path& out_dir, const std::function<bool(const std::string&)>& keep,
         uint64_t max_bytes)
      : out(out), rank(rank), store(out, rank, out_dir, keep), parser(store, max_bytes) {}
  SealedRank& out;
  int rank;
  int fd = -1;
  RankStore store;
  FrameParser parser;
};

SealCollector::SealCollector(const fs::path& fifo_dir, const fs::path& out_dir, int world, uint64_t max_bytes,
                             std::function<bool(const std::string&)> keep)
    : out_dir_(out_dir), max_bytes_(max_bytes), keep_(std::move(keep)), result_(world) {
  fs::create_directories(fifo_dir);
  fs::create_directories(out_dir);
  for (int r = 0; r < world; ++r) {
    fs::path p = fifo_dir / ("rank" + std::to_string(r));
    fs::remove(p);
    if (mkfifo(p.c_str(), 0622) != 0) throw Error(p.string() + ": mkfifo failed: " + std::strerror(errno));
    chmod(p.c_str(), 0622);  // the sandbox's uid must be able to open it for writing, whatever the umask
    auto s = std::make_unique<Stream>(result_[r], r, out_dir_, keep_, max_bytes_);
    s->fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (s->fd < 0) throw Error(p.string() + ": cannot open: " + std::strerror(errno));
    // Captures of every timed call pass here (GBs per rank for large outputs): a 1 MiB pipe instead of the
    // default 64 KiB wakes this thread and the writers 16x less often. Best effort: the default still works.
    ::fcntl(s->fd, F_SETPIPE_SZ, kPipeBytes);
    keepalive_.push_back(::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    streams_.push_back(std::move(s));
  }
  for (auto& s : streams_) threads_.emplace_back([this, stream = s.get()] { loop(*stream); });
}

SealCollector::~SealCollector() { finish(); }

void SealCollector::loop(Stream& s) {
  std::vector<char> buf(1 << 20);
  bool eof = false;
  while (!eof) {
    bool stopping = stop_.load();
    pollfd fd{s.fd, POLLIN, 0};
    int rc = ::poll(&fd, 1, stopping ? 0 : 50);
    if (rc < 0 && errno != EINTR) break;
    eof = drain(s.fd, s.parser, buf);
    if (stopping && rc <= 0) break;  // nothing more is coming: the job is over
  }
  s.parser.finish();
  s.store.close();
  s.out.ended = s.parser.ended();
  s.out.bytes = s.parser.bytes();
  if (!s.parser.ok())
    s.out.error = "rank " + std::to_string(s.rank) + ": " + s.parser.message() + " at byte " +
                  std::to_string(s.parser.error_at());
}

const std::vector<SealedRank>& SealCollector::finish() {
  if (finished_) return result_;
  finished_ = true;
  for (int fd : keepalive_)
    if (fd >= 0) ::close(fd);
  stop_ = true;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  for (auto& s : streams_)
    if (s->fd >= 0) ::close(s->fd);
  return result_;
}

}  // namespace pkb
