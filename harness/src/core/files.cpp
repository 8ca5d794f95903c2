#include "core/files.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace pkb {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json read_json_or_null(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};  // threads of one process write side by side (pkb run)
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  auto fail = [&](const std::string& what) {
    std::string why = strerror(errno);
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return Error(path.string() + ": " + what + " (" + why + ")");
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw fail("cannot create " + tmp.filename().string());
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw fail("cannot write " + std::to_string(bytes.size()) + " bytes");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    errno = ec.value();
    throw fail("cannot rename " + tmp.filename().string() + " into place");
  }
}

void write_json_atomically(const std::filesystem::path& path, const nlohmann::json& value) {
  write_file_atomically(path, value.dump(2) + "\n");
}

namespace {
// Work directories of processes that no longer exist (killed mid-build) are removed: nobody will finish them.
void remove_abandoned_work_dirs(const std::filesystem::path& parent) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(parent, ec)) {
    std::string name = e.path().filename().string();
    size_t at = name.rfind(".work-");
    if (at == std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + at + 6));
    if (pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove_all(e.path(), ec);
  }
}
}  // namespace

std::filesystem::path private_work_dir(const std::filesystem::path& entry) {
  static std::atomic<int> counter{0};
  remove_abandoned_work_dirs(entry.parent_path());
  std::filesystem::path work = entry.string() + ".work-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  return work;
}

void place_directory(const std::filesystem::path& work, const std::filesystem::path& entry, const std::string& marker) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(entry) && !fs::exists(entry / marker)) fs::remove_all(entry, ec);
  fs::rename(work, entry, ec);
  if (ec) fs::remove_all(work, ec);  // another process placed its complete entry first: keep that one
  if (!fs::exists(entry / marker)) throw Error(entry.string() + ": could not be placed (no " + marker + ")");
}

void append_line(const std::filesystem::path& path, const std::string& line) {
  std::string bytes = line + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path.string() + ": cannot open for appending: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      throw Error(path.string() + ": append failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

size_t repair_jsonl_tail(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return 0;
  std::string text = read_text_file(path);
  if (text.empty() || text.back() == '\n') return 0;
  size_t keep = text.rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  std::filesystem::resize_file(path, keep);
  return text.size() - keep;
}

}  // namespace pkb
