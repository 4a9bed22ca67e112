// Mutation fuzzing of what users type. Mutants of every sample model file go through `plan`
// and `train --steps 1`; mutated meshes, shapes and layouts through `layout` and
// `redistribute`. Every input must end in exit 0, or exit 2 whose message names the model
// file's line (`file:line`) — never a signal, exit 1, or a run past the time limit.
// In-process (RunShardscope) for speed, then a smaller pass through the binary for the real
// exit statuses. Deterministic: SHARDSCOPE_FUZZ_SEED (default 1) and SHARDSCOPE_FUZZ_SECONDS
// (the in-process budget of the model pass, default 40) change the run; failing mutants are
// written to $TMPDIR/shardscope_fuzz_failures/ to be replayed by hand.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "run_in_process.h"
#include "run_shardscope.h"

namespace {

namespace fs = std::filesystem;
using shardscope_cli_test::InProcessOutput;
using shardscope_cli_test::RunInProcess;

const std::string kSamples = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/";
const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";
constexpr double kSlowSeconds = 20;  // one command longer than this counts as a hang

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoll(v) : fallback;
}

// SplitMix64: the same mutants on every machine.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : Next() % n; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  uint64_t state_;
};

const std::vector<std::string> kNumbers = {"0",
                                           "-1",
                                           "1099511627776",
                                           "9223372036854775808",
                                           "9223372036854775807",
                                           "4611686018427387904",
                                           "-9223372036854775808",
                                           "4294967296*4294967296",
                                           "3",
                                           "1e300",
                                           "abc",
                                           "65536*65536",
                                           "2147483648"};
const std::vector<std::string> kValues = {"abc",
                                          "[]",
                                          "{}",
                                          "-1",
                                          "0",
                                          "~",
                                          "[0, 0]",
                                          "\"((2, 4), (4, 1))\"",
                                          "[1, 2, 3, 4, 5, 6, 7, 8, 9]"};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// One to three of: a line deleted or duplicated, a number replaced, a value replaced, two
// keys swapped.
std::string Mutate(const std::string& text, Rng& rng) {
  std::vector<std::string> lines = Lines(text);
  const int count = 1 + static_cast<int>(rng.Below(3));
  static const std::regex number("-?[0-9]+");
  static const std::regex key("^(\\s*-?\\s*)([A-Za-z_][A-Za-z0-9_.]*)(:.*)$");
  for (int m = 0; m < count && !lines.empty(); ++m) {
    const size_t i = rng.Below(lines.size());
    switch (rng.Below(5)) {
      case 0:
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      case 1:
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), lines[i]);
        break;
      case 2: {
        // A number of a line that has one (a few tries to find such a line).
        for (int tries = 0; tries < 8; ++tries) {
          std::string& l = lines[rng.Below(lines.size())];
          std::vector<std::smatch> hits;
          for (auto it = std::sregex_iterator(l.begin(), l.end(), number);
               it != std::sregex_iterator(); ++it)
            hits.push_back(*it);
          if (hits.empty()) continue;
          const std::smatch& h = hits[rng.Below(hits.size())];
          l = l.substr(0, h.position()) + rng.Pick(kNumbers) + l.substr(h.position() + h.length());
          break;
        }
        break;
      }
      case 3: {
        std::smatch k;
        if (std::regex_match(lines[i], k, key))
          lines[i] = k[1].str() + k[2].str() + ": " + rng.Pick(kValues);
        break;
      }
      default: {
        const size_t j = rng.Below(lines.size());
        std::smatch a, b;
        std::string li = lines[i], lj = lines[j];
        if (std::regex_match(li, a, key) && std::regex_match(lj, b, key)) {
          lines[i] = a[1].str() + b[2].str() + a[3].str();
          lines[j] = b[1].str() + a[2].str() + b[3].str();
        }
      }
    }
  }
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

struct Failures {
  std::vector<std::string> list;
  void Add(const std::string& what, const std::string& text, const InProcessOutput& o) {
    const fs::path dir = fs::temp_directory_path() / "shardscope_fuzz_failures";
    fs::create_directories(dir);
    const fs::path file = dir / (std::to_string(list.size()) + ".yaml");
    if (!text.empty()) std::ofstream(file) << text;
    list.push_back(what + " -> exit " + std::to_string(o.code) + " in " +
                   std::to_string(o.seconds) + " s" +
                   (text.empty() ? "" : " (" + file.string() + ")") + ": " + o.err.substr(0, 400));
  }
};

