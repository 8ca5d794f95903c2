#include "spec/catalog.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/error.h"
#include "launch/mpirun.h"
#include "launch/process.h"

#ifndef PKB_SOURCE_DIR
#define PKB_SOURCE_DIR "."
#endif

namespace pkb {

std::filesystem::path repo_root() {
  if (const char* r = getenv("PKB_ROOT"); r && *r) return r;
  static const std::filesystem::path installed = executable_dir().parent_path() / "share" / "pkb";
  if (std::filesystem::is_directory(installed / "problems")) return installed;
  return PKB_SOURCE_DIR;
}

std::string repo_revision() {
  // An installed tree has no .git: `cmake --install` wrote the revision it was built from.
  if (std::ifstream f(repo_root() / "REVISION"); f) {
    std::string rev;
    std::getline(f, rev);
    if (!rev.empty()) return rev;
  }
  std::string rev = capture_stdout({"git", "-C", repo_root().string(), "rev-parse", "--short=12", "HEAD"}, 10);
  while (!rev.empty() && (rev.back() == '\n' || rev.back() == '\r')) rev.pop_back();
  return rev.empty() ? "unknown" : rev;
}

namespace {

// The problem folders (NNN_slug) under problems_dir, in no order.
std::vector<std::filesystem::path> problem_folders(const std::filesystem::path& problems_dir) {
  static const std::regex kFolder(R"(\d{3}_[a-z0-9_]+)");
  std::vector<std::filesystem::path> folders;
  for (const auto& entry : std::filesystem::directory_iterator(problems_dir))
    if (entry.is_directory() && std::regex_match(entry.path().filename().string(), kFolder))
      folders.push_back(entry.path());
  return folders;
}

}  // namespace

Catalog load_catalog(const std::filesystem::path& problems_dir, const std::string& selection) {
  if (!std::filesystem::is_directory(problems_dir)) throw Error(problems_dir.string() + ": not a directory");
  Catalog named;  // what each folder's name says: its id and slug
  for (const auto& dir : problem_folders(problems_dir)) {
    ProblemSpec& s = named.problems.emplace_back();
    s.id = std::stoi(dir.filename().string().substr(0, 3));
    s.slug = dir.filename().string().substr(4);
    s.dir = dir;
  }
  std::sort(named.problems.begin(), named.problems.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  Catalog c;
  for (const ProblemSpec* chosen : named.select(selection)) c.problems.push_back(load_problem(chosen->dir));
  return c;
}

Catalog load_catalog(const std::filesystem::path& problems_dir) {
  Catalog c;
  if (!std::filesystem::is_directory(problems_dir)) {
    c.errors.push_back(problems_dir.string() + ": not a directory");
    return c;
  }
  std::set<int> ids;
  for (const auto& folder : problem_folders(problems_dir)) {
    try {
      ProblemSpec s = load_problem(folder);
      if (!ids.insert(s.id).second) throw Error(folder.string() + ": id " + std::to_string(s.id) + " is used twice");
      c.problems.push_back(std::move(s));
    } catch (const Error& e) {
      c.errors.push_back(e.what());
    }
  }
  std::sort(c.problems.begin(), c.problems.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  std::sort(c.errors.begin(), c.errors.end());
  return c;
}

const ProblemSpec* Catalog::find(int id) const {
  for (const auto& p : problems)
    if (p.id == id) return &p;
  return nullptr;
}

std::vector<const ProblemSpec*> Catalog::select(const std::string& selection) const {
  std::set<int> chosen;
  std::stringstream ss(selection);
  std::string tok;
  static const std::regex kRange(R"((\d+)-(\d+))"), kId(R"(\d+)");
  bool any_token = false;
  while (std::getline(ss, tok, ',')) {
    tok.erase(0, tok.find_first_not_of(" \t"));
    tok.erase(tok.find_last_not_of(" \t") + 1);
    if (tok.empty()) continue;
    any_token = true;
    std::smatch m;
    if (tok == "all") {
      for (const auto& p : problems) chosen.insert(p.id);
    } else if (std::regex_match(tok, m, kRange)) {
      int lo = std::stoi(m[1]), hi = std::stoi(m[2]);
      if (lo > hi) throw Error("problem range '" + tok + "' is empty (start > end)");
      bool found = false;
      for (const auto& p : problems)
        if (p.id >= lo && p.id <= hi) chosen.insert(p.id), found = true;
      if (!found) throw Error("problem range '" + tok + "' matches no problem");
    } else if (std::regex_match(tok, kId)) {
      int id = std::stoi(tok);
      if (!find(id)) throw Error("no problem with id " + tok);
      chosen.insert(id);
    } else {
      auto it = std::find_if(problems.begin(), problems.end(),
                             [&](const ProblemSpec& p) { return p.slug == tok || p.folder() == tok; });
      if (it == problems.end()) throw Error("no problem named '" + tok + "'");
      chosen.insert(it->id);
    }
  }
  if (!any_token) throw Error("empty problem selection");
  std::vector<const ProblemSpec*> out;
  for (int id : chosen) out.push_back(find(id));
  return out;
}

}  // namespace pkb
