// ResolveDataset: the named data set's directory and its content hash (dataset_source.h).
#include "shardscope/dataset_source.h"

#include <cstdlib>
#include <map>

#include "shardscope/base/sha256.h"
#include "shardscope/data.h"

#ifndef SHARDSCOPE_DEFAULT_DATASETS_DIR
#define SHARDSCOPE_DEFAULT_DATASETS_DIR ""
#endif

namespace shardscope {
namespace {

// The four idx.gz files as published (../shared/datasets/README.md lists the same digests).
const std::map<std::string, std::vector<std::string>>& PublishedChecksums() {
  static const std::map<std::string, std::vector<std::string>> known = {
      {"mnist",
       {"440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"}},
      {"fashion-mnist",
       {"3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"}}};
  return known;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

Result<DataSource> Hashed(const std::string& dataset, const std::string& dir,
                          const std::string& found_by) {
  DataSource src{dataset, dir, found_by, "", {}, ""};
  Sha256 all;
  for (const std::string& path : IdxFilePaths(dir)) {
    const std::string digest = Sha256OfFile(path);
    if (digest.empty()) return Status::Io(path + ": cannot read it to hash it");
    src.file_sha256.push_back(digest);
    all.Update(digest);
  }
  src.sha256 = all.HexDigest();
  for (const auto& [name, digests] : PublishedChecksums())
    if (digests == src.file_sha256) src.identified = name;
  if (!src.identified.empty() && src.identified != dataset) {
    return Status::Invalid(dir + " (" + found_by + ") holds " + src.identified +
                           ": all four files match its published SHA-256 checksums, but the "
                           "model file's data.dataset is " +
                           dataset + ". Point at the " + dataset + " files, or set data.dataset: " +
                           src.identified + " if that is what you mean to train on");
  }
  return src;
}

}  // namespace

std::string DataSource::Describe() const {
  return dataset + " from " + dir + " (" + found_by + "), sha256 " + sha256.substr(0, 16) +
         (identified.empty() ? " (not a published " + dataset + " download)"
                             : " (the published " + identified + " files)");
}

std::vector<std::string> DatasetSearchPath(const std::string& dataset) {
  // A root set by the user is the only one searched: never silently replaced by another.
  if (const std::string root = Env("SHARDSCOPE_DATASETS"); !root.empty())
    return {root + "/" + dataset};
  std::vector<std::string> dirs;
  dirs.push_back("../shared/datasets/" + dataset);
  if (const std::string built = SHARDSCOPE_DEFAULT_DATASETS_DIR; !built.empty())
    dirs.push_back(built + "/" + dataset);
  dirs.push_back("/usr/share/datasets/" + dataset);
  dirs.push_back("/usr/share/datasets/" + dataset + "/raw");
  return dirs;
}

Result<DataSource> ResolveDataset(const std::string& dataset, const std::string& flag_dir,
                                  const std::string& file_dir) {
  const std::pair<std::string, std::string> explicit_dirs[] = {
      {flag_dir, "--data"}, {file_dir, "data.dir"}, {Env("SHARDSCOPE_DATA"), "SHARDSCOPE_DATA"}};
  for (const auto& [dir, how] : explicit_dirs) {
    if (dir.empty()) continue;
    Status st = CheckDataDir(dir);
    if (!st.ok()) return st.WithContext("data directory given by " + how);
    return Hashed(dataset, dir, how);
  }
  std::string tried;
  for (const std::string& dir : DatasetSearchPath(dataset)) {
    Status st = CheckDataDir(dir);
    if (st.ok()) return Hashed(dataset, dir, "search path");
    tried += "\n  " + st.message();
  }
  return Status::NotFound(
      "data set " + dataset + " (the model file's data.dataset) not found; looked in:" + tried +
      "\nPass its directory with --data DIR or data.dir, or set SHARDSCOPE_DATASETS to a "
      "directory holding " +
      dataset + "/ (docs/model-format.md, data)");
}

}  // namespace shardscope
