// The data `train` feeds: the model file's data set, or --data's (text, synthetic, IDX images).
#include "cli/train_data.h"

#include <algorithm>
#include <string>
#include <vector>

namespace shardscope::cli {

namespace {

// `--data text:FILE` or dataset: text. The vocabulary must fit the model's token ids: the
// output width and every embedding table the ids index.
Result<Dataset> LoadText(const ModelFile& mf, const std::string& data_flag, Split split,
                         int64_t limit) {
  const bool flag = data_flag.rfind("text:", 0) == 0;
  const std::string file = flag ? data_flag.substr(5) : mf.data().file;
  if (file.empty()) {
    return Status::Invalid(mf.path() + ": dataset: text needs a file: data.file in the model " +
                           "file, or --data text:FILE");
  }
  if (!mf.sequence_loss() || mf.input_dtype() != DType::kI32 || mf.example_shape().size() != 1) {
    return Status::Invalid("--data " + data_flag +
                           ": a text data set feeds next-token models, but " + mf.path() +
                           " is not one (it needs input {shape: [positions], dtype: " +
                           "i32} and loss: sequence_cross_entropy)");
  }
  int64_t vocab = mf.num_classes();
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, mf.Build(1));
  for (const Node& n : model.graph.nodes()) {
    if (n.op == OpKind::kGather && n.inputs[1] == model.input)
      vocab = std::min(vocab, model.graph.value(n.inputs[0]).shape[0]);
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(TextDataset text,
                              LoadTextDataset(file, mf.example_shape()[0], vocab));
  Dataset out = split == Split::kTrain ? std::move(text.train) : std::move(text.test);
  if (limit > 0 && limit < out.size()) {
    const int64_t t = mf.example_shape()[0];
    out.images = Tensor::FromInts(
        {limit, t}, std::vector<int32_t>(out.images.ints(), out.images.ints() + limit * t));
    out.labels = Tensor::FromInts(
        {limit, t}, std::vector<int32_t>(out.labels.ints(), out.labels.ints() + limit * t));
  }
  return out;
}

}  // namespace

// The data the model file names (dataset_source.h): where it is and its content hash. A
// synthetic set is generated from the model's seed, so its name and size say what it is.
Result<DataSource> FindData(const ModelFile& mf, const std::string& data_flag) {
  const DataConfig& d = mf.data();
  if (d.dataset == "text" || data_flag.rfind("text:", 0) == 0) {
    DataSource src;
    src.dataset = "text";
    src.dir = data_flag.rfind("text:", 0) == 0 ? data_flag.substr(5) : d.file;
    src.found_by = data_flag.rfind("text:", 0) == 0 ? "--data" : "data.file";
    return src;
  }
  if (d.dataset == "synthetic") {
    DataSource src;
    src.dataset = "synthetic";
    src.found_by = "generated from training.seed " + std::to_string(mf.training().seed);
    return src;
  }
  return ResolveDataset(d.dataset, data_flag, d.dir);
}

nlohmann::json DataJson(const DataSource& src) {
  return {{"dataset", src.dataset},
          {"dir", src.dir},
          {"found_by", src.found_by},
          {"sha256", src.sha256},
          {"identified", src.identified}};
}

Result<Dataset> LoadData(const ModelFile& mf, const std::string& data_flag, const DataSource& src,
                         Split split, int64_t limit) {
  const DataConfig& d = mf.data();
  if (d.dataset == "text" || data_flag.rfind("text:", 0) == 0)
    return LoadText(mf, data_flag, split, limit);
  if (d.dataset == "synthetic") {
    const int64_t n = d.synthetic_size > 0 ? d.synthetic_size : 4096;
    // Train and test come from the same prototypes (one seed), split by position.
    Dataset all =
        MakeSyntheticDataset(n + n / 4, mf.example_shape(), mf.num_classes(), mf.training().seed);
    const int64_t begin = split == Split::kTrain ? 0 : n;
    const int64_t count = split == Split::kTrain ? n : n / 4;
    const int64_t ex = all.images.size() / all.size();
    Shape shape = all.images.shape();
    shape[0] = count;
    Dataset out;
    out.num_classes = all.num_classes;
    out.images =
        Tensor::FromVector(shape, std::vector<float>(all.images.data() + begin * ex,
                                                     all.images.data() + (begin + count) * ex));
    out.labels = Tensor::FromInts({count}, std::vector<int32_t>(all.labels.ints() + begin,
                                                                all.labels.ints() + begin + count));
    return out;
  }
  ImageOptions opts;
  opts.normalize = d.normalize;
  opts.pad_to = d.pad_to;
  return LoadIdxDataset(src.dir, split, opts, limit);
}

}  // namespace shardscope::cli
