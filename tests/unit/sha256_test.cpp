#include "core/sha256.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace pkb
