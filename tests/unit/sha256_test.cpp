#include "core/sha256.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "test_util.h"

namespace pkb {
namespace {

// FIPS 180-2 appendix B test vectors.
TEST(Sha256, EmptyString) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) { EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"); }

TEST(Sha256, TwoBlockMessage448Bits) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, OneMillionA) {
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShotAcrossBlockBoundaries) {
  std::string msg;
  for (int i = 0; i < 1000; ++i) msg += char('a' + i % 26);
  for (size_t chunk : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Sha256 h;
    for (size_t pos = 0; pos < msg.size(); pos += chunk) h.update(std::string_view(msg).substr(pos, chunk));
    EXPECT_EQ(h.hex_digest(), sha256_hex(msg)) << "chunk " << chunk;
  }
}

TEST(Sha256, DigestResetsForTheNextMessage) {
  Sha256 h;
  h.update("ab");
  h.hex_digest();
  h.update("abc");
  EXPECT_EQ(h.hex_digest(), sha256_hex("abc"));
}

std::string digest(Sha256::Engine engine, std::string_view data, size_t chunk) {
  Sha256 h(engine);
  for (size_t pos = 0; pos < data.size(); pos += chunk) h.update(data.substr(pos, chunk));
  return h.hex_digest();
}

// The portable code and the SHA extensions (where this CPU has them) agree on the vectors and on every length
// around block boundaries, fed whole or in pieces that split blocks.
TEST(Sha256, BothEnginesGiveTheSameDigests) {
  using Engine = Sha256::Engine;
  EXPECT_EQ(digest(Engine::portable, "abc", 1), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest(Engine::fastest, "abc", 1), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest(Engine::fastest, std::string(1000000, 'a'), 4096),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::string data(5000, '\0');
  uint32_t x = 12345;
  for (char& c : data) c = static_cast<char>((x = x * 1664525 + 1013904223) >> 24);
  for (size_t len : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 127u, 128u, 129u, 1000u, 4999u, 5000u})
    for (size_t chunk : {1u, 7u, 64u, 100u, 5000u}) {
      std::string_view part = std::string_view(data).substr(0, len);
      EXPECT_EQ(digest(Engine::fastest, part, chunk), digest(Engine::portable, part, 5000)) << len << " " << chunk;
    }
  if (!Sha256::hardware_available()) GTEST_SKIP() << "no SHA extensions on this CPU: only the portable code ran";
}

// A file hashed a buffer at a time (here 2.5 of them) gives the digest of its bytes; a missing file is an Error
// that names it.
TEST(Sha256, FileIsHashedAsItsBytes) {
  test::TempDir tmp;
  std::string data((size_t{5} << 20) / 2, '\0');
  uint32_t x = 7;
  for (char& c : data) c = static_cast<char>((x = x * 1664525 + 1013904223) >> 24);
  const auto path = tmp.path() / "blob";
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  EXPECT_EQ(sha256_file(path), sha256_hex(data));
  std::ofstream(tmp.path() / "empty", std::ios::binary).close();
  EXPECT_EQ(sha256_file(tmp.path() / "empty"), sha256_hex(""));
  try {
    sha256_file(tmp.path() / "missing");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing: cannot open"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pkb
