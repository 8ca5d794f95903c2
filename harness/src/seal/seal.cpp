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
constexpr const char* kMagic = "PKBSEAL1";
constexpr size_t kMaxHeader = 256;

constexpr int kPipeBytes = 1 << 20;  // /proc/sys/fs/pipe-max-size's default

bool label_ok(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return s != "." && s != "..";
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

void SealWriter::send(const std::string& kind, const std::string& label, const std::string& payload) {
  if (fd_ < 0) return;
  std::string frame = std::string(kMagic) + " " + std::to_string(seq_++) + " " + kind + " " + label + " " +
                      std::to_string(payload.size()) + "\n";
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

// One rank's stream, parsed incrementally: a header line, then a payload that goes to a file or nowhere.
struct SealCollector::Stream {
  int fd = -1;
  int rank = 0;
  bool eof = false;
  std::string header;
  uint64_t payload_left = 0;
  bool in_payload = false;
  std::string kind, label;
  std::string record_buf;
  std::ofstream file;
  fs::path file_path;
  uint64_t next_seq = 0;
  SealedRank* out = nullptr;

  void corrupt(const std::string& why) {
    if (out->error.empty())
      out->error = "rank " + std::to_string(rank) + ": " + why + " at byte " + std::to_string(out->bytes);
  }
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
    auto s = std::make_unique<Stream>();
    s->rank = r;
    s->out = &result_[r];
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

void SealCollector::loop(Stream& stream) {
  std::vector<char> buf(1 << 20);
  auto complete = [](Stream& s) {
    SealedRank& out = *s.out;
    s.in_payload = false;
    if (s.kind == "record") out.record = std::move(s.record_buf), s.record_buf.clear();
    if (s.file.is_open()) {
      s.file.close();
      if (!s.file) s.corrupt("cannot store frame " + s.label);
    }
    if (s.kind == "outputs") out.outputs.push_back(s.label);
  };
  auto consume = [&](Stream& s, const char* p, size_t n) {
    SealedRank& out = *s.out;
    while (n > 0 && out.error.empty()) {
      if (s.in_payload) {
        size_t take = static_cast<size_t>(std::min<uint64_t>(n, s.payload_left));
        if (s.kind == "record")
          s.record_buf.append(p, take);
        else if (s.file.is_open())
          s.file.write(p, static_cast<std::streamsize>(take));
        p += take, n -= take, s.payload_left -= take, out.bytes += take;
        if (s.payload_left == 0) complete(s);
        continue;
      }
      if (out.ended) {
        s.corrupt("data after the end frame");
        break;
      }
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
      size_t take = nl ? static_cast<size_t>(nl - p) + 1 : n;
      s.header.append(p, take);
      p += take, n -= take, out.bytes += take;
      if (s.header.size() > kMaxHeader) {
        s.corrupt("frame header too long");
        break;
      }
      if (!nl) continue;
      std::string h = s.header.substr(0, s.header.size() - 1);
      s.header.clear();
      char magic[16], kind[16], label[80];
      unsigned long long seq = 0, bytes = 0;
      if (std::sscanf(h.c_str(), "%15s %llu %15s %79s %llu", magic, &seq, kind, label, &bytes) != 5 ||
          std::string(magic) != kMagic) {
        s.corrupt("malformed frame header");
        break;
      }
      if (seq != s.next_seq) {
        s.corrupt("frame " + std::to_string(seq) + " where " + std::to_string(s.next_seq) + " was due");
        break;
      }
      ++s.next_seq;
      s.kind = kind;
      s.label = label;
      if (!label_ok(s.label) || (s.kind != "record" && s.kind != "outputs" && s.kind != "end")) {
        s.corrupt("unknown frame '" + s.kind + " " + s.label + "'");
        break;
      }
      if (s.kind == "end") {
        out.ended = true;
        if (bytes != 0) s.corrupt("end frame with a payload");
        continue;
      }
      if (s.kind == "outputs") {
        for (const auto& l : out.outputs)
          if (l == s.label) s.corrupt("outputs '" + s.label + "' sent twice");
        if (!out.error.empty()) break;
        if (keep_(s.label)) {
          std::error_code ec;  // every rank's thread creates the label's directory: no throwing here
          fs::create_directories(out_dir_ / s.label, ec);
          s.file_path = out_dir_ / s.label / ("rank" + std::to_string(s.rank) + ".safetensors");
          s.file.open(s.file_path, std::ios::binary | std::ios::trunc);
          if (!s.file.is_open()) {
            s.corrupt("cannot store frame " + s.label + " in " + s.file_path.string());
            break;
          }
        }
      }
      s.payload_left = bytes;
      s.in_payload = true;
      if (bytes == 0) complete(s);
    }
  };
  auto drain = [&](Stream& s) {
    for (;;) {
      ssize_t n = ::read(s.fd, buf.data(), buf.size());
      if (n > 0) {
        if (s.out->bytes + static_cast<uint64_t>(n) > max_bytes_)
          s.corrupt("more than " + std::to_string(max_bytes_) + " bytes");
        if (s.out->error.empty()) consume(s, buf.data(), static_cast<size_t>(n));
        continue;  // a corrupt stream is still read, so its writer never blocks
      }
      if (n == 0) s.eof = true;
      return;
    }
  };
  while (!stream.eof) {
    bool stopping = stop_.load();
    pollfd fd{stream.fd, POLLIN, 0};
    int rc = ::poll(&fd, 1, stopping ? 0 : 50);
    if (rc < 0 && errno != EINTR) break;
    drain(stream);
    if (stopping && rc <= 0) break;  // nothing more is coming: the job is over
  }
  if (stream.in_payload || !stream.header.empty()) stream.corrupt("stream cut off inside a frame");
  if (stream.file.is_open()) stream.file.close();
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
