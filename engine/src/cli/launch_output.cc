#include "cli/launch_output.h"

#include <cstdlib>

namespace shardscope::cli {
namespace {

// "[1,3]<stdout>:text" -> rank 3, "text"; false for a line mpirun wrote itself.
bool ParseTag(const std::string& line, int* rank, std::string* text) {
  if (line.size() < 5 || line[0] != '[') return false;
  const size_t comma = line.find(',');
  const size_t close = line.find(']');
  if (comma == std::string::npos || close == std::string::npos || comma > close) return false;
  const size_t colon = line.find(">:", close);
  if (colon == std::string::npos || line[close + 1] != '<') return false;
  char* end = nullptr;
  const long r = std::strtol(line.c_str() + comma + 1, &end, 10);
  if (end != line.c_str() + close || r < 0) return false;
  *rank = static_cast<int>(r);
  *text = line.substr(colon + 2);
  return true;
}

}  // namespace

RankOutput::~RankOutput() { Finish(); }

void RankOutput::Feed(int stream, std::string_view data) {
  std::string& pending = pending_[stream];
  pending.append(data);
  size_t start = 0;
  for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
    Line(stream, pending.substr(start, nl - start));
  pending.erase(0, start);
}

void RankOutput::Finish() {
  for (int s = 1; s <= 2; ++s) {
    if (!pending_[s].empty()) Line(s, pending_[s]);
    pending_[s].clear();
  }
  for (auto& [rank, file] : files_) std::fclose(file);
  files_.clear();
}

FILE* RankOutput::Log(int rank) {
  auto it = files_.find(rank);
  if (it != files_.end()) return it->second;
  const std::string path = logs_ + "/rank-" + std::to_string(rank) + ".log";
  FILE* file = std::fopen(path.c_str(), "w");
  if (file != nullptr) files_[rank] = file;
  return file;
}

void RankOutput::Line(int stream, const std::string& line) {
  FILE* terminal = stream == 1 ? stdout : stderr;
  int rank = 0;
  std::string text;
  if (!ParseTag(line, &rank, &text) || rank >= ranks_) {  // mpirun's own words
    std::fprintf(stderr, "%s\n", line.c_str());
    return;
  }
  // The marker may follow output that did not end with a newline.
  const size_t marker = text.find(kExitMarker);
  if (stream == 1 && marker != std::string::npos) {
    exit_codes_[rank] = std::atoi(text.c_str() + marker + std::string(kExitMarker).size());
    text.erase(marker);
    if (text.empty()) return;
  }
  if (FILE* log = Log(rank)) {
    std::fprintf(log, "%s\n", text.c_str());
    std::fflush(log);
  }
  if (rank == 0) {
    std::fprintf(terminal, "%s\n", text.c_str());
    std::fflush(terminal);
    if (stream == 1 && text.rfind("recorded ", 0) == 0) run_file_line_ = text;
  }
}

std::optional<int> RankOutput::ExitCode(int rank) const {
  auto it = exit_codes_.find(rank);
  if (it == exit_codes_.end()) return std::nullopt;
  return it->second;
}

}  // namespace shardscope::cli
