#include "core/fact_memo.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "core/files.h"
#include "core/sha256.h"

namespace pkb {

namespace fs = std::filesystem;
using nlohmann::json;

std::string file_stamp(const fs::path& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "missing";
  std::ostringstream s;
  s << st.st_dev << ':' << st.st_ino << ':' << st.st_size << ':' << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec
    << ':' << st.st_ctim.tv_sec << '.' << st.st_ctim.tv_nsec;
  return s.str();
}

fs::path facts_dir() {
  if (const char* dir = getenv("PKB_FACTS_DIR")) return dir;
  if (const char* xdg = getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return fs::path(xdg) / "pkb" / "facts";
  if (const char* home = getenv("HOME"); home && *home == '/') return fs::path(home) / ".cache" / "pkb" / "facts";
  return {};
}

fs::path find_program(const std::string& program) {
  std::error_code ec;
  if (program.find('/') != std::string::npos) return fs::canonical(program, ec);
  const char* path = getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate, ec)) return fs::canonical(candidate, ec);
  }
  return {};
}

namespace {

// The stamps of `files`, in order.
json stamps_of(const std::vector<fs::path>& files) {
  json stamps = json::array();
  for (const fs::path& f : files) stamps.push_back({f.string(), file_stamp(f)});
  return stamps;
}

// The kept value when it was kept for exactly these inputs and its files still carry their stamps; else null.
json recall(const fs::path& file, const json& inputs) {
  json kept = read_json_or_null(file);
  if (!kept.is_object() || kept.value("inputs", json()) != inputs || !kept.contains("value")) return nullptr;
  const json& stamps = kept.value("stamps", json());
  if (!stamps.is_array()) return nullptr;
  for (const json& s : stamps)
    if (!s.is_array() || s.size() != 2 || !s[0].is_string() || !s[1].is_string() ||
        file_stamp(s[0].get<std::string>()) != s[1].get<std::string>())
      return nullptr;
  return kept["value"];
}

}  // namespace

json memoized_fact(const std::string& kind, const json& inputs, const std::function<LearnedFact()>& learn,
                   const std::function<bool(const json&)>& believable) {
  const fs::path dir = facts_dir();
  const fs::path file =
      dir.empty() ? fs::path() : dir / (kind + "-" + sha256_hex(inputs.dump()).substr(0, 32) + ".json");
  if (!file.empty())
    if (json value = recall(file, inputs); !value.is_null() && believable(value)) return value;
  LearnedFact fact = learn();
  if (!file.empty() && fact.keep) {
    try {
      std::error_code ec;
      fs::create_directories(dir, ec);
      write_json_atomically(file, {{"inputs", inputs}, {"value", fact.value}, {"stamps", stamps_of(fact.depends_on)}});
    } catch (const std::exception&) {  // a read-only or full home: learned again next time
    }
  }
  return fact.value;
}

}  // namespace pkb
