// Fuzz target of the run-file reader: the input is a whole run file. Whatever its bytes,
// RunReader::Open either refuses it with a message or returns a reader whose every accessor
// and both summaries return (a value or an error) without crashing, hanging or leaking.
//
// Built two ways (tests/store/CMakeLists.txt): with libFuzzer when clang's runtime is there
// (store_fuzz_reader), and always with a plain random-mutation driver, fuzz_driver.cc
// (store_fuzz_reader_plain), both under AddressSanitizer and UBSan.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sample_run.h"
#include "shardscope/store/reader.h"

namespace {

// A private directory for the input file and the side files SQLite may create next to it,
// removed at exit. The path is never destroyed (the exit handler still needs it).
const std::string& InputPath() {
  static const std::string* const path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/shardscope-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    auto* input = new std::string(pattern + "/input.db");
    std::atexit([] {
      for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock"}) {
        unlink((InputPath() + suffix).c_str());
      }
      rmdir(InputPath().substr(0, InputPath().rfind('/')).c_str());
    });
    return input;
  }();
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = InputPath();
  for (const char* suffix : {"-wal", "-shm", "-journal", ".lock"}) {
    unlink((path + suffix).c_str());
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  auto reader = shardscope::store::RunReader::Open(path);
  if (!reader.ok()) {
    // A refusal names the file.
    if (reader.status().message().find(path) == std::string::npos) std::abort();
    return 0;
  }
  shardscope::store::testing::ReadEverything(**reader);
  return 0;
}