// "path:<digits>" somewhere in `text`.
bool NamesALine(const std::string& text, const std::string& path) {
  const std::string prefix = path + ":";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    const size_t digit = at + prefix.size();
    if (digit < text.size() && std::isdigit(static_cast<unsigned char>(text[digit]))) return true;
  }
  return false;
}

// Every number of a JSON document is finite and not negative (counts, bytes, seconds).
bool NonNegativeNumbers(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>() >= 0;
  for (const auto& item : j) {
    if ((item.is_structured() || item.is_number()) && !NonNegativeNumbers(item)) return false;
  }
  return true;
}

// Exit 0, or exit 2 naming a line of `path`, within the time limit; `plan --json` output
// (when the command printed JSON) holds no negative figure.
bool Clean(const InProcessOutput& o, const std::string& path) {
  if (o.seconds > kSlowSeconds) return false;
  if (o.code == 2) return NamesALine(o.err, path);
  if (o.code != 0) return false;
  if (o.out.empty() || o.out[0] != '{') return true;
  const nlohmann::json plan = nlohmann::json::parse(o.out, nullptr, /*allow_exceptions=*/false);
  return !plan.is_discarded() && NonNegativeNumbers(plan);
}

std::vector<std::string> SampleFiles() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kSamples))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A mutant of `sample` written to `dir` under the sample's name (messages name that path).
struct Mutant {
  std::string text, path;
  bool mnist = false;  // trains on MNIST (else synthetic data)
};
Mutant WriteMutant(const std::string& sample, const fs::path& dir, Rng& rng) {
  const std::string original = ReadFile(sample);
  Mutant m{Mutate(original, rng), (dir / fs::path(sample).filename()).string(),
           original.find("synthetic") == std::string::npos};
  std::ofstream(m.path) << m.text;
  return m;
}

// The commands one mutant runs: plan (JSON, checked for negative figures) and one training
// step (small limits, so a mutant asking for many devices or much memory is refused quickly).
std::vector<std::vector<std::string>> ModelCommands(const std::string& path, bool mnist) {
  std::vector<std::string> train = {"train", path, "--steps", "1", "--no-record"};
  train.insert(train.end(), {"--resource-limit", "in_process_devices=16", "--resource-limit",
                             "memory_percent=5"});
  if (mnist) train.insert(train.end(), {"--data", kMnist, "--limit", "256"});
  return {{"plan", path, "--json"}, train};
}

TEST(FuzzCli, ModelFileMutantsEndCleanlyInProcess) {
  Rng rng(static_cast<uint64_t>(EnvInt("SHARDSCOPE_FUZZ_SEED", 1)));
  const double budget = static_cast<double>(EnvInt("SHARDSCOPE_FUZZ_SECONDS", 40));
  const fs::path dir = fs::temp_directory_path() / "shardscope_fuzz_models";
  fs::create_directories(dir);
  const auto files = SampleFiles();
  ASSERT_FALSE(files.empty());
  Failures failures;
  int runs = 0, refused = 0;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (elapsed() < budget) {
    for (const std::string& sample : files) {
      if (elapsed() >= budget) break;
      const Mutant m = WriteMutant(sample, dir, rng);
      for (const auto& args : ModelCommands(m.path, m.mnist)) {
        InProcessOutput o = RunInProcess(args);
        ++runs;
        refused += o.code == 2;
        if (!Clean(o, m.path)) failures.Add(args[0] + " " + m.path, m.text, o);
      }
    }
  }
  std::printf("%d commands on mutants of %zu samples in %.1f s (%d refused with exit 2)\n", runs,
              files.size(), elapsed(), refused);
  EXPECT_GT(runs, static_cast<int>(files.size()));
  for (const std::string& f : failures.list) ADD_FAILURE() << f;
}

std::string MeshText(Rng& rng, int axes) {
  static const std::vector<std::string> kSizes = {
      "1", "2", "2", "3", "4", "0", "-1", "46340", "65536", "2147483648", "1099511627776", "x"};
  std::string s;
  for (int a = 0; a < axes; ++a) s += (a ? "," : "") + rng.Pick(kSizes);
  return s;
}

