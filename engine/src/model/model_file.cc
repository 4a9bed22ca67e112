// Model files: the public API (model_file.h). The format is documented in
// docs/model-format.md; the parser's parts are listed in model_file_internal.h.
#include "shardscope/model_file.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

#include "model_file_internal.h"
#include "shardscope/checked_math.h"

namespace shardscope {

std::string SourceLocation::ToString() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

struct ModelFile::Network : model_file::NetworkDef {
  std::shared_ptr<const OnnxModel> onnx;  // set: the network is this imported graph
  SourceLocation import_location;
};

ModelFile::ModelFile() = default;
ModelFile::~ModelFile() = default;
ModelFile::ModelFile(ModelFile&&) noexcept = default;
ModelFile& ModelFile::operator=(ModelFile&&) noexcept = default;

namespace {

using model_file::FailAt;
using model_file::Field;
using model_file::Map;
using model_file::Source;

const std::vector<std::string> kTopKeys = {"name",   "description", "input",     "classes",
                                           "layers", "blocks",      "operators", "parameters",
                                           "output", "loss",        "optimizer", "training",
                                           "data",   "parallel",    "import",    "constants"};

bool IsOnnxPath(const std::string& path) {
  return std::filesystem::path(path).extension() == ".onnx";
}

std::string Normalized(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Returns true for the sequence loss (cross-entropy over every position).
bool ParseLoss(const Source& src, const YAML::Node& node) {
  YAML::Node type = node;
  if (node.IsMap()) {
    Map m(src, node, "the loss section", {"type"});
    type = m.Require("type");
  }
  const std::string name = model_file::ReadString(src, type, "loss");
  const std::string n = Normalized(name);
  if (n == "softmaxcrossentropy" || n == "crossentropy" || n == "crossentropyloss" ||
      n == "softmaxcrossentropywithlogits") {
    return false;
  }
  if (n == "sequencecrossentropy") return true;
  src.Fail(type, "loss '" + name +
                     "' is not implemented; the losses are softmax_cross_entropy "
                     "(mean softmax cross-entropy of the logits against integer labels, the seeds' "
                     "CrossEntropyLoss / SoftmaxCrossEntropyWithLogits(sparse=True)) and "
                     "sequence_cross_entropy (the same over every position of a sequence)");
}

OptimizerConfig ParseOptimizer(const Source& src, const YAML::Node& node) {
  Map m(src, node, "the optimizer section",
        {"type", "lr", "learning_rate", "momentum", "beta1", "beta2", "epsilon", "weight_decay"});
  OptimizerConfig config;
  const YAML::Node& type = m.Require("type");
  Result<OptimizerConfig::Kind> kind =
      OptimizerKindFromName(model_file::ReadString(src, type, "optimizer.type"));
  if (!kind.ok()) src.Fail(type, "optimizer.type: " + kind.status().message());
  config.kind = *kind;
  const std::string type_name = OptimizerKindName(config.kind);
  auto only_for = [&](const char* key, OptimizerConfig::Kind k) {
    if (const Field* f = m.Find(key); f != nullptr && config.kind != k) {
      src.Fail(f->key_node, std::string("optimizer.") + key + " applies to type " +
                                OptimizerKindName(k) + ", not " + type_name);
    }
  };
  only_for("momentum", OptimizerConfig::kMomentum);
  only_for("beta1", OptimizerConfig::kAdam);
  only_for("beta2", OptimizerConfig::kAdam);
  only_for("epsilon", OptimizerConfig::kAdam);
  const Field* lr = m.Find("lr");
  if (const Field* alt = m.Find("learning_rate")) {
    if (lr != nullptr)
      src.Fail(alt->key_node, "give optimizer.lr or optimizer.learning_rate, not both");
    lr = alt;
  }
  auto number = [&](const Field* f, const std::string& what, double lo, bool lo_open, double hi,
                    bool hi_open, const std::string& range) {
    const double v = model_file::ReadFloat(src, f->value, what);
    if ((lo_open ? v <= lo : v < lo) || (hi_open ? v >= hi : v > hi)) {
      src.Fail(f->value, what + " must be " + range + ", found " + f->value.Scalar());
    }
    return static_cast<float>(v);
  };
  constexpr double kInf = 1e30;
  if (lr != nullptr)
    config.lr = number(lr, "optimizer." + lr->key, 0, true, kInf, false, "positive");
  if (const Field* f = m.Find("momentum")) {
    config.momentum = number(f, "optimizer.momentum", 0, false, 1, true, "in [0, 1)");
  }
  if (const Field* f = m.Find("beta1")) {
    config.beta1 = number(f, "optimizer.beta1", 0, false, 1, true, "in [0, 1)");
  }
  if (const Field* f = m.Find("beta2")) {
    config.beta2 = number(f, "optimizer.beta2", 0, false, 1, true, "in [0, 1)");
  }
  if (const Field* f = m.Find("epsilon")) {
    config.epsilon = number(f, "optimizer.epsilon", 0, true, kInf, false, "positive");
  }
  if (const Field* f = m.Find("weight_decay")) {
    config.weight_decay = number(f, "optimizer.weight_decay", 0, false, kInf, false, "0 or more");
  }
  return config;
}

// The input of one batch, [batch, input.shape...], fits (checked_math.h).
Status CheckBatchInput(int64_t batch, const Shape& example) {
  Shape input = {batch};
  input.insert(input.end(), example.begin(), example.end());
  return CheckTensorSize(input, sizeof(float), "batch " + std::to_string(batch) + " x input.shape");
}

void ParseTraining(const Source& src, const YAML::Node& node, TrainingConfig* t) {
  Map m(src, node, "the training section", {"batch", "epochs", "steps", "seed", "dtype"});
  if (const Field* f = m.Find("batch")) {
    t->batch = model_file::ReadPositive(src, f->value, "training.batch");
    t->batch_location = src.At(f->value);
  }
  if (const Field* f = m.Find("epochs")) {
    t->epochs = model_file::ReadPositive(src, f->value, "training.epochs");
  }
  if (const Field* f = m.Find("steps")) {
    t->steps = model_file::ReadNonNegative(src, f->value, "training.steps");
  }
  if (const Field* f = m.Find("seed")) {
    t->seed = static_cast<uint64_t>(model_file::ReadNonNegative(src, f->value, "training.seed"));
  }
  if (const Field* f = m.Find("dtype")) {
    auto dtype = ParsePrecision(model_file::ReadString(src, f->value, "training.dtype"));
    if (!dtype.ok()) src.Fail(f->value, "training.dtype: " + dtype.status().message());
    t->dtype = *dtype;
  }
}

bool IsMnistLike(const std::string& dataset) {
  return dataset == "mnist" || dataset == "fashion-mnist";
}

void ParseData(const Source& src, const YAML::Node& node, DataConfig* d) {
  Map m(src, node, "the data section",
        {"dataset", "dir", "pad_to", "normalize", "synthetic_size", "file"});
  if (const Field* f = m.Find("dataset")) {
    const std::string name = model_file::ReadString(src, f->value, "data.dataset");
    d->dataset_location = src.At(f->value);
    const std::string n = Normalized(name);
    if (n == "mnist") {
      d->dataset = "mnist";
    } else if (n == "fashionmnist") {
      d->dataset = "fashion-mnist";
    } else if (n == "synthetic") {
      d->dataset = "synthetic";
    } else if (n == "text") {
      d->dataset = "text";
    } else {
      src.Fail(f->value,
               "data.dataset '" + name + "' is not a data set" +
                   model_file::DidYouMean(name, {"mnist", "fashion-mnist", "synthetic", "text"}) +
                   "; data sets: mnist, fashion-mnist, synthetic, text");
    }
  }
  if (const Field* f = m.Find("file")) {
    if (d->dataset != "text")
      src.Fail(f->key_node, "data.file applies to dataset: text, not " + d->dataset);
    d->file = model_file::ReadString(src, f->value, "data.file");
    // Relative to the model file, as import: is.
    const std::filesystem::path p(d->file);
    if (p.is_relative() && !d->file.empty()) {
      d->file = (std::filesystem::path(src.path()).parent_path() / p).lexically_normal().string();
    }
  }
  const bool mnist = IsMnistLike(d->dataset);
  auto only_mnist = [&](const char* key) {
    if (const Field* f = m.Find(key); f != nullptr && !mnist) {
      src.Fail(f->key_node, std::string("data.") + key +
                                " applies to mnist and fashion-mnist, not " + d->dataset);
    }
  };
  only_mnist("pad_to");
  only_mnist("normalize");
  only_mnist("dir");
  if (const Field* f = m.Find("synthetic_size"); f != nullptr && d->dataset != "synthetic") {
    src.Fail(f->key_node, "data.synthetic_size applies to dataset: synthetic, not " + d->dataset);
  }
  if (const Field* f = m.Find("dir")) d->dir = model_file::ReadString(src, f->value, "data.dir");
  if (const Field* f = m.Find("pad_to")) {
    const int64_t pad = model_file::ReadNonNegative(src, f->value, "data.pad_to");
    if (pad != 0 && pad < 28) {
      src.Fail(f->value,
               "data.pad_to pads the 28x28 images to a larger square; it must be 28 "
               "or more (or 0 for no padding), found " +
                   std::to_string(pad));
    }
    if (pad > 4096) src.Fail(f->value, "data.pad_to is too large");
    d->pad_to = static_cast<int>(pad);
  }
  if (const Field* f = m.Find("normalize")) {
    d->normalize = model_file::ReadBool(src, f->value, "data.normalize");
  }
  if (d->dataset == "synthetic") {
    if (const Field* f = m.Find("synthetic_size")) {
      d->synthetic_size = model_file::ReadPositive(src, f->value, "data.synthetic_size");
      d->synthetic_size_location = src.At(f->value);
    } else {
      src.Fail(node,
               "the data section with dataset: synthetic is missing the required key "
               "'synthetic_size' (the number of examples)");
    }
  }
}

// Counts the documents without building them, and stops where yaml-cpp would not: its
// LoadAll() never returns (allocating until memory runs out) when a document starts with a
// token it cannot use, such as a stray ',': each call returns another empty document at the
// same place. One document is allowed.
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  std::vector<YAML::Mark> starts;
};

void CheckDocuments(const Source& src, const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  while (counter.starts.size() < 4 && parser.HandleNextDocument(counter)) {
    const size_t n = counter.starts.size();
    if (n >= 2 && counter.starts[n - 1].pos == counter.starts[n - 2].pos) {
      const YAML::Mark& at = counter.starts[n - 1];
      const size_t pos = static_cast<size_t>(at.pos);
      const std::string found = pos < text.size() ? "'" + text.substr(pos, 1) + "'" : "nothing";
      FailAt(src.At(at), "YAML syntax error: unexpected " + found + " at the start of a document");
    }
  }
  if (counter.starts.size() > 1) {
    FailAt(src.At(counter.starts[1]),
           "a model file holds one YAML document; a second one starts here");
  }
}

}  // namespace

Result<ModelFile> ParseModelText(const std::string& text, const std::string& path,
                                 const ModelLoadOptions& options) {
  ModelFile file;
  file.path_ = path;
  file.text_ = text;
  const Source src(path, file.text_);
  try {
    CheckDocuments(src, file.text_);
    const YAML::Node root = YAML::Load(file.text_);
    if (root.IsNull()) {
      FailAt({path, 1, 1},
             "the file is empty; a model file is a YAML mapping with at least "
             "input: and layers: (see docs/model-format.md)");
    }
    if (!root.IsMap()) {
      src.Fail(root,
               "a model file is a YAML mapping (key: value lines) with at least input: "
               "and layers:");
    }
    Map top(src, root, "the top level", kTopKeys);

    model_file::ParallelDraft draft;
    if (const Field* f = top.Find("parallel")) {
      model_file::ParseParallel(src, f->value, &draft);
      draft.config.location = src.At(f->key_node);
    }

    auto network = std::make_unique<ModelFile::Network>();
    std::vector<model_file::WrittenStrategy> inline_strategies;
    if (const Field* imp = top.Find("import")) {
      for (const char* key : {"layers", "blocks", "operators", "parameters", "output"}) {
        if (const Field* f = top.Find(key)) {
          src.Fail(f->key_node, std::string("'") + key +
                                    "' cannot be given with import: the network is the "
                                    "imported ONNX graph");
        }
      }
      // A .onnx file given directly has no YAML to point at: its own messages suffice.
      network->import_location = IsOnnxPath(path) ? SourceLocation{} : src.At(imp->value);
      file.import_path_ = model_file::ReadString(src, imp->value, "import");
      network->onnx = model_file::LoadImport(path, file.import_path_, network->import_location,
                                             options.weights);
      for (auto& ws : draft.strategies) ws.target = model_file::OnnxTargetName(ws.target);
      for (auto& wp : draft.places) wp.target = model_file::OnnxTargetName(wp.target);
      for (auto& sb : draft.config.shard_blocks) sb.block = model_file::OnnxTargetName(sb.block);
    } else {
      model_file::ParseNetwork(src, top, draft.meshes, network.get(), &inline_strategies);
    }

    if (const Field* f = top.Find("name")) {
      file.name_ = model_file::ReadString(src, f->value, "name");
    } else {
      file.name_ = std::filesystem::path(path).stem().string();
      if (file.name_.empty()) file.name_ = "model";
    }
    if (const Field* f = top.Find("description")) {
      (void)model_file::ReadString(src, f->value, "description");
    }
    YAML::Node input_shape;
    if (network->onnx == nullptr || top.Has("input")) {
      const YAML::Node& input = top.Require("input");
      Map input_map(src, input, "the input section", {"shape", "dtype"});
      input_shape = input_map.Require("shape");
      if (const Field* f = input_map.Find("dtype")) {
        const std::string t = model_file::ReadString(src, f->value, "input.dtype");
        if (t == "i32" || t == "int32" || t == "i64" || t == "int64") {
          file.input_dtype_ = DType::kI32;  // ids: i64 data is read as i32
        } else if (t != "f32" && t != "float32") {
          src.Fail(f->value, "input.dtype '" + t + "' is not f32 or i32 (token ids)");
        }
      }
      file.example_shape_ =
          model_file::ReadShape(src, input_shape, "input.shape (one example, without the batch)");
      if (file.example_shape_.empty()) {
        src.Fail(input_shape, "input.shape must have at least one dimension");
      }
    }
    const Field* classes = top.Find("classes");
    if (classes != nullptr) {
      const int64_t c = model_file::ReadPositive(src, classes->value, "classes");
      if (c > INT_MAX) src.Fail(classes->value, "classes is too large");
      file.num_classes_ = static_cast<int>(c);
    }
    const Field* loss = top.Find("loss");
    if (loss != nullptr) file.sequence_ = ParseLoss(src, loss->value);
    if (const Field* f = top.Find("optimizer")) {
      file.training_.optimizer = ParseOptimizer(src, f->value);
    }
    // An imported graph's input is what its file declares unless input: says (token ids: i32).
    if (network->onnx != nullptr && !top.Has("input")) {
      file.input_dtype_ = OnnxInput(*network->onnx).dtype;
    }
    if (network->onnx != nullptr && OnnxInput(*network->onnx).fixed_batch > 0) {
      file.training_.batch = OnnxInput(*network->onnx).fixed_batch;
    }
    if (const Field* f = top.Find("training")) ParseTraining(src, f->value, &file.training_);
    if (const Field* f = top.Find("data")) ParseData(src, f->value, &file.data_);
    model_file::FinishParallel(&draft, inline_strategies);
    if (file.data_.dataset == "text") {
      const YAML::Node& at = top.Find("data")->value;
      if (network->onnx == nullptr &&
          (file.input_dtype_ != DType::kI32 || file.example_shape_.size() != 1)) {
        src.Fail(input_shape.IsDefined() ? input_shape : at,
                 "dataset: text gives sequences of token ids: input is {shape: [positions], "
                 "dtype: i32}");
      }
      if (!file.sequence_) {
        src.Fail(loss != nullptr ? loss->value : at,
                 "dataset: text labels every position with its next token: write "
                 "loss: sequence_cross_entropy");
      }
    }

    // An imported graph reads what the data set gives (reshaped to its input when the
    // element counts agree); an input of another size (token ids, 224x224 images) its own.
    if (network->onnx != nullptr && file.example_shape_.empty()) {
      const int64_t side = file.data_.pad_to > 0 ? file.data_.pad_to : 28;
      const Shape& own = OnnxInput(*network->onnx).example_shape;
      file.example_shape_ = IsMnistLike(file.data_.dataset) && NumElements(own) == side * side
                                ? Shape{1, side, side}
                                : own;
    }
    // The input must be what the data set gives.
    if (IsMnistLike(file.data_.dataset) && network->onnx == nullptr) {
      const int64_t side = file.data_.pad_to > 0 ? file.data_.pad_to : 28;
      const Shape expected = {1, side, side};
      if (file.example_shape_ != expected) {
        src.Fail(input_shape,
                 "input.shape " + ShapeToString(file.example_shape_) + " does not fit the data: " +
                     file.data_.dataset + " images are " + ShapeToString(expected) +
                     (file.data_.pad_to > 0 ? " (padded to " + std::to_string(side) + ")"
                                            : std::string(" (data.pad_to: 32 pads them to "
                                                          "[1, 32, 32])")));
      }
    }

    // The input batch must fit before anything is built from it.
    if (Status size = CheckBatchInput(file.training_.batch, file.example_shape_); !size.ok()) {
      FailAt(file.training_.batch_location.line > 0 ? file.training_.batch_location
                                                    : src.At(input_shape),
             size.message());
    }

    // Build once to check the network and resolve the annotations against its operators.
    model_file::BuildTrace trace;
    ModelGraph model =
        network->onnx != nullptr
            ? model_file::BuildImport(*network->onnx, file.example_shape_, file.sequence_,
                                      file.training_.batch, network->import_location, &trace)
            : model_file::BuildNetwork(*network, file.example_shape_, file.input_dtype_,
                                       file.sequence_, file.training_.batch, &trace);
    const int64_t width = model.graph.value(model.logits).shape.back();
    if (classes != nullptr && width != file.num_classes_) {
      FailAt(trace.last_location,
             "the network ends with " + trace.last_what + " giving " + std::to_string(width) +
                 " logits per example, but classes is " + std::to_string(file.num_classes_) +
                 " (at " + src.At(classes->value).ToString() + ")");
    }
    if (width > INT_MAX) FailAt(trace.last_location, "the network gives too many classes");
    file.num_classes_ = static_cast<int>(width);
    // An imported graph of another input (tokens, ImageNet images) does not read MNIST.
    const int64_t side = file.data_.pad_to > 0 ? file.data_.pad_to : 28;
    const bool reads_mnist =
        network->onnx == nullptr || file.example_shape_ == Shape{1, side, side};
    if (IsMnistLike(file.data_.dataset) && reads_mnist && file.num_classes_ != 10) {
      FailAt(classes != nullptr ? src.At(classes->value) : trace.last_location,
             file.data_.dataset + " has 10 classes, but the network gives " +
                 std::to_string(file.num_classes_) + " logits per example (" + trace.last_what +
                 ")");
    }
    draft.config.annotations = model_file::ResolveAnnotations(model, trace, draft);
    file.parallel_ = std::move(draft.config);
    file.network_ = std::move(network);
  } catch (const model_file::Error& e) {
    return e.status;
  } catch (const YAML::ParserException& e) {
    return Status::Invalid(src.At(e.mark).ToString() + ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    return Status::Invalid(src.At(e.mark).ToString() + ": YAML error: " + e.msg);
  } catch (const std::exception& e) {
    return Status::Internal(path + ": unexpected error while reading the model file: " + e.what());
  }
  return file;
}

Result<ModelFile> LoadModelFile(const std::string& path, const ModelLoadOptions& options) {
  namespace fs = std::filesystem;
  if (IsOnnxPath(path)) {
    const std::string name = fs::path(path).filename().string();
    return ParseModelText("# the ONNX model " + name + " with Shardscope's defaults\nimport: \"" +
                              name + "\"\n" +
                              (options.sequence_loss ? "loss: sequence_cross_entropy\n" : ""),
                          path, options);
  }
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    return Status::NotFound(path + ": cannot read the model file: no such file");
  }
  if (fs::is_directory(st)) {
    return Status::Io(path + ": cannot read the model file: it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::Io(path + ": cannot read the model file: " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Status::Io(path + ": cannot read the model file: read error");
  }
  return ParseModelText(text.str(), path, options);
}

Result<ModelGraph> ModelFile::Build(int64_t batch) const {
  if (network_ == nullptr) return Status::Internal(path_ + ": the model file was moved from");
  if (batch <= 0) {
    return Status::Invalid(path_ + ": the batch size must be positive, got " +
                           std::to_string(batch));
  }
  SHARDSCOPE_RETURN_IF_ERROR(CheckBatchInput(batch, example_shape_).WithContext(path_));
  try {
    model_file::BuildTrace trace;
    ModelGraph model = network_->onnx != nullptr
                           ? model_file::BuildImport(*network_->onnx, example_shape_, sequence_,
                                                     batch, network_->import_location, &trace)
                           : model_file::BuildNetwork(*network_, example_shape_, input_dtype_,
                                                      sequence_, batch, &trace);
    // Sources for messages: the layer that made each operator (inner layers after their
    // blocks in the map's order, so the most specific wins), then its strategy's line.
    for (const auto& [scope, record] : trace.modules) {
      for (NodeId n : record.nodes) model.graph.mutable_node(n).source = record.location.ToString();
    }
    for (const AnnotationEntry& a : parallel_.annotations) {
      const NodeId n = model.graph.FindNode(a.op);
      if (n == kNoNode) {
        FailAt(a.location, "the network has no operator '" + a.op + "' for this annotation");
      }
      model.graph.mutable_node(n).annotations = a.annotations;
      if (a.location.line > 0) model.graph.mutable_node(n).source = a.location.ToString();
    }
    return model;
  } catch (const model_file::Error& e) {
    return e.status;
  } catch (const std::exception& e) {
    return Status::Internal(path_ + ": unexpected error while building the model: " + e.what());
  }
}

}  // namespace shardscope
