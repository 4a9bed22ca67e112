// The training program every seed sample shares: flags, data, N in-process devices, the loss
// printed as the seeds print it ("epoch: 1 step: 100, loss is ..."), test accuracy at the end.
// A sample builds its network, configures it as its seed does, fills a SampleSpec with what
// differs, and returns RunSample(argc, argv, net, spec).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "shardscope/partition.h"
#include "shardscope/search.h"
#include "shardscope/shardscope.h"

namespace shardscope::samples {

// Where the examples come from.
struct MnistData {
  ImageOptions images;  // e.g. pad_to = 32 for LeNet5
};
struct SyntheticData {  // MakeSyntheticDataset: 4096 training and 1024 test examples
  int64_t features = 10;
  int num_classes = 10;
};
// Examples a sample makes itself (e.g. token sequences): `make(count, seed)` returns `count`
// examples; the runner draws `train` of them for training and `test` more for the test.
struct CustomData {
  std::function<Dataset(int64_t count, uint64_t seed)> make;
  int64_t train = 1024;
  int64_t test = 256;
  std::string source = "synthetic";  // printed as the data's origin
};

struct SampleSpec {
  std::string description;  // first line of --help
  std::string headline;     // printed with the device count: "seed 003: FFN ..."
  std::string note;         // printed before training when not empty (e.g. what is not built)
  std::string devices_help = "In-process devices";
  int devices = 8;          // default --devices
  int64_t epochs = 10;      // default --epochs
  int64_t log_every = 100;  // default --log-every
  bool mnist = true;        // MNIST (--data, --limit), else custom or synthetic examples
  MnistData mnist_data;
  SyntheticData synthetic;
  CustomData custom;                // used when custom.make is set (and mnist is false)
  Shape input_shape = {1, 28, 28};  // one example
  DType input_dtype = DType::kF32;  // kI32 for token ids
  int64_t batch = 32;
  TrainConfig config;
  PartitionOptions options;  // devices is set from --devices
  // A search that chooses the strategies the network does not set (as the seeds'
  // set_auto_parallel_context(search_mode=...)); devices and meshes are set from `options`.
  // --search overrides it.
  std::optional<SearchMode> search;
  // Called on the search's result before training (e.g. to print the strategies that matter).
  std::function<void(const SearchResult&)> report_search;
  bool epoch_times = false;  // print each epoch's wall time
};

// Parses the flags, loads the data, trains `net` under `spec` on --devices in-process devices
// and prints the figures. Returns the process exit code: 0, or 1 after printing the error
// (CLI11's own codes for --help and bad flags).
int RunSample(int argc, char** argv, nn::Module& net, SampleSpec spec);

}  // namespace shardscope::samples
