// Internal: what `shardscope launch` reads from mpirun. mpirun runs with --tag-output, so
// every line a rank prints reaches the launcher as "[job,rank]<stdout>:text" over mpirun's
// own pipes, whichever host the rank runs on; no shared file system is involved. Each rank's
// wrapper ends with a marker line carrying the rank's exit code.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "shardscope/status.h"

namespace shardscope::cli {

// The marker each rank's wrapper prints last, followed by its exit code.
inline constexpr const char* kExitMarker = "shardscope-launch-exit ";

// Splits mpirun's tagged output into LOGS/rank-<r>.log files (written here, on the
// launcher's host), echoes rank 0's lines (and mpirun's own) to the terminal and picks up
// each rank's exit code.
class RankOutput {
 public:
  RankOutput(std::string logs, int ranks) : logs_(std::move(logs)), ranks_(ranks) {}
  ~RankOutput();

  // `stream` 1: mpirun's stdout, 2: its stderr.
  void Feed(int stream, std::string_view data);
  // Handles what is left without a newline and closes the logs.
  void Finish();

  // The exit code rank `r` reported; none when it never finished (killed, lost host).
  std::optional<int> ExitCode(int rank) const;
  // Rank 0's line saying where it wrote the run file ("recorded PATH on host H"), or "".
  const std::string& RunFileLine() const { return run_file_line_; }

 private:
  void Line(int stream, const std::string& line);
  void RankLine(int stream, int rank, std::string text);
  FILE* Log(int rank);

  std::string logs_;
  int ranks_;
  std::string pending_[3];
  std::map<std::pair<int, int>, std::string> partial_;  // (rank, stream): an unended line
  std::map<int, FILE*> files_;
  std::map<int, int> exit_codes_;
  std::string run_file_line_;
};

}  // namespace shardscope::cli
