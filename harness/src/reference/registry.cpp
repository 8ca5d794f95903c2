#include <map>

#include "core/error.h"
#include "reference/reference.h"
#include "reference/registered.h"

namespace pkb {
namespace {

std::map<std::string, ReferenceImpl>& registry() {
  static std::map<std::string, ReferenceImpl> r;  // function-local: safe from static-init order
  return r;
}

int64_t lookup(const std::map<std::string, int64_t>& m, const std::string& name, const char* what) {
  auto it = m.find(name);
  if (it == m.end()) throw Error(std::string("reference asked for unknown ") + what + " '" + name + "'");
  return it->second;
}

}  // namespace

ReferenceRegistrar::ReferenceRegistrar(const char* slug, ReferenceFn reference, OracleFn oracle, PrepareFn prepare) {
  PKB_CHECK(!registry().count(slug), std::string("problem slug registered twice: ") + slug);
  registry()[slug] = ReferenceImpl{slug, reference, oracle, prepare};
}

const ReferenceImpl* find_reference(const std::string& slug) {
  auto it = registry().find(slug);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_slugs() {
  std::vector<std::string> out;
  for (const auto& [k, v] : registry()) out.push_back(k);
  return out;
}

int64_t RankContext::param(const std::string& name) const { return lookup(params, name, "parameter"); }
int64_t RankContext::scalar(const std::string& name) const { return lookup(scalars, name, "scalar"); }
Communicator& RankContext::group(const std::string& name) const {
  auto it = groups.find(name);
  if (it == groups.end()) throw Error("reference asked for unknown group '" + name + "'");
  return *it->second;
}
int64_t OracleContext::param(const std::string& name) const { return lookup(params, name, "parameter"); }
int64_t OracleContext::scalar(const std::string& name) const { return lookup(scalars, name, "scalar"); }
const std::vector<int>& OracleContext::group_of(const std::string& name, int rank) const {
  auto it = groups.find(name);
  if (it == groups.end()) throw Error("oracle asked for unknown group '" + name + "'");
  for (const auto& members : it->second)
    for (int m : members)
      if (m == rank) return members;
  throw Error("oracle: rank " + std::to_string(rank) + " is in no group '" + name + "'");
}

bool has_registered_reference(const std::string& slug) { return find_reference(slug) != nullptr; }

}  // namespace pkb
