// Model files that import an ONNX graph (`import: model.onnx`), and .onnx files given
// directly: the imported graph stands where layers/operators would, its name scopes act as
// modules for the parallel section.
#include <filesystem>

#include "model_file_internal.h"

namespace shardscope::model_file {
namespace {

[[noreturn]] void FailWith(const SourceLocation& loc, const Status& status) {
  throw Error{loc.line > 0 ? status.WithContext(loc.ToString()) : status};
}

// The imported graph as a module: the classifier builder puts input, labels and loss
// around it.
class OnnxModule : public nn::Module {
 public:
  OnnxModule(const OnnxModel& model, std::vector<OnnxScope>* scopes)
      : Module(""), model_(model), scopes_(scopes) {}

 protected:
  ValueId Forward(Builder& b, ValueId x) override {
    Result<ValueId> y = ImportOnnxGraph(model_, b, x, scopes_);
    if (!y.ok()) {
      b.Fail(y.status());
      return kNoValue;
    }
    return *y;
  }
  bool scoped() const override { return false; }

 private:
  const OnnxModel& model_;
  std::vector<OnnxScope>* scopes_;
};

}  // namespace

std::shared_ptr<const OnnxModel> LoadImport(const std::string& model_path,
                                            const std::string& import,
                                            const SourceLocation& location, bool weights) {
  namespace fs = std::filesystem;
  const fs::path target = fs::path(import).is_absolute()
                              ? fs::path(import)
                              : fs::path(model_path).parent_path() / fs::path(import);
  auto model = LoadOnnxModel(target.lexically_normal().string(), OnnxLoadOptions{weights});
  if (!model.ok()) FailWith(location, model.status());
  return *model;
}

ModelGraph BuildImport(const OnnxModel& onnx, const Shape& example_shape, bool sequence,
                       int64_t batch, const SourceLocation& location, BuildTrace* trace) {
  std::vector<OnnxScope> scopes;
  OnnxModule module(onnx, &scopes);
  Result<ModelGraph> model =
      nn::BuildClassifier(module, example_shape, batch, OnnxInput(onnx).dtype, sequence);
  if (!model.ok()) FailWith(location, model.status());
  for (OnnxScope& s : scopes) {
    BuildTrace::ModuleRecord& rec = trace->modules[s.path];
    rec.type = "ONNX scope";
    rec.location = location;
    rec.ops_per_call = {static_cast<int>(s.nodes.size())};
    rec.nodes = std::move(s.nodes);
    rec.input_shape = std::move(s.input_shape);
    rec.output_shape = std::move(s.output_shape);
  }
  trace->last_location = location;
  trace->last_what = "the ONNX graph's output";
  return std::move(model).value();
}

std::string OnnxTargetName(const std::string& written) {
  return written.find('/') == std::string::npos ? written : OnnxOperatorName(written);
}

}  // namespace shardscope::model_file
