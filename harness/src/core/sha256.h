// SHA-256 (FIPS 180-4), used for content-addressed cache keys. Own implementation so the harness does not
// need OpenSSL's development headers. It hashes the pkb binaries once per evaluation (the reference cache's key),
// so it is compiled optimized in every build type (CMakeLists.txt).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace pkb {

// Incremental hasher: update() any number of times, then hex_digest() once (it finalizes; further
// update() calls start a fresh message).
class Sha256 {
 public:
  // `fastest`: the x86 SHA extensions where the CPU has them (~5x the portable code; the reference cache hashes
  // hundreds of MB per evaluation), else the portable code. Both give the same digests (tested).
  enum class Engine { portable, fastest };
  explicit Sha256(Engine engine = Engine::fastest);
  static bool hardware_available();
  void update(std::string_view data);
  // 64 lowercase hex characters.
  std::string hex_digest();

 private:
  void reset();
  void compress(const uint8_t* blocks, size_t count);

  bool hardware_ = false;
  std::array<uint32_t, 8> state_{};
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// One-shot convenience.
std::string sha256_hex(std::string_view data);
// A file's digest, read a MiB at a time (throws Error naming the file if it cannot be read).
std::string sha256_file(const std::filesystem::path& path);

}  // namespace pkb
