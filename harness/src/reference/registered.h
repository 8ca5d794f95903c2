// Whether a problem's libtorch reference is registered, for code that needs no tensor (`pkb problems`): without
// reference.h, whose ATen headers cost a translation unit ~8 s at -O0.
#pragma once

#include <string>

namespace pkb {

bool has_registered_reference(const std::string& slug);

}  // namespace pkb
