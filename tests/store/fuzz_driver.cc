// A plain random-mutation driver for LLVMFuzzerTestOneInput, for compilers without libFuzzer:
//   store_fuzz_reader_plain [--seconds N] [--seed S] [--max-len BYTES] DIR_OR_FILE...
// Runs every seed as is, then mutated seeds (bit flips, byte overwrites with interesting
// values, truncation, chunk deletion/duplication/insertion, splicing of two seeds) until the
// time is up. A crash is the failure; run under AddressSanitizer and UBSan.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

Bytes ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void Mutate(Bytes& b, const std::vector<Bytes>& seeds, std::mt19937_64& rng, size_t max_len) {
  const auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  static const uint8_t kInteresting[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, 0x10, 0x20, 0x40};
  const int rounds = 1 + static_cast<int>(rng() % 8);
  for (int r = 0; r < rounds; ++r) {
    switch (rng() % 8) {
      case 0:  // flip a bit
        if (!b.empty()) b[pick(b.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // an interesting byte, often in the header and the first pages
        if (!b.empty()) {
          const size_t limit = (rng() % 2) ? std::min<size_t>(b.size(), 1024) : b.size();
          b[pick(limit)] = kInteresting[pick(sizeof(kInteresting))];
        }
        break;
      case 2:  // a random 32-bit big-endian value (page numbers, sizes, counts)
        if (b.size() >= 4) {
          const size_t at = pick(b.size() - 3);
          const uint32_t v = static_cast<uint32_t>(rng() % 4 == 0 ? rng() : rng() % 512);
          for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
        }
        break;
      case 3:  // truncate
        if (!b.empty()) b.resize(pick(b.size() + 1));
        break;
      case 4: {  // delete a chunk
        if (b.empty()) break;
        const size_t at = pick(b.size());
        const size_t len = std::min(b.size() - at, 1 + pick(512));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                b.begin() + static_cast<std::ptrdiff_t>(at + len));
        break;
      }
      case 5: {  // duplicate a chunk
        if (b.empty()) break;
        const size_t at = pick(b.size());
        const size_t len = std::min(b.size() - at, 1 + pick(512));
        Bytes chunk(b.begin() + static_cast<std::ptrdiff_t>(at),
                    b.begin() + static_cast<std::ptrdiff_t>(at + len));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size() + 1)), chunk.begin(),
                 chunk.end());
        break;
      }
      case 6: {  // insert random bytes
        const size_t len = 1 + pick(64);
        Bytes chunk(len);
        for (auto& c : chunk) c = static_cast<uint8_t>(rng());
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size() + 1)), chunk.begin(),
                 chunk.end());
        break;
      }
      case 7: {  // splice: a page-aligned piece of another seed
        const Bytes& other = seeds[pick(seeds.size())];
        if (other.size() < 512 || b.size() < 512) break;
        const size_t from = pick(other.size() / 512) * 512;
        const size_t to = pick(b.size() / 512) * 512;
        const size_t len =
            std::min({size_t{512} * (1 + pick(4)), other.size() - from, b.size() - to});
        std::memcpy(b.data() + to, other.data() + from, len);
        break;
      }
    }
  }
  if (b.size() > max_len) b.resize(max_len);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 20;
  uint64_t seed =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  size_t max_len = 1 << 20;
  std::vector<Bytes> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--max-len" && i + 1 < argc) {
      max_len = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) seeds.push_back(ReadFile(entry.path()));
      }
    } else if (std::filesystem::is_regular_file(arg)) {
      seeds.push_back(ReadFile(arg));
    } else {
      std::fprintf(stderr, "%s: no such seed file or directory: %s\n", argv[0], arg.c_str());
      return 2;
    }
  }
  if (seeds.empty()) seeds.push_back(Bytes(4096, 0));
  std::printf("%s: %zu seeds, %.0f s, seed %llu\n", argv[0], seeds.size(), seconds,
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  std::mt19937_64 rng(seed);
  int64_t runs = 0;
  for (const Bytes& s : seeds) {
    LLVMFuzzerTestOneInput(s.data(), s.size());
    ++runs;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    Bytes b = seeds[rng() % seeds.size()];
    Mutate(b, seeds, rng, max_len);
    LLVMFuzzerTestOneInput(b.data(), b.size());
    ++runs;
  }
  std::printf("%s: %lld runs, no crash\n", argv[0], static_cast<long long>(runs));
  return 0;
}
