// Small builders shared by the model-client tests.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loopback_server.h"
#include "models/provider.h"

namespace pkb::testing {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// An OpenAI-style chat completion whose message content is `content`.
inline std::string chat_body(const std::string& content, const std::string& finish = "stop",
                             const nlohmann::json& extra_message_fields = nlohmann::json::object()) {
  nlohmann::json msg = {{"role", "assistant"}, {"content", content}};
  msg.update(extra_message_fields);
  return nlohmann::json{{"id", "x"},
                        {"object", "chat.completion"},
                        {"model", "m"},
                        {"choices", {{{"index", 0}, {"message", msg}, {"finish_reason", finish}}}},
                        {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 7}, {"total_tokens", 12}}}}
      .dump();
}

/// The same answer as chat_body, as a Chat Completions event stream: a role chunk, `content` in three delta
/// chunks, the finish chunk, the usage chunk (stream_options.include_usage) and [DONE].
inline std::vector<std::string> chat_stream_events(const std::string& content, const std::string& finish = "stop") {
  auto chunk = [](const nlohmann::json& delta, const nlohmann::json& fin) {
    return sse_event("", nlohmann::json{{"id", "x"},
                                        {"object", "chat.completion.chunk"},
                                        {"model", "m"},
                                        {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", fin}}}}}
                             .dump());
  };
  std::vector<std::string> ev = {chunk({{"role", "assistant"}, {"content", ""}}, nullptr)};
  size_t step = content.size() / 3 + 1;
  for (size_t p = 0; p < content.size(); p += step)
    ev.push_back(chunk({{"content", content.substr(p, step)}}, nullptr));
  ev.push_back(chunk(nlohmann::json::object(), finish));
  ev.push_back(
      sse_event("", nlohmann::json{{"id", "x"},
                                   {"object", "chat.completion.chunk"},
                                   {"model", "m"},
                                   {"choices", nlohmann::json::array()},
                                   {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 7}, {"total_tokens", 12}}}}
                        .dump()));
  ev.push_back(sse_event("", "[DONE]"));
  return ev;
}

/// Options pointing a provider at the loopback server with a short, fast retry policy.
inline models::ProviderOptions fast_options(const LoopbackServer& server, const std::string& path = "/v1",
                                            const std::string& key = "sk-test-SECRET-0123456789") {
  models::ProviderOptions opt;
  opt.base_url = server.url() + path;
  opt.api_key = key;
  opt.http.connect_timeout_s = 2;
  opt.http.total_timeout_s = 5;
  opt.retry.max_attempts = 3;
  opt.retry.base_delay_s = 0.01;
  opt.retry.max_delay_s = 0.05;
  opt.retry.max_hint_s = 5;
  opt.stream = false;  // these tests serve buffered bodies; streamed ones use stream_test.cpp's options
  return opt;
}

inline nlohmann::json body_json(const RecordedRequest& r) { return nlohmann::json::parse(r.body); }

inline const char* kCudaAnswer =
    "Here is the kernel.\n\n```cuda\n#include <cuda_runtime.h>\n__global__ void add(float* x) { x[0] += 1; }\n"
    "extern \"C\" int pkb_run(void** bufs, int n) {\n  add<<<1, 1>>>((float*)bufs[0]);\n  return 0;\n}\n```\n";

}  // namespace pkb::testing
