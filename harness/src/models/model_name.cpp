#include "models/model_name.h"

#include <array>
#include <cctype>
#include <cstdlib>

#include "core/error.h"

namespace pkb::models {
namespace {

struct Preset {
  const char* provider;
  Api api;
  const char* base_url;  // "" = must be given in the spec (compat)
  std::array<const char*, 2> key_env;
  bool key_required;
};

// Base URLs are the providers' documented defaults.
constexpr std::array<Preset, 10> kPresets = {{
    {"openai", Api::openai_chat, "https://api.openai.com/v1", {"OPENAI_API_KEY", nullptr}, true},
    {"openai-responses", Api::openai_responses, "https://api.openai.com/v1", {"OPENAI_API_KEY", nullptr}, true},
    {"anthropic", Api::anthropic, "https://api.anthropic.com/v1", {"ANTHROPIC_API_KEY", nullptr}, true},
    {"gemini",
     Api::gemini,
     "https://generativelanguage.googleapis.com/v1beta",
     {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
     true},
    {"together", Api::openai_compat, "https://api.together.ai/v1", {"TOGETHER_API_KEY", nullptr}, true},
    {"deepseek", Api::openai_compat, "https://api.deepseek.com", {"DEEPSEEK_API_KEY", nullptr}, true},
    {"vllm", Api::openai_compat, "http://localhost:8000/v1", {"PKB_COMPAT_API_KEY", nullptr}, false},
    {"sglang", Api::openai_compat, "http://127.0.0.1:30000/v1", {"PKB_COMPAT_API_KEY", nullptr}, false},
    {"ollama", Api::openai_compat, "http://localhost:11434/v1", {"PKB_COMPAT_API_KEY", nullptr}, false},
    {"compat", Api::openai_compat, "", {"PKB_COMPAT_API_KEY", nullptr}, false},
}};

const Preset* find_preset(std::string_view provider) {
  for (const auto& p : kPresets)
    if (provider == p.provider) return &p;
  return nullptr;
}

std::string strip_trailing_slashes(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string providers_list() {
  std::string s;
  for (const auto& p : kPresets) s += (s.empty() ? "" : ", ") + std::string(p.provider);
  return s;
}

// "compat:<url>@<model>": the URL may itself contain '@' (user info), model ids practically never do.
ModelName parse_compat(std::string_view spec, std::string_view rest) {
  size_t at = rest.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == rest.size())
    throw Error("model name '" + std::string(spec) + "': expected compat:<base-url>@<model>");
  std::string url(rest.substr(0, at));
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    throw Error("model name '" + std::string(spec) + "': base URL must start with http:// or https://");
  return {"compat", std::string(rest.substr(at + 1)), strip_trailing_slashes(url), Api::openai_compat};
}

}  // namespace

const char* api_name(Api a) {
  switch (a) {
    case Api::openai_chat:
      return "openai_chat";
    case Api::openai_responses:
      return "openai_responses";
    case Api::anthropic:
      return "anthropic";
    case Api::gemini:
      return "gemini";
    case Api::openai_compat:
      return "openai_compat";
  }
  return "?";
}

ModelName parse_model_name(std::string_view spec) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos)
    throw Error("model name '" + std::string(spec) + "': expected provider:model, providers: " + providers_list());
  std::string_view provider = spec.substr(0, colon), rest = spec.substr(colon + 1);
  const Preset* preset = find_preset(provider);
  if (!preset)
    throw Error("model name '" + std::string(spec) + "': unknown provider '" + std::string(provider) +
                "', known: " + providers_list());
  if (preset->api == Api::openai_compat && *preset->base_url == '\0') return parse_compat(spec, rest);
  if (rest.empty()) throw Error("model name '" + std::string(spec) + "': empty model id");
  return {preset->provider, std::string(rest), preset->base_url, preset->api};
}

std::vector<std::string> known_providers() {
  std::vector<std::string> out;
  for (const auto& p : kPresets) out.emplace_back(p.provider);
  return out;
}

std::vector<std::string> api_key_env_vars(const std::string& provider) {
  std::vector<std::string> out;
  if (const Preset* p = find_preset(provider))
    for (const char* v : p->key_env)
      if (v) out.emplace_back(v);
  return out;
}

bool api_key_required(const std::string& provider) {
  const Preset* p = find_preset(provider);
  return p && p->key_required;
}

std::optional<std::string> api_key_from_env(const std::string& provider) {
  for (const auto& var : api_key_env_vars(provider)) {
    const char* v = std::getenv(var.c_str());
    if (v && *v) return std::string(v);
  }
  return std::nullopt;
}

std::string base_url_env_var(const std::string& provider) {
  std::string var = "PKB_";
  for (char c : provider) var += c == '-' ? '_' : char(std::toupper(static_cast<unsigned char>(c)));
  return var + "_BASE_URL";
}

}  // namespace pkb::models
