// Fuzz target over the ONNX importer: any bytes are parsed, checked and, when accepted,
// imported at two batch sizes. A crash or sanitizer report is the failure; a refusal is not.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "shardscope/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardscope;
  if (const char* last = std::getenv("ONNX_FUZZ_LAST")) {  // to replay a crash
    std::ofstream(last, std::ios::binary).write(reinterpret_cast<const char*>(data), size);
  }
  // A directory that does not exist: external data is never read from the machine.
  auto model = ParseOnnxModel(std::string(reinterpret_cast<const char*>(data), size),
                              "/nonexistent/fuzz.onnx");
  if (!model.ok()) return 0;
  const OnnxInputInfo& in = OnnxInput(**model);
  if (NumElements(in.example_shape) > (1 << 20)) return 0;
  for (int64_t batch : {1, 3}) {
    if (in.fixed_batch > 0 && batch != in.fixed_batch) continue;
    Graph g;
    Builder b(&g);
    Shape shape = {batch};
    shape.insert(shape.end(), in.example_shape.begin(), in.example_shape.end());
    std::vector<OnnxScope> scopes;
    auto out = ImportOnnxGraph(**model, b, b.Input("x", shape, in.dtype), &scopes);
    if (out.ok()) (void)g.Verify();
  }
  return 0;
}
