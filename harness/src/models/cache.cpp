#include "models/cache.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"

namespace pkb::models {
namespace {

constexpr const char* kSchema = "pkb.llm_cache/1";

// write() all of `data`, then fsync, so the rename below publishes complete content even across a crash.
bool write_file_synced(const std::filesystem::path& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += size_t(n);
  }
  bool ok = done == data.size() && ::fsync(fd) == 0;
  return ::close(fd) == 0 && ok;
}

std::string temp_suffix() {
  static std::atomic<unsigned long> counter{0};
  std::ostringstream s;
  s << ".tmp." << ::getpid() << "." << counter++;
  return s.str();
}

}  // namespace

ReplyCache::ReplyCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error("reply cache " + dir_.string() + ": " + ec.message());
}

nlohmann::json ReplyCache::key_material(const ModelName& name, const Request& req) {
  // nlohmann::json objects are std::map-backed: dump() emits sorted keys, which makes this canonical.
  nlohmann::json m = {{"schema", kSchema},
                      {"provider", name.provider},
                      {"model", name.model},
                      {"system", req.system},
                      {"user", req.user},
                      {"max_output_tokens", req.max_output_tokens},
                      {"temperature", req.temperature ? nlohmann::json(*req.temperature) : nlohmann::json()},
                      {"sample_index", req.sample_index},
                      {"extra", req.extra}};
  // A later turn is keyed on the whole conversation; single-turn keys stay what they were, so existing caches hit.
  if (!req.history.empty()) m["history"] = history_json(req.history);
  if (!req.conversation.empty()) m["conversation"] = conversation_json(req.conversation);  // agent mode
  if (!req.tools.empty()) m["tools"] = tools_json(req.tools);
  return m;
}

std::string ReplyCache::key(const ModelName& name, const Request& req) {
  // Bytes that are not UTF-8 (in a tool result, say) hash as U+FFFD, as they are sent: never a throw.
  return sha256_hex(key_material(name, req).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::filesystem::path ReplyCache::path_for(const std::string& key) const {
  return dir_ / key.substr(0, 2) / (key + ".json");
}

std::optional<Reply> ReplyCache::load(const ModelName& name, const Request& req) const {
  auto path = path_for(key(name, req));
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  try {
    if (j.is_discarded() || j.value("schema", "") != kSchema) throw std::runtime_error("not a cache entry");
    Reply r = reply_from_json(j.at("reply"));
    r.from_cache = true;
    return r;
  } catch (const std::exception& e) {
    spdlog::warn("reply cache: ignoring unreadable {}: {}", path.string(), e.what());
    return std::nullopt;
  }
}

bool ReplyCache::store(const ModelName& name, const Request& req, const Reply& reply) const {
  if (!cacheable(reply)) return false;
  std::string k = key(name, req);
  auto path = path_for(k);
  // Request, not headers or base URL: API keys never reach this file.
  nlohmann::json entry = {{"schema", kSchema},         {"key", k},
                          {"provider", name.provider}, {"model", name.model},
                          {"request", to_json(req)},   {"reply", to_json(reply)}};
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  auto tmp = path;
  tmp += temp_suffix();
  if (ec || !write_file_synced(tmp, entry.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")) {
    spdlog::error("reply cache: cannot write {}: {}", tmp.string(), ec ? ec.message() : std::strerror(errno));
    std::filesystem::remove(tmp, ec);
    return false;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    spdlog::error("reply cache: cannot rename into {}: {}", path.string(), ec.message());
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace pkb::models
