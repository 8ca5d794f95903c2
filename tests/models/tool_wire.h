// Scripted tool-calling replies in each provider's wire format, buffered and streamed, and what a request body says
// about the conversation so far (the tool results the model was sent): the pieces a scripted agent server is built
// from (tests/models tool tests, tests/cli/agent_test.cpp). Shapes follow the providers' API references.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "loopback_server.h"

namespace pkb::testing::tools {

using nlohmann::json;

enum class Format { chat, responses, anthropic, gemini };

struct Call {
  std::string id;  ///< "" for Gemini: the API sent no id
  std::string name;
  std::string arguments;  ///< the raw JSON text the model "wrote" (may be malformed on purpose)
};

inline json usage_chat() { return {{"prompt_tokens", 100}, {"completion_tokens", 50}}; }

/// The whole reply body a non-streaming API returns for `text` and `calls`.
inline std::string reply_body(Format f, const std::string& text, const std::vector<Call>& calls) {
  json b;
  if (f == Format::chat) {
    json msg = {{"role", "assistant"}, {"content", text.empty() ? json() : json(text)}};
    for (const Call& c : calls)
      msg["tool_calls"].push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    b = {{"object", "chat.completion"},
         {"model", "m"},
         {"choices", {{{"index", 0}, {"message", msg}, {"finish_reason", calls.empty() ? "stop" : "tool_calls"}}}},
         {"usage", usage_chat()}};
  } else if (f == Format::responses) {
    json out = json::array();
    if (!text.empty()) out.push_back({{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", text}}}}});
    for (const Call& c : calls)
      out.push_back({{"type", "function_call"},
                     {"id", "fc_" + c.id},
                     {"call_id", c.id},
                     {"name", c.name},
                     {"arguments", c.arguments}});
    b = {{"status", "completed"},
         {"model", "m"},
         {"output", out},
         {"usage", {{"input_tokens", 100}, {"output_tokens", 50}}}};
  } else if (f == Format::anthropic) {
    json content = json::array();
    if (!text.empty()) content.push_back({{"type", "text"}, {"text", text}});
    for (const Call& c : calls) {
      json input = json::parse(c.arguments, nullptr, false);
      content.push_back({{"type", "tool_use"},
                         {"id", c.id},
                         {"name", c.name},
                         {"input", input.is_discarded() ? json::object() : input}});
    }
    b = {{"type", "message"},
         {"model", "m"},
         {"content", content},
         {"stop_reason", calls.empty() ? "end_turn" : "tool_use"},
         {"usage", {{"input_tokens", 100}, {"output_tokens", 50}}}};
  } else {
    json parts = json::array();
    if (!text.empty()) parts.push_back({{"text", text}});
    for (const Call& c : calls) {
      json call = {{"name", c.name}, {"args", json::parse(c.arguments, nullptr, false)}};
      if (call["args"].is_discarded()) call["args"] = json::object();
      if (!c.id.empty()) call["id"] = c.id;
      parts.push_back({{"functionCall", call}, {"thoughtSignature", "sig-" + c.name}});
    }
    b = {{"candidates", {{{"content", {{"role", "model"}, {"parts", parts}}}, {"finishReason", "STOP"}}}},
         {"usageMetadata", {{"promptTokenCount", 100}, {"candidatesTokenCount", 50}}}};
  }
  return b.dump();
}

inline std::pair<std::string, std::string> halves(const std::string& s) {
  return {s.substr(0, s.size() / 2), s.substr(s.size() / 2)};
}

inline std::vector<std::string> chat_events(const std::string& text, const std::vector<Call>& calls) {
  auto chunk = [](const json& delta, const json& finish = nullptr) {
    return sse_event("", json{{"object", "chat.completion.chunk"},
                              {"model", "m"},
                              {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}}
                             .dump());
  };
  std::vector<std::string> ev = {chunk({{"role", "assistant"}, {"content", text}})};
  // Parallel calls: every call's header first, then their arguments interleaved, as the deltas' index keys them.
  for (size_t i = 0; i < calls.size(); ++i)
    ev.push_back(chunk({{"tool_calls",
                         {{{"index", i},
                           {"id", calls[i].id},
                           {"type", "function"},
                           {"function", {{"name", calls[i].name}, {"arguments", ""}}}}}}}));
  for (int half = 0; half < 2; ++half)
    for (size_t i = 0; i < calls.size(); ++i) {
      auto [a, b] = halves(calls[i].arguments);
      ev.push_back(chunk({{"tool_calls", {{{"index", i}, {"function", {{"arguments", half ? b : a}}}}}}}));
    }
  ev.push_back(chunk(json::object(), calls.empty() ? "stop" : "tool_calls"));
  ev.push_back(sse_event(
      "", json{{"object", "chat.completion.chunk"}, {"choices", json::array()}, {"usage", usage_chat()}}.dump()));
  ev.push_back(sse_event("", "[DONE]"));
  return ev;
}

/// Responses events; `terminal_output` false sends a response.completed without output[], so that the items must
/// come from the deltas.
inline std::vector<std::string> responses_events(const std::string& text, const std::vector<Call>& calls,
                                                 bool terminal_output = true) {
  std::vector<std::string> ev;
  auto event = [&](const std::string& type, json j) {
    j["type"] = type;
    ev.push_back(sse_event(type, j.dump()));
  };
  event("response.created", {{"response", {{"status", "in_progress"}, {"output", json::array()}}}});
  int index = 0;
  if (!text.empty()) event("response.output_text.delta", {{"output_index", index++}, {"delta", text}});
  for (const Call& c : calls) {
    json item = {{"type", "function_call"}, {"id", "fc_" + c.id}, {"call_id", c.id}, {"name", c.name}};
    event("response.output_item.added", {{"output_index", index}, {"item", item}});
    item["arguments"] = "";
    auto [a, b] = halves(c.arguments);
    event("response.function_call_arguments.delta", {{"output_index", index}, {"delta", a}});
    event("response.function_call_arguments.delta", {{"output_index", index}, {"delta", b}});
    event("response.function_call_arguments.done", {{"output_index", index}, {"arguments", c.arguments}});
    ++index;
  }
  json final_response = json::parse(reply_body(Format::responses, text, calls));
  if (!terminal_output) final_response.erase("output");
  event("response.completed", {{"response", final_response}});
  return ev;
}

inline std::vector<std::string> anthropic_events(const std::string& text, const std::vector<Call>& calls) {
  std::vector<std::string> ev;
  auto event = [&](const std::string& type, json j) {
    j["type"] = type;
    ev.push_back(sse_event(type, j.dump()));
  };
  event("message_start",
        {{"message", {{"model", "m"}, {"content", json::array()}, {"usage", {{"input_tokens", 100}}}}}});
  int index = 0;
  if (!text.empty()) {
    event("content_block_start", {{"index", index}, {"content_block", {{"type", "text"}, {"text", ""}}}});
    event("content_block_delta", {{"index", index}, {"delta", {{"type", "text_delta"}, {"text", text}}}});
    event("content_block_stop", {{"index", index++}});
  }
  for (const Call& c : calls) {
    event("content_block_start",
          {{"index", index},
           {"content_block", {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", json::object()}}}});
    auto [a, b] = halves(c.arguments);
    for (const std::string& piece : {a, b})
      event("content_block_delta",
            {{"index", index}, {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
    event("content_block_stop", {{"index", index++}});
  }
  event("message_delta",
        {{"delta", {{"stop_reason", calls.empty() ? "end_turn" : "tool_use"}}}, {"usage", {{"output_tokens", 50}}}});
  event("message_stop", json::object());
  return ev;
}

inline std::vector<std::string> gemini_events(const std::string& text, const std::vector<Call>& calls) {
  json whole = json::parse(reply_body(Format::gemini, text, calls));
  json parts = whole["candidates"][0]["content"]["parts"];
  std::vector<std::string> ev;
  // Text first, without a finish reason; then the calls (each whole, as Gemini streams them) with STOP and usage.
  json first = parts, rest = json::array();
  if (!text.empty()) {
    first = json::array({parts[0]});
    for (size_t i = 1; i < parts.size(); ++i) rest.push_back(parts[i]);
    ev.push_back(sse_event("", json{{"candidates", {{{"content", {{"role", "model"}, {"parts", first}}}}}}}.dump()));
  } else {
    rest = parts;
  }
  json last = whole;
  last["candidates"][0]["content"]["parts"] = rest;
  ev.push_back(sse_event("", last.dump()));
  return ev;
}

inline std::vector<std::string> reply_events(Format f, const std::string& text, const std::vector<Call>& calls) {
  switch (f) {
    case Format::chat:
      return chat_events(text, calls);
    case Format::responses:
      return responses_events(text, calls);
    case Format::anthropic:
      return anthropic_events(text, calls);
    case Format::gemini:
      return gemini_events(text, calls);
  }
  return {};
}

/// A reply as the server sends it: streamed (events) or one buffered body.
inline ScriptedResponse reply(Format f, bool streamed, const std::string& text, const std::vector<Call>& calls) {
  if (streamed) return sse_response(reply_events(f, text, calls));
  return json_response(200, reply_body(f, text, calls));
}

/// The tool results a request carries, in order: (call id, content). Gemini results without an id give the name.
inline std::vector<std::pair<std::string, std::string>> tool_results(Format f, const json& body) {
  std::vector<std::pair<std::string, std::string>> out;
  if (f == Format::chat) {
    for (const auto& m : body["messages"])
      if (m["role"] == "tool") out.emplace_back(m["tool_call_id"], m["content"]);
  } else if (f == Format::responses) {
    if (body["input"].is_array())
      for (const auto& item : body["input"])
        if (item.value("type", "") == "function_call_output") out.emplace_back(item["call_id"], item["output"]);
  } else if (f == Format::anthropic) {
    for (const auto& m : body["messages"])
      if (m["content"].is_array())
        for (const auto& b : m["content"])
          if (b["type"] == "tool_result") out.emplace_back(b["tool_use_id"], b["content"]);
  } else {
    for (const auto& c : body["contents"])
      for (const auto& p : c["parts"])
        if (p.contains("functionResponse")) {
          const json& r = p["functionResponse"];
          const json& resp = r["response"];
          out.emplace_back(r.value("id", r["name"].get<std::string>()),
                           resp.contains("content") ? resp["content"] : resp["error"]);
        }
  }
  return out;
}

/// The user texts a request carries after the first prompt (nudges), in order.
inline std::vector<std::string> later_user_texts(Format f, const json& body) {
  std::vector<std::string> out;
  bool first = true;
  auto add = [&](const std::string& t) {
    if (!first) out.push_back(t);
    first = false;
  };
  if (f == Format::chat || f == Format::responses) {
    const json& list = f == Format::chat ? body["messages"] : body["input"];
    if (!list.is_array()) return out;
    for (const auto& m : list)
      if (m.value("role", "") == "user") add(m["content"]);
  } else if (f == Format::anthropic) {
    for (const auto& m : body["messages"]) {
      if (m["role"] != "user") continue;
      if (m["content"].is_string()) add(m["content"]);
      if (m["content"].is_array())
        for (const auto& b : m["content"])
          if (b["type"] == "text") add(b["text"]);
    }
  } else {
    for (const auto& c : body["contents"])
      if (c["role"] == "user")
        for (const auto& p : c["parts"])
          if (p.contains("text")) add(p["text"]);
  }
  return out;
}

/// The names of the tools a request declares.
inline std::vector<std::string> tool_names(Format f, const json& body) {
  std::vector<std::string> out;
  const json& tools = f == Format::gemini ? body["tools"][0]["functionDeclarations"] : body["tools"];
  for (const auto& t : tools) out.push_back(f == Format::chat ? t["function"]["name"] : t["name"]);
  return out;
}

inline Format format_of(const std::string& provider) {
  if (provider == "openai-responses") return Format::responses;
  if (provider == "anthropic") return Format::anthropic;
  if (provider == "gemini") return Format::gemini;
  return Format::chat;  // openai, compat
}

}  // namespace pkb::testing::tools
