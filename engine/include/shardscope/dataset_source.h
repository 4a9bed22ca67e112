// Where a model file's named data set is read from, and what it is by content: the data a
// run trains on is the data its model file names, or the run stops saying where it looked.
#pragma once

#include <string>
#include <vector>

#include "shardscope/status.h"

namespace shardscope {

struct DataSource {
  std::string dataset;   // as the model file names it: "mnist", "fashion-mnist"
  std::string dir;       // the directory read
  std::string found_by;  // "--data", "data.dir", "SHARDSCOPE_DATA", "search path"
  // SHA-256 over the four IDX files' SHA-256 digests (train images, train labels, test images,
  // test labels, as stored), so the same files give the same hash wherever they are.
  std::string sha256;
  std::vector<std::string> file_sha256;  // the four files' own digests, in that order
  // The data set whose published checksums all four files match ("" when none does).
  std::string identified;
  // "mnist from DIR (search path), sha256 0123456789abcdef… (the published mnist files)"
  std::string Describe() const;
};

// Directories tried for a named data set: $SHARDSCOPE_DATASETS/NAME alone when that is set,
// else in order ../shared/datasets/NAME (from the working directory), the build's datasets
// directory (SHARDSCOPE_DATASETS_DIR at configure time)/NAME, /usr/share/datasets/NAME, its raw/.
std::vector<std::string> DatasetSearchPath(const std::string& dataset);

// The directory of `dataset`: `flag_dir` (--data), else `file_dir` (the model file's
// data.dir), else $SHARDSCOPE_DATA, else the first complete directory on the search path;
// never another data set's. Fails (kNotFound) naming the data set and every place looked at,
// and (kInvalidInput) when the files are, by their published checksums, another known data set.
Result<DataSource> ResolveDataset(const std::string& dataset, const std::string& flag_dir,
                                  const std::string& file_dir);

}  // namespace shardscope