std::string ShapeText(Rng& rng, int dims) {
  static const std::vector<std::string> kSizes = {"1",
                                                  "2",
                                                  "4",
                                                  "8",
                                                  "12",
                                                  "0",
                                                  "-1",
                                                  "4611686018427387904",
                                                  "9223372036854775807",
                                                  "4294967296",
                                                  "x",
                                                  "1099511627776"};
  std::string s;
  for (int d = 0; d < dims; ++d) s += (d ? "," : "") + rng.Pick(kSizes);
  return s.empty() ? "1" : s;
}

std::string LayoutText(Rng& rng, int dims, int axes) {
  auto axis = [&] { return "a" + std::to_string(rng.Below(static_cast<size_t>(axes) + 2)); };
  std::string s;
  for (int d = 0; d < dims; ++d) {
    s += d ? "," : "";
    switch (rng.Below(4)) {
      case 0:
        s += "-";
        break;
      case 1:
        s += axis();
        break;
      case 2:
        s += "(" + axis() + "," + axis() + ")";
        break;
      default:
        s += rng.Pick(std::vector<std::string>{"", "(", ")", "|", "P(", "--", "a0a1", "None"});
    }
  }
  if (rng.Below(3) == 0) s += "|P(" + axis() + ")";
  if (rng.Below(5) == 0 && !s.empty()) s.erase(rng.Below(s.size()), 1);
  return s.empty() ? "-" : s;
}

TEST(FuzzCli, MeshesShapesAndLayoutsEndCleanlyInProcess) {
  Rng rng(static_cast<uint64_t>(EnvInt("SHARDSCOPE_FUZZ_SEED", 1)) + 17);
  Failures failures;
  const auto start = std::chrono::steady_clock::now();
  int runs = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 10) {
    const int axes = 1 + static_cast<int>(rng.Below(3));
    const int dims = static_cast<int>(rng.Below(4));
    const std::string mesh = MeshText(rng, axes), shape = ShapeText(rng, dims);
    std::vector<std::string> args;
    if (rng.Below(2) == 0) {
      args = {"layout", "--mesh", mesh, "--shape", shape, "--layout", LayoutText(rng, dims, axes)};
    } else {
      args = {"redistribute",
              "--mesh",
              mesh,
              "--shape",
              shape,
              "--from",
              LayoutText(rng, dims, axes),
              "--to",
              LayoutText(rng, dims, axes),
              "--element-bytes",
              rng.Pick(std::vector<std::string>{"4", "8", "1099511627776"})};
    }
    args.insert(args.end(), {"--resource-limit", "mesh_ranks=4096"});
    InProcessOutput o = RunInProcess(args);
    ++runs;
    if ((o.code != 0 && o.code != 2) || o.seconds > kSlowSeconds) {
      std::string line;
      for (const std::string& a : args) line += a + " ";
      failures.Add(line, "", o);
    }
  }
  std::printf("%d layout/redistribute commands\n", runs);
  for (const std::string& f : failures.list) ADD_FAILURE() << f;
}

// The binary itself, a few mutants per sample: real exit statuses, no signal.
TEST(FuzzCli, ModelFileMutantsExitCleanlyFromTheBinary) {
  Rng rng(static_cast<uint64_t>(EnvInt("SHARDSCOPE_FUZZ_SEED", 1)) + 99);
  const fs::path dir = fs::temp_directory_path() / "shardscope_fuzz_binary";
  fs::create_directories(dir);
  for (const std::string& sample : SampleFiles()) {
    const Mutant m = WriteMutant(sample, dir, rng);
    for (const auto& args : ModelCommands(m.path, m.mnist)) {
      std::string line;
      for (const std::string& a : args) line += "'" + a + "' ";
      const auto start = std::chrono::steady_clock::now();
      const std::string cmd = "timeout -s KILL " + std::to_string(static_cast<int>(kSlowSeconds)) +
                              " " + SHARDSCOPE_BIN + " " + line + " 2>&1 >/dev/null";
      FILE* pipe = popen(cmd.c_str(), "r");
      ASSERT_NE(pipe, nullptr);
      InProcessOutput o;
      char buf[4096];
      for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) o.err.append(buf, n);
      const int status = pclose(pipe);
      o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      EXPECT_TRUE(Clean(o, m.path)) << line << "-> exit " << o.code << ": " << o.err << "\n"
                                    << m.text;
    }
  }
}

}  // namespace
