// SHA-256 against the FIPS 180-4 examples, block boundaries and a file.
#include "shardscope/base/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace shardscope {
namespace {

std::string Hash(std::string_view text) {
  Sha256 sha;
  sha.Update(text);
  return sha.HexDigest();
}

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(Hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, PiecesEqualTheWhole) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('a' + i % 26);
  Sha256 pieces;
  for (size_t at = 0; at < text.size(); at += 37) pieces.Update(text.substr(at, 37));
  EXPECT_EQ(pieces.HexDigest(), Hash(text));
  EXPECT_EQ(Hash(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, File) {
  const auto path = std::filesystem::temp_directory_path() / "sha256_test_abc";
  std::ofstream(path) << "abc";
  EXPECT_EQ(Sha256OfFile(path.string()), Hash("abc"));
  std::filesystem::remove(path);
  EXPECT_EQ(Sha256OfFile(path.string()), "");
}

}  // namespace
}  // namespace shardscope
