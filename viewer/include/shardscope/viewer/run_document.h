// RunDocument: one opened run file, as the views read it.
//
// Owns the store reader. Open() never throws and never crashes on a bad file: it returns
// the reader's error (naming the file and the reason) for the caller to show.
#pragma once

#include <memory>
#include <string>

#include "shardscope/store/reader.h"

namespace shardscope::viewer {

class RunDocument {
 public:
  static store::Result<std::unique_ptr<RunDocument>> Open(const std::string& path);

  const std::string& path() const { return path_; }
  const store::RunReader& reader() const { return *reader_; }
  // The run's overview as text (config, meshes, strategies, redistributions, losses).
  std::string Summary() const;

 private:
  RunDocument() = default;
  std::string path_;
  std::unique_ptr<store::RunReader> reader_;
};

}  // namespace shardscope::viewer
