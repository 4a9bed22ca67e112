#include "shardscope/viewer/run_document.h"

#include "shardscope/store/summary.h"

namespace shardscope::viewer {

store::Result<std::unique_ptr<RunDocument>> RunDocument::Open(const std::string& path) {
  auto reader = store::RunReader::Open(path);
  if (!reader.ok()) return reader.status();
  std::unique_ptr<RunDocument> doc(new RunDocument());
  doc->path_ = path;
  doc->reader_ = std::move(reader).value();
  return doc;
}

std::string RunDocument::Summary() const {
  auto text = store::FormatRunSummary(*reader_);
  return text.ok() ? *text : "cannot summarise " + path_ + ": " + text.status().message();
}

}  // namespace shardscope::viewer
