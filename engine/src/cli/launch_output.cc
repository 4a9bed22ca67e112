#include "cli/launch_output.h"

#include <cstdlib>

namespace shardscope::cli {
namespace {

// The length of a tag "[1,3]<stdout>:" at `at` in `line` (rank into *rank), or 0.
size_t TagAt(const std::string& line, size_t at, int* rank) {
  if (at >= line.size() || line[at] != '[') return 0;
  const size_t comma = line.find(',', at);
  const size_t close = line.find(']', at);
  if (comma == std::string::npos || close == std::string::npos || comma > close) return 0;
  for (const char* stream : {"<stdout>:", "<stderr>:"}) {
    if (line.compare(close + 1, 9, stream) != 0) continue;
    char* end = nullptr;
    const long r = std::strtol(line.c_str() + comma + 1, &end, 10);
    if (end != line.c_str() + close || r < 0) return 0;
    *rank = static_cast<int>(r);
    return close + 10 - at;
  }
  return 0;
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
  for (auto& [key, text] : partial_) {
    if (!text.empty()) RankLine(key.second, key.first, text);
  }
  partial_.clear();
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
  int rank = 0;
  size_t tag = TagAt(line, 0, &rank);
  if (tag == 0 || rank >= ranks_) {  // mpirun's own words
    std::fprintf(stderr, "%s\n", line.c_str());
    return;
  }
  // A rank's output without a newline runs on into the next rank's tagged output: keep
  // each piece with its rank until that rank ends the line.
  for (size_t begin = tag;;) {
    size_t next = begin;
    int next_rank = 0, next_tag = 0;
    for (; next < line.size(); ++next) {
      next_tag = static_cast<int>(TagAt(line, next, &next_rank));
      if (next_tag > 0 && next_rank < ranks_) break;
    }
    std::string& partial = partial_[{rank, stream}];
    partial += line.substr(begin, next - begin);
    if (next == line.size()) {
      RankLine(stream, rank, partial);
      partial.clear();
      return;
    }
    rank = next_rank;
    begin = next + next_tag;
  }
}

void RankOutput::RankLine(int stream, int rank, std::string text) {
  FILE* terminal = stream == 1 ? stdout : stderr;
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
