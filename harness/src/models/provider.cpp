#include "models/provider.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "core/error.h"
#include "core/utf8.h"
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
  // How the answer travels, not what was asked: Reply::streamed says it.
  for (const char* transport : {"stream", "stream_options"}) j.erase(transport);
  return j;
}

class HttpProvider : public Provider {
 public:
  HttpProvider(ModelName name, std::string key, ProviderOptions opt)
      : name_(std::move(name)), key_(std::move(key)), opt_(std::move(opt)), wire_(make_wire_format(name_.api)) {}

  const ModelName& name() const override { return name_; }

  Reply complete(const Request& req) override {
    auto start = std::chrono::steady_clock::now();
    const HttpRequest http = wire_->build(name_, key_, req, opt_.stream);
    const nlohmann::json sent = sent_parameters(http.body);
    Reply reply;
    int broken = 0;
    for (int attempt = 1;; ++attempt) {
      AttemptVerdict v = opt_.stream ? attempt_streamed(http, reply) : attempt_once(http, reply);
      reply.attempts = attempt;
      if (v.kind == ErrorKind::none) break;
      reply.error = v.kind;
      // A server's bytes: an error page in any encoding must still make a readable, valid JSON record.
      reply.error_message = valid_utf8(redact(v.message, key_));
      broken += reply.streamed;  // a stream that started and then broke: the provider may bill it
      if (!v.retry || attempt >= opt_.retry.max_attempts) break;
      double wait = backoff_delay_s(opt_.retry, attempt - 1, v.hint_s, unit_random());
      spdlog::warn("{}: attempt {}/{} failed ({}), retrying in {:.2f} s: {}{}", name_.spec(), attempt,
                   opt_.retry.max_attempts, error_kind_name(v.kind), wait, reply.error_message,
                   reply.streamed ? " (the broken stream may be billed)" : "");
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    reply.latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    reply.sent = sent;
    reply.broken_streams = broken;
    return reply;
  }

 private:
  // One streamed exchange. An HTTP error status is buffered and classified as in attempt_once; so is a 2xx
  // that is not an event stream (a server that ignored the stream flag sends one JSON body). Events go to the
  // wire format's assembler as they arrive; the transfer stops at the terminal event or at an error event.
  AttemptVerdict attempt_streamed(const HttpRequest& http, Reply& reply) const {
    std::unique_ptr<StreamAssembler> assembler = wire_->assembler();
    SseParser sse;
    std::string plain;  // a 2xx body that is not an event stream
    std::optional<bool> is_sse;
    AttemptVerdict stop;
    BodySink sink = [&](std::string_view type, std::string_view bytes) {
      if (!is_sse) is_sse = type.find("text/event-stream") != std::string_view::npos;
      if (!*is_sse) {
        plain.append(bytes);
        return true;
      }
      sse.feed(bytes, [&](const SseEvent& e) {
        if (stop.kind == ErrorKind::none && !assembler->finished()) stop = assembler->on_event(e);
      });
      return stop.kind == ErrorKind::none && !assembler->finished();
    };
    HttpResponse resp = http_post(http, opt_.http, sink);
    reply = Reply{};
    reply.http_status = resp.status;
    reply.request_id = !resp.header("x-request-id").empty() ? resp.header("x-request-id") : resp.header("request-id");
    if (resp.too_large) return too_large(resp);
    bool success_status = resp.status >= 200 && resp.status < 300;
    if (success_status && is_sse.value_or(false)) {
      reply.streamed = true;
      return finish_stream(resp, sse, *assembler, stop, reply);
    }
    if (success_status && resp.completed()) return parse_success(*wire_, plain, reply);
    resp.body = redact(std::move(resp.body), key_);
    return classify_failure(resp, std::time(nullptr));
  }

  AttemptVerdict finish_stream(const HttpResponse& resp, const SseParser& sse, const StreamAssembler& assembler,
                               AttemptVerdict stop, Reply& reply) const {
    if (stop.kind != ErrorKind::none) return stop;  // the provider's error event, or a malformed event
    // A whole answer is kept whatever happened to the connection after it: re-sending it would pay twice.
    if (assembler.complete()) return parse_assembled(*wire_, assembler.body(), reply);
    // A stream that ended cleanly having said nothing at all is the reply without an answer its body is, buffered
    // (Gemini's streams have no terminal event: theirs end so). One that said something was cut: broken, below.
    if (resp.completed()) {
      Reply said;
      if (AttemptVerdict v = parse_assembled(*wire_, assembler.body(), said); v.kind == ErrorKind::bad_response)
        return v;
    }
    std::string how = resp.completed()      ? "the connection closed before the final event"
                      : resp.idle_timed_out ? resp.transport_error + " (--idle-timeout)"
                                            : resp.transport_error;
    if (sse.mid_event()) how += ", mid-event";
    AttemptVerdict v;
    v.kind = resp.timed_out ? ErrorKind::timeout : ErrorKind::transport;
    v.retry = true;  // cut mid-way: the next attempt starts from scratch
    v.message = "stream broken after " + std::to_string(sse.events()) + " events (" +
                std::to_string(resp.streamed_bytes) + " bytes): " + how;
    return v;
  }

  // A response past HttpOptions::max_response_bytes: not an answer, and not worth asking again (the same server
  // would flood again, and each attempt may be billed).
  static AttemptVerdict too_large(const HttpResponse& resp) {
    AttemptVerdict v;
    v.kind = ErrorKind::bad_response;
    v.retry = false;
    v.message = "HTTP " + std::to_string(resp.status) + ": " + resp.transport_error;
    return v;
  }

  // One HTTP exchange; resets `reply` so a failed attempt leaves nothing behind in a later success.
  AttemptVerdict attempt_once(const HttpRequest& http, Reply& reply) const {
    HttpResponse resp = http_post(http, opt_.http);
    reply = Reply{};
    reply.http_status = resp.status;
    reply.request_id = !resp.header("x-request-id").empty() ? resp.header("x-request-id") : resp.header("request-id");
    if (resp.too_large) return too_large(resp);
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
