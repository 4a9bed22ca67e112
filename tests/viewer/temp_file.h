// A unique path under the system temp directory, removed (with SQLite's side files) on exit.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace shardscope::viewer::testing {

class TempPath {
 public:
  explicit TempPath(const std::string& name) {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("shardscope_viewer_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
  }
  ~TempPath() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string Sibling(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace shardscope::viewer::testing
