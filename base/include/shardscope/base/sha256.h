// SHA-256 (FIPS 180-4), streamed: names data by content (the data set a run trained on is
// reported with its hash, comparable with the checksums data sets publish).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  void Update(std::string_view text) { Update(text.data(), text.size()); }
  // The digest as 64 lowercase hex digits; the object must not be updated afterwards.
  std::string HexDigest();

 private:
  void Block(const uint8_t* block);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes
};

// The SHA-256 of a file's bytes as hex; empty when it cannot be read.
std::string Sha256OfFile(const std::string& path);

}  // namespace shardscope
