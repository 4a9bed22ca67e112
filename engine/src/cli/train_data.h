// The data `train` feeds: what the model file names (or --data), found, hashed and loaded.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "shardscope/base/status.h"
#include "shardscope/data.h"
#include "shardscope/dataset_source.h"
#include "shardscope/model_file.h"

namespace shardscope::cli {

// Where the data of `mf` is (`data_flag`: --data, may be empty) and its content hash; a
// synthetic set is generated from the model's seed, so its name and size say what it is.
Result<DataSource> FindData(const ModelFile& mf, const std::string& data_flag);
// The source as the run file and --json record it.
nlohmann::json DataJson(const DataSource& src);
// One split of the data, at most `limit` examples (0: all).
Result<Dataset> LoadData(const ModelFile& mf, const std::string& data_flag, const DataSource& src,
                         Split split, int64_t limit);

}  // namespace shardscope::cli
