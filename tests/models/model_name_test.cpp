#include "models/model_name.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"

namespace pkb::models {
namespace {

TEST(ParseModelName, HostedProviders) {
  struct Case {
    const char* spec;
    const char* provider;
    const char* model;
    Api api;
    const char* url;
  };
  const Case cases[] = {
      {"openai:gpt-5.5", "openai", "gpt-5.5", Api::openai_chat, "https://api.openai.com/v1"},
      {"openai-responses:gpt-5.5", "openai-responses", "gpt-5.5", Api::openai_responses, "https://api.openai.com/v1"},
      {"anthropic:claude-opus-4-7", "anthropic", "claude-opus-4-7", Api::anthropic, "https://api.anthropic.com/v1"},
      {"gemini:gemini-3-pro-preview", "gemini", "gemini-3-pro-preview", Api::gemini,
       "https://generativelanguage.googleapis.com/v1beta"},
      {"together:zai-org/GLM-5.1", "together", "zai-org/GLM-5.1", Api::openai_compat, "https://api.together.ai/v1"},
      {"deepseek:deepseek-v4-pro", "deepseek", "deepseek-v4-pro", Api::openai_compat, "https://api.deepseek.com"},
      {"vllm:Qwen/Qwen3-8B", "vllm", "Qwen/Qwen3-8B", Api::openai_compat, "http://localhost:8000/v1"},
      {"sglang:qwen", "sglang", "qwen", Api::openai_compat, "http://127.0.0.1:30000/v1"},
      {"ollama:llama3.2:3b", "ollama", "llama3.2:3b", Api::openai_compat, "http://localhost:11434/v1"},
  };
  for (const auto& c : cases) {
    ModelName n = parse_model_name(c.spec);
    EXPECT_EQ(n.provider, c.provider) << c.spec;
    EXPECT_EQ(n.model, c.model) << c.spec;
    EXPECT_EQ(n.api, c.api) << c.spec;
    EXPECT_EQ(n.base_url, c.url) << c.spec;
    EXPECT_EQ(n.spec(), c.spec);
  }
}

TEST(ParseModelName, CompatTakesItsBaseUrlFromTheSpec) {
  ModelName n = parse_model_name("compat:http://127.0.0.1:8000/v1/@my-model");
  EXPECT_EQ(n.provider, "compat");
  EXPECT_EQ(n.model, "my-model");
  EXPECT_EQ(n.base_url, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(n.api, Api::openai_compat);
  // User info in the URL: split at the last '@'.
  EXPECT_EQ(parse_model_name("compat:https://u:p@host/v1@org/m").base_url, "https://u:p@host/v1");
}

TEST(ParseModelName, RejectsMalformedNames) {
  for (const char* bad :
       {"gpt-5.5", "nosuch:model", "openai:", "compat:http://x/v1", "compat:@m", "compat:x@m", "compat:http://x/v1@"})
    EXPECT_THROW(parse_model_name(bad), pkb::Error) << bad;
}

TEST(ParseModelName, ErrorNamesTheKnownProviders) {
  try {
    parse_model_name("nosuch:model");
    FAIL();
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("anthropic"), std::string::npos);
  }
}

TEST(ApiKeys, ConventionalVariablesInOrder) {
  EXPECT_EQ(api_key_env_vars("openai-responses"), std::vector<std::string>{"OPENAI_API_KEY"});
  EXPECT_EQ(api_key_env_vars("gemini"), (std::vector<std::string>{"GEMINI_API_KEY", "GOOGLE_API_KEY"}));
  EXPECT_EQ(api_key_env_vars("compat"), std::vector<std::string>{"PKB_COMPAT_API_KEY"});
  EXPECT_TRUE(api_key_required("deepseek"));
  EXPECT_FALSE(api_key_required("vllm"));
  ::unsetenv("GEMINI_API_KEY");
  ::setenv("GOOGLE_API_KEY", "g-key", 1);
  EXPECT_EQ(api_key_from_env("gemini"), "g-key");
  ::setenv("GEMINI_API_KEY", "gem-key", 1);
  EXPECT_EQ(api_key_from_env("gemini"), "gem-key");
}

TEST(BaseUrlEnvVar, NamedAfterTheProvider) {
  EXPECT_EQ(base_url_env_var("openai-responses"), "PKB_OPENAI_RESPONSES_BASE_URL");
  EXPECT_EQ(base_url_env_var("anthropic"), "PKB_ANTHROPIC_BASE_URL");
}

}  // namespace
}  // namespace pkb::models
