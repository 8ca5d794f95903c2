#include "models/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace pkb {
void log_to_stderr() { spdlog::set_default_logger(spdlog::stderr_color_mt("pkb")); }
}  // namespace pkb
