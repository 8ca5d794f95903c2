// Model names on the command line: "provider:model". The provider picks the wire format (Api), a default base
// URL and the environment variables holding the API key; the preset table in model_name.cpp is the only place
// that knows them. Explicit OpenAI-compatible endpoint: "compat:<base-url>@<model>" (split at the last '@').
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkb::models {

/// Wire format spoken by a provider.
enum class Api { openai_chat, openai_responses, anthropic, gemini, openai_compat };

const char* api_name(Api a);

struct ModelName {
  std::string provider;  ///< "openai", "openai-responses", "anthropic", "gemini", "together", "deepseek",
                         ///< "vllm", "sglang", "ollama" or "compat"
  std::string model;     ///< the provider's model id, sent verbatim
  std::string base_url;  ///< no trailing '/'; e.g. "https://api.openai.com/v1"
  Api api = Api::openai_chat;

  std::string spec() const { return provider + ":" + model; }
};

/// Parses "provider:model". Throws pkb::Error naming the accepted providers on anything else.
ModelName parse_model_name(std::string_view spec);

/// Known provider names, in preset order (for --help and error messages).
std::vector<std::string> known_providers();

/// Environment variables consulted for the key, in order (e.g. GEMINI_API_KEY then GOOGLE_API_KEY).
std::vector<std::string> api_key_env_vars(const std::string& provider);
/// Whether the provider refuses requests without a key (hosted APIs) or accepts none (local servers).
bool api_key_required(const std::string& provider);
/// First non-empty variable of api_key_env_vars(provider), if any.
std::optional<std::string> api_key_from_env(const std::string& provider);

/// "PKB_<PROVIDER>_BASE_URL" with '-' mapped to '_' (PKB_OPENAI_RESPONSES_BASE_URL); overrides the preset.
std::string base_url_env_var(const std::string& provider);

}  // namespace pkb::models
