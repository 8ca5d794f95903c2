#include "models/provider.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "core/error.h"
#include "models/wire.h"

namespace pkb::models {
namespace {

double unit_random() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::string redact(std::string text, const std::string& secret) {
  if (secret.size() < 8) return text;  // placeholder keys ("none", "EMPTY") would mangle every message
  for (size_t p; (p = text.find(secret)) != std::string::npos;) text.replace(p, secret.size(), "[redacted]");
  return text;
}

// The request body without the prompt texts (messages, input, contents, system prompts): what a record should
// say was asked for (model, token limit, temperature if it was sent, merged extras).
nlohmann::json sent_parameters(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) return nullptr;
  for (const char* prompt : {"messages", "input", "instructions", "system", "contents", "systemInstruction"})
    j.erase(prompt);
  return j;
}

class HttpProvider : public Provider {
 public:
  HttpProvider(ModelName name, std::string key, ProviderOptions opt)
      : name_(std::move(name)), key_(std::move(key)), opt_(std::move(opt)), wire_(make_wire_format(name_.api)) {}

  const ModelName& name() const override { return name_; }

  Reply complete(const Request& req) override {
    auto start = std::chrono::steady_clock::now();
    const HttpRequest http = wire_->build(name_, key_, req);
    const nlohmann::json sent = sent_parameters(http.body);
    Reply reply;
    for (int attempt = 1;; ++attempt) {
      Verdict v = attempt_once(http, reply);
      reply.attempts = attempt;
      if (v.kind == ErrorKind::none) break;
      reply.error = v.kind;
      reply.error_message = redact(v.message, key_);
      if (!v.retry || attempt >= opt_.retry.max_attempts) break;
      double wait = backoff_delay_s(opt_.retry, attempt - 1, v.hint_s, unit_random());
      spdlog::warn("{}: attempt {}/{} failed ({}), retrying in {:.2f} s: {}", name_.spec(), attempt,
                   opt_.retry.max_attempts, error_kind_name(v.kind), wait, reply.error_message);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    reply.latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    reply.sent = sent;
    return reply;
  }

 private:
  // One HTTP exchange; resets `reply` so a failed attempt leaves nothing behind in a later success.
  Verdict attempt_once(const HttpRequest& http, Reply& reply) const {
    HttpResponse resp = http_post(http, opt_.http);
    reply = Reply{};
    reply.http_status = resp.status;
    reply.request_id = !resp.header("x-request-id").empty() ? resp.header("x-request-id") : resp.header("request-id");
    if (resp.completed() && resp.status >= 200 && resp.status < 300) return parse_success(*wire_, resp.body, reply);
    resp.body = redact(std::move(resp.body), key_);  // before the message is cut, which could split the key
    return classify_failure(resp, std::time(nullptr));
  }

  ModelName name_;
  std::string key_;
  ProviderOptions opt_;
  std::unique_ptr<WireFormat> wire_;
};

std::string resolve_base_url(const ModelName& name, const ProviderOptions& opt) {
  std::string url = name.base_url;
  // A compat spec names its URL explicitly; the environment only replaces preset defaults.
  const char* env = name.provider == "compat" ? nullptr : std::getenv(base_url_env_var(name.provider).c_str());
  if (env && *env) url = env;
  if (opt.base_url) url = *opt.base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

std::unique_ptr<Provider> make_provider(const ModelName& name, const ProviderOptions& opt) {
  ModelName resolved = name;
  resolved.base_url = resolve_base_url(name, opt);
  std::string key = opt.api_key ? *opt.api_key : api_key_from_env(name.provider).value_or("");
  if (key.empty() && !opt.api_key && api_key_required(name.provider)) {
    std::string vars;
    for (const auto& v : api_key_env_vars(name.provider)) vars += (vars.empty() ? "" : " or ") + v;
    throw Error(name.spec() + ": no API key; set " + vars);
  }
  return std::make_unique<HttpProvider>(std::move(resolved), std::move(key), opt);
}

std::unique_ptr<Provider> make_provider(std::string_view spec, const ProviderOptions& opt) {
  return make_provider(parse_model_name(spec), opt);
}

}  // namespace pkb::models
