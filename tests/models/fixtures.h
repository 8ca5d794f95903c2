// Reply bodies shaped after the providers' API references (their documented examples) and real responses users
// reported, some abridged (noted) or adjusted for speed (noted); plus helpers that build variants for specific rules.
#pragma once

namespace pkb::testing::fixtures {

// OpenAI Chat Completions "Default" example response.
inline constexpr const char* kOpenAIChat = R"({
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-5.4",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "Hello! How can I assist you today?",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 19,
    "completion_tokens": 10,
    "total_tokens": 29,
    "prompt_tokens_details": {
      "cached_tokens": 0,
      "audio_tokens": 0
    },
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "audio_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  },
  "service_tier": "default"
})";

// 429 out of credits.
inline constexpr const char* kOpenAIInsufficientQuota = R"({
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "param": null,
        "code": "insufficient_quota"
    }
})";

// 400 temperature on a reasoning model.
inline constexpr const char* kOpenAIUnsupportedValue = R"({
  "error": {
    "message": "Unsupported value: 'temperature' does not support 0.5 with this model. Only the default (1) value is supported.",
    "type": "invalid_request_error",
    "param": "temperature",
    "code": "unsupported_value"
  }
})";

// Cloudflare 502 with an integer code.
inline constexpr const char* kCloudflare502 =
    R"({"error":{"code":502,"message":"Bad gateway.","param":null,"type":"cf_bad_gateway"}})";

// Responses API "Reasoning" example response.
inline constexpr const char* kResponses = R"({
  "id": "resp_67ccd7eca01881908ff0b5146584e408072912b2993db808",
  "object": "response",
  "created_at": 1741477868,
  "status": "completed",
  "completed_at": 1741477869,
  "error": null,
  "incomplete_details": null,
  "instructions": null,
  "max_output_tokens": null,
  "model": "o1-2024-12-17",
  "output": [
    {
      "type": "message",
      "id": "msg_67ccd7f7b5848190a6f3e95d809f6b44072912b2993db808",
      "status": "completed",
      "role": "assistant",
      "content": [
        {
          "type": "output_text",
          "text": "The classic tongue twister...",
          "annotations": []
        }
      ]
    }
  ],
  "parallel_tool_calls": true,
  "previous_response_id": null,
  "reasoning": {
    "effort": "high",
    "summary": null
  },
  "store": true,
  "temperature": 1.0,
  "text": {
    "format": {
      "type": "text"
    }
  },
  "tool_choice": "auto",
  "tools": [],
  "top_p": 1.0,
  "truncation": "disabled",
  "usage": {
    "input_tokens": 81,
    "input_tokens_details": {
      "cached_tokens": 0,
      "cache_write_tokens": 0
    },
    "output_tokens": 1035,
    "output_tokens_details": {
      "reasoning_tokens": 832
    },
    "total_tokens": 1116
  },
  "user": null,
  "metadata": {}
})";

// Anthropic basic response.
inline constexpr const char* kAnthropic = R"({
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "content": [
    {
      "type": "text",
      "text": "Hello!"
    }
  ],
  "model": "claude-sonnet-4-5",
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {
    "input_tokens": 12,
    "output_tokens": 6
  }
})";

// Anthropic error fixture.
inline constexpr const char* kAnthropicInvalidRequest = R"({
  "type": "error",
  "error": {
    "type": "invalid_request_error",
    "message": "messages: roles must alternate between \"user\" and \"assistant\""
  },
  "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"
})";

// 529 overloaded.
inline constexpr const char* kAnthropicOverloaded = R"({
"type": "error",
"error": {
"type": "overloaded_error",
"message": "Overloaded"
}
})";

// Gemini cookbook response (two fenced blocks: code, then its output); safetyRatings abridged.
inline constexpr const char* kGemini = R"({
  "candidates": [
    {
      "content": {
        "parts": [
          {
            "text": "```python\n# Example list to be sorted\nmy_list = [5, 3, 1, 2, 4]\n\n# Sort the list in ascending order using the sort() method\nmy_list.sort()\n\n# Print the sorted list\nprint(my_list)\n```\n\nOutput:\n\n```\n[1, 2, 3, 4, 5]\n```"
          }
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0,
      "safetyRatings": [
        {
          "category": "HARM_CATEGORY_SEXUALLY_EXPLICIT",
          "probability": "NEGLIGIBLE"
        }
      ]
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 9,
    "candidatesTokenCount": 87,
    "totalTokenCount": 96
  }
})";

// MAX_TOKENS with no parts; Vertex-only usage fields abridged.
inline constexpr const char* kGeminiMaxTokensNoParts = R"({
  "candidates": [
    {
      "content": {
        "role": "model"
      },
      "finishReason": "MAX_TOKENS"
    }
  ],
  "modelVersion": "gemini-2.5-pro-preview-05-06",
  "usageMetadata": {
    "promptTokenCount": 1706,
    "thoughtsTokenCount": 2999,
    "totalTokenCount": 4705
  }
})";

// 429 with QuotaFailure/Help/RetryInfo, retryDelay shortened from 26s to keep the test fast.
// The Help detail is abridged.
inline constexpr const char* kGemini429RetryInfo = R"({
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
          {
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
            "quotaId": "GenerateContentInputTokensPerModelPerMinute-FreeTier",
            "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
            "quotaValue": "250000"
          }
        ]
      },
      {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": "0.4s"
      }
    ]
  }
})";

// 400 unknown field.
inline constexpr const char* kGeminiInvalidArgument =
    R"({"error": {"code": 400, "message": "Invalid JSON payload received. Unknown name \"includeThoughts\" at 'generation_config': Cannot find field.", "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "generation_config", "description": "Invalid JSON payload received. Unknown name \"includeThoughts\" at 'generation_config': Cannot find field."}]}]}})";

// DeepSeek thinking-mode response.
inline constexpr const char* kDeepSeekThinking = R"({
"id": "184b2dc7-08b5-4849-836d-e278efcfc85b",
"object": "chat.completion",
"created": 1778576747,
"model": "deepseek-v4-pro",
"choices": [
{
"index": 0,
"message": {
"role": "assistant",
"content": "Hello! How can I help you today?",
"reasoning_content": "We are asked: \"You are a helpful assistant\" and the user says \"Hi\". So I need to respond as a helpful assistant. I'll just greet the user and offer assistance."
},
"logprobs": null,
"finish_reason": "stop"
}
],
"usage": {
"prompt_tokens": 10,
"completion_tokens": 48,
"total_tokens": 58,
"prompt_tokens_details": {
"cached_tokens": 0
},
"completion_tokens_details": {
"reasoning_tokens": 38
},
"prompt_cache_hit_tokens": 0,
"prompt_cache_miss_tokens": 10
},
"system_fingerprint": "fp_9954b31ca7_prod0820_fp8_kvcache_20260402"
})";

// vLLM errors, new (nested, integer code) and old (flat) formats.
inline constexpr const char* kVllmErrorNew = R"({
  "error": {
    "message": "This model's maximum context length is 32768 tokens. However, you requested 39197 tokens in the messages, Please reduce the length of the messages. None",
    "type": "BadRequestError",
    "param": null,
    "code": 400
  }
})";
inline constexpr const char* kVllmErrorOld = R"({
  "object": "error",
  "message": "This model's maximum context length is 32768 tokens. However, you requested 39197 tokens in the messages, Please reduce the length of the messages. None",
  "type": "BadRequestError",
  "param": null,
  "code": 400
})";

}  // namespace pkb::testing::fixtures
