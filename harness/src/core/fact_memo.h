// Facts that cost a child process to learn (the loader's answer for a binary's libraries, a compiler's version), kept
// between pkb's processes: an evaluation asked `ldd` of both rank programs and `c++ --version` each time (0.2-0.4 s of
// its wall on the CI machine, ~5% of a test run's CPU). A fact is stored under the digest of the inputs its answer
// depends on, and names the files it was read from, each of which must be unchanged (file_stamp) to believe it.
// Where: $PKB_FACTS_DIR, else $XDG_CACHE_HOME/pkb/facts, else $HOME/.cache/pkb/facts; PKB_FACTS_DIR= (empty) keeps
// nothing. A memo that cannot be read or written is learned afresh, never an error.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pkb {

// A file's identity: device, inode, size, modification and change times. Rewriting, replacing or touching the file
// changes it (the change time cannot be set back); "missing" when it cannot be stat'ed.
std::string file_stamp(const std::filesystem::path& path);

struct LearnedFact {
  nlohmann::json value;
  std::vector<std::filesystem::path> depends_on;  // files (and folders) whose stamps must hold for the value to stand
  bool keep = true;  // false: a failure to learn (a command that printed nothing), asked again next time
};

// The fact `kind` for `inputs`: the kept one when its inputs match, every file it depends on is unchanged and
// `believable` accepts its value (its shape: a memo edited by hand is not an answer), else learn()'s answer, which is
// then kept. learn's exceptions pass through (nothing is kept).
nlohmann::json memoized_fact(const std::string& kind, const nlohmann::json& inputs,
                             const std::function<LearnedFact()>& learn,
                             const std::function<bool(const nlohmann::json&)>& believable);

// Where facts are kept ("" when nowhere).
std::filesystem::path facts_dir();

// `program` as execvp would find it through PATH (a name with a slash is itself), made canonical; "" if not found.
std::filesystem::path find_program(const std::string& program);

}  // namespace pkb
