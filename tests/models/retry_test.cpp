#include "models/retry.h"

#include <gtest/gtest.h>

#include "fixtures.h"

namespace pkb::models {
namespace {

namespace fx = pkb::testing::fixtures;

HttpResponse response(long status, std::string body, std::map<std::string, std::string> headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

constexpr std::time_t kNow = 1445412480;  // Wed, 21 Oct 2015 07:28:00 GMT

TEST(ParseDuration, GeminiAndGoForms) {
  EXPECT_DOUBLE_EQ(*parse_duration_s("26s"), 26);
  EXPECT_DOUBLE_EQ(*parse_duration_s("1.5s"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_duration_s("250ms"), 0.25);
  EXPECT_FALSE(parse_duration_s("26"));
  EXPECT_FALSE(parse_duration_s("s"));
  EXPECT_FALSE(parse_duration_s("-1s"));
}

TEST(ParseRetryAfter, SecondsAndHttpDate) {
  EXPECT_DOUBLE_EQ(*parse_retry_after("120", kNow), 120);
  EXPECT_DOUBLE_EQ(*parse_retry_after(" 0.5 ", kNow), 0.5);
  EXPECT_DOUBLE_EQ(*parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", kNow), 30);
  EXPECT_DOUBLE_EQ(*parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", kNow), 0);  // in the past
  EXPECT_FALSE(parse_retry_after("soon", kNow));
  EXPECT_FALSE(parse_retry_after("", kNow));
}

TEST(RetryHint, MillisecondsHeaderWinsThenRetryAfterThenBody) {
  EXPECT_DOUBLE_EQ(*retry_hint_s(response(429, "", {{"retry-after-ms", "250"}, {"retry-after", "9"}}), kNow), 0.25);
  EXPECT_DOUBLE_EQ(*retry_hint_s(response(429, "", {{"retry-after", "9"}}), kNow), 9);
  EXPECT_DOUBLE_EQ(*retry_hint_s(response(429, fx::kGemini429RetryInfo), kNow), 0.4);
  EXPECT_FALSE(retry_hint_s(response(429, "{}"), kNow));
}

TEST(Backoff, ExponentialWithJitterAndCap) {
  RetryPolicy p{6, 1.0, 10.0, 120.0};
  EXPECT_DOUBLE_EQ(backoff_delay_s(p, 0, std::nullopt, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(backoff_delay_s(p, 0, std::nullopt, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(backoff_delay_s(p, 2, std::nullopt, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(backoff_delay_s(p, 10, std::nullopt, 1.0), 10.0);  // capped
  for (double u : {0.0, 0.3, 0.99}) {
    double d = backoff_delay_s(p, 3, std::nullopt, u);
    EXPECT_GE(d, 4.0);
    EXPECT_LE(d, 8.0);
  }
}

TEST(Backoff, ServerHintIsHonouredUpToTheCap) {
  RetryPolicy p{6, 1.0, 10.0, 120.0};
  EXPECT_DOUBLE_EQ(backoff_delay_s(p, 0, 26.0, 0.5), 26.0);  // more than max_delay_s, still honoured
  EXPECT_DOUBLE_EQ(backoff_delay_s(p, 0, 3600.0, 0.5), 120.0);
}

TEST(CleanText, HtmlBecomesItsTitle) {
  std::string html =
      "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad "
      "Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n";
  EXPECT_EQ(clean_text(html), "502 Bad Gateway");
}

TEST(CleanText, HtmlWithoutTitleLosesItsTags) {
  EXPECT_EQ(clean_text("<body><h1>Service &amp; more</h1>\n<p>down</p></body>"), "Service & more down");
}

TEST(CleanText, PlainTextIsCollapsedAndCut) {
  EXPECT_EQ(clean_text("  upstream\n\n  connect error \t"), "upstream connect error");
  std::string long_text(1000, 'x');
  EXPECT_EQ(clean_text(long_text, 10), "xxxxxxxxxx...");
}

TEST(CleanText, CutKeepsUtf8CharactersWhole) {
  EXPECT_EQ(clean_text(std::string(10, 'a') + "\xc3\xa9", 11), std::string(10, 'a') + "...");
}

TEST(ParseErrorBody, AllProviderShapes) {
  auto openai = parse_error_body(fx::kOpenAIUnsupportedValue);
  EXPECT_EQ(openai.code, "unsupported_value");
  EXPECT_EQ(openai.type, "invalid_request_error");
  EXPECT_NE(openai.message.find("temperature"), std::string::npos);

  auto anthropic = parse_error_body(fx::kAnthropicInvalidRequest);
  EXPECT_EQ(anthropic.type, "invalid_request_error");
  EXPECT_NE(anthropic.message.find("roles must alternate"), std::string::npos);

  auto gemini = parse_error_body(fx::kGeminiInvalidArgument);
  EXPECT_EQ(gemini.status, "INVALID_ARGUMENT");
  EXPECT_EQ(gemini.code, "400");

  auto cloudflare = parse_error_body(fx::kCloudflare502);
  EXPECT_EQ(cloudflare.code, "502");  // integer code tolerated
  EXPECT_EQ(cloudflare.message, "Bad gateway.");

  auto vllm_old = parse_error_body(fx::kVllmErrorOld);
  EXPECT_EQ(vllm_old.type, "BadRequestError");
  EXPECT_NE(vllm_old.message.find("maximum context length"), std::string::npos);

  EXPECT_EQ(parse_error_body(R"({"error":"model not found"})").message, "model not found");
  EXPECT_EQ(parse_error_body("").message, "");
  EXPECT_EQ(parse_error_body("upstream timeout\n").message, "upstream timeout");
}

TEST(ClassifyFailure, RetryableStatuses) {
  for (long s : {408L, 409L, 429L, 500L, 502L, 503L, 504L, 529L}) {
    AttemptVerdict v = classify_failure(response(s, "{}"), kNow);
    EXPECT_TRUE(v.retry) << s;
  }
  EXPECT_EQ(classify_failure(response(529, fx::kAnthropicOverloaded), kNow).kind, ErrorKind::server);
  EXPECT_EQ(classify_failure(response(429, "{}"), kNow).kind, ErrorKind::rate_limited);
}

TEST(ClassifyFailure, NonRetryableStatuses) {
  for (long s : {400L, 401L, 403L, 404L, 413L, 422L}) {
    AttemptVerdict v = classify_failure(response(s, "{}"), kNow);
    EXPECT_FALSE(v.retry) << s;
  }
  EXPECT_EQ(classify_failure(response(401, "{}"), kNow).kind, ErrorKind::auth);
  EXPECT_EQ(classify_failure(response(400, fx::kOpenAIUnsupportedValue), kNow).kind, ErrorKind::bad_request);
}

TEST(ClassifyFailure, QuotaAndBillingAreNeverRetried) {
  const std::pair<long, std::string> cases[] = {
      {429, fx::kOpenAIInsufficientQuota},
      {402, R"({"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low"}})"},
      {429,
       R"({"type":"error","error":{"type":"rate_limit_error","message":"limit","details":{"error_code":"enforced_spend_limit_reached"}}})"},
      {400,
       R"({"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified workspace API spend limit."}})"},
      {402, R"({"error":{"message":"Insufficient Balance","type":"unknown_error"}})"},
      {429,
       R"({"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"5s"}]}})"},
  };
  for (const auto& [status, body] : cases) {
    AttemptVerdict v = classify_failure(response(status, body, {{"x-should-retry", "true"}}), kNow);
    EXPECT_EQ(v.kind, ErrorKind::quota) << body;
    EXPECT_FALSE(v.retry) << body;
  }
}

TEST(ClassifyFailure, GeminiPerMinuteQuotaIsRetriedWithItsDelay) {
  AttemptVerdict v = classify_failure(response(429, fx::kGemini429RetryInfo), kNow);
  EXPECT_EQ(v.kind, ErrorKind::rate_limited);
  EXPECT_TRUE(v.retry);
  EXPECT_DOUBLE_EQ(*v.hint_s, 0.4);
}

TEST(ClassifyFailure, ShouldRetryHeaderOverridesStatus) {
  EXPECT_FALSE(classify_failure(response(503, "{}", {{"x-should-retry", "false"}}), kNow).retry);
  EXPECT_TRUE(classify_failure(response(400, "{}", {{"x-should-retry", "true"}}), kNow).retry);
}

TEST(ClassifyFailure, MessageNamesStatusCodeAndText) {
  AttemptVerdict v = classify_failure(response(502, "<html><title>502 Bad Gateway</title></html>"), kNow);
  EXPECT_EQ(v.message, "HTTP 502: 502 Bad Gateway");
  AttemptVerdict q = classify_failure(response(429, fx::kOpenAIInsufficientQuota), kNow);
  EXPECT_EQ(
      q.message,
      "HTTP 429 insufficient_quota: You exceeded your current quota, please check your plan and billing details.");
  AttemptVerdict vllm = classify_failure(response(400, fx::kVllmErrorNew), kNow);
  EXPECT_EQ(vllm.message.rfind("HTTP 400 BadRequestError: This model's maximum context length", 0), 0u) << vllm.message;
}

TEST(ClassifyFailure, TransportFailures) {
  HttpResponse refused;
  refused.curl_code = 7;
  refused.transport_error = "Failed to connect";
  refused.transient = true;
  AttemptVerdict v = classify_failure(refused, kNow);
  EXPECT_EQ(v.kind, ErrorKind::transport);
  EXPECT_TRUE(v.retry);
  HttpResponse slow = refused;
  slow.timed_out = true;
  EXPECT_EQ(classify_failure(slow, kNow).kind, ErrorKind::timeout);
}

}  // namespace
}  // namespace pkb::models
