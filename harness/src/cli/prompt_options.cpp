#include "cli/prompt_options.h"

#include "core/error.h"

namespace pkb::cli {

void add_prompt_options(CLI::App* cmd, PromptCliOptions& o) {
  cmd->add_option("-w,--world", o.world, "World size (ranks) the prompt describes")->check(kPositive);
  cmd->add_option("--topology", o.topology, "Machine from topologies/ (default: the smallest with >= W GPUs)");
  cmd->add_option("--variant", o.variant, "zero-shot or one-shot (adds the worked example)")
      ->check(CLI::IsMember({"zero-shot", "one-shot"}));
  cmd->add_option("--param", o.params, "NAME=VALUE parameter override (repeatable)");
  cmd->add_option("--dtype", o.dtype, "Float dtype of the run")->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--prompts", o.prompts_dir, "Template directory (default: prompts/ in the repository)");
}

prompt::PromptOptions to_prompt_options(const PromptCliOptions& o) {
  prompt::PromptOptions p;
  p.world = o.world;
  p.topology = o.topology;
  p.variant = *prompt::variant_from_name(o.variant);  // CLI11 checked the name
  p.dtype = *dtype_from_name(o.dtype);
  p.prompts_dir = o.prompts_dir.empty() ? std::filesystem::path() : std::filesystem::absolute(o.prompts_dir);
  p.params = parse_param_overrides(o.params);
  return p;
}

void add_service_options(CLI::App* cmd, models::ProviderOptions& provider, ServiceCliOptions& o) {
  cmd->add_option("--retry-base-ms", o.retry_base_ms, "Back-off before the first retry, doubled per retry")
      ->check(kNonNegative);
  cmd->add_option("--max-attempts", provider.retry.max_attempts, "HTTP attempts per model request")->check(kPositive);
  cmd->add_option("--http-timeout", provider.http.total_timeout_s,
                  "Deadline per buffered (--no-stream) HTTP attempt, seconds")
      ->check(kPositive);
  cmd->add_option("--idle-timeout", provider.http.idle_timeout_s,
                  "Streamed replies: a stream silent this long (no byte, keep-alives included) is retried, seconds")
      ->check(kPositive);
  cmd->add_option("--stream-timeout", provider.http.stream_timeout_s,
                  "Streamed replies: cap on one whole streamed attempt, seconds")
      ->check(kPositive);
  cmd->add_flag(
      "--no-stream", [&provider](int64_t) { provider.stream = false; },
      "One buffered body per request instead of server-sent events (endpoints that cannot stream)");
}

void apply_service_options(const ServiceCliOptions& o, models::ProviderOptions& provider) {
  provider.retry.base_delay_s = o.retry_base_ms / 1000.0;
}

}  // namespace pkb::cli
