// pkb's log: warnings (retries, cache trouble) go to stderr, because stdout holds results that scripts read.
// Kept out of line so that translation units that also see libtorch's headers never include spdlog: the pip
// torch package ships its own fmt (v12), which shadows the system fmt that Debian's and Ubuntu's spdlog expect.
#pragma once

namespace pkb {
void log_to_stderr();
}  // namespace pkb
