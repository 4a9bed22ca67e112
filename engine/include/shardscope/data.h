// Data: the MNIST / Fashion-MNIST IDX loader, a synthetic data set for tests, and the batch
// iterator that feeds training.
//
// Every function that reads files reports failure through Status / Result; the message starts
// with the path of the file (or directory) concerned and says what was expected and what was
// found. Nothing here throws. Preconditions that only a programming error can break (a batch
// size of zero, a negative example count) are asserts.
//
// Typical use:
//
//   SHARDSCOPE_ASSIGN_OR_RETURN(std::string dir, ResolveDataDir(flags.data_dir));
//   SHARDSCOPE_ASSIGN_OR_RETURN(Dataset train, LoadIdxDataset(dir, Split::kTrain, {}));
//   BatchIterator it(train, /*batch_size=*/64, /*seed=*/42, /*shuffle=*/true);
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     it.Reset(epoch);
//     Tensor x, y;
//     while (it.Next(&x, &y)) { ... }
//   }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

// A labelled classification data set held in memory.
//   images: f32 [N, C, H, W] (the IDX loader gives C = 1; a synthetic set has [N, <shape>]),
//           or i32 token ids [N, T] (LoadTextDataset).
//   labels: i32 [N], each in [0, num_classes); or one label per position, i32 [N, T] (the
//           next token of each position of a text sequence).
// Row i of `images` (all elements after the first dimension) belongs with row i of labels.
struct Dataset {
  Tensor images;
  Tensor labels;
  int num_classes = 10;

  // Number of examples N (0 for a default-constructed Dataset).
  int64_t size() const { return images.rank() > 0 ? images.dim(0) : 0; }
  // Shape of one example: images' shape without its first dimension.
  Shape example_shape() const;
  // Number of floats in one example (product of example_shape()).
  int64_t example_size() const;
  // Labels per example: 1, or T for sequence labels [N, T].
  int64_t labels_per_example() const { return size() > 0 ? labels.size() / size() : 1; }
};

// A character-level next-token data set (`--data text:FILE`).
//   vocabulary: the distinct bytes of the file in byte order; token id k is vocabulary[k].
//   train, test: non-overlapping windows of `sequence_length` bytes, ids i32 [N, T], with
//   the next byte of every position as its label, i32 [N, T]; the last tenth of the windows
//   (none when there are fewer than 10) is the test set.
struct TextDataset {
  std::string vocabulary;
  Dataset train, test;
};

// Reads `path` whole. Errors name the file: kNotFound (cannot open), kInvalidInput (shorter
// than sequence_length + 1 bytes; more distinct bytes than `max_vocab` when it is > 0, the
// model's embedding and output width).
Result<TextDataset> LoadTextDataset(const std::string& path, int64_t sequence_length,
                                    int64_t max_vocab = 0);

// How IDX pixels (unsigned bytes 0..255) become floats.
//   x = pixel / 255; then, when `normalize`, x = (x - mean) / stddev.
// The defaults are the MNIST training-set statistics.
//   pad_to: 0 keeps the stored size (28x28). A value >= the stored height and width pads
//   each image with a border, centred (28 -> 32 puts 2 pixels on each side, as LeNet-5
//   expects). The border holds the value a black pixel (0) maps to, so it looks like
//   background: 0 without normalization, -mean/stddev with it.
struct ImageOptions {
  bool normalize = true;
  float mean = 0.1307f;
  float stddev = 0.3081f;
  int pad_to = 0;
};

// The value a black pixel (byte 0) takes under `opts`; also the padding value.
float BackgroundValue(const ImageOptions& opts);

enum class Split { kTrain, kTest };
// "train" or "test".
const char* SplitName(Split split);

// The IDX file names of a split, without the ".gz" suffix:
// "train-images-idx3-ubyte" / "train-labels-idx1-ubyte", or the "t10k-" pair for kTest.
std::string IdxImagesName(Split split);
std::string IdxLabelsName(Split split);

// Loads one split of an MNIST-format data set from `dir`.
//
// For each of the two files, `dir/<name>.gz` is used if it exists, otherwise `dir/<name>`
// (uncompressed); both are read through zlib, which also reads plain files. Images must have
// magic 0x00000803 with nonzero rows and columns (up to 4096), labels magic 0x00000801, both
// the same count, every label in 0..9. With `limit` > 0 only the first min(limit, count)
// examples are read and kept (fast tests); `limit` = 0 keeps all.
//
// Result: images f32 [N, 1, H, W] (H = W = opts.pad_to when padding, else the stored
// rows / columns), labels i32 [N], num_classes = 10.
//
// Errors (each message names the file):
//   kNotFound      neither <name>.gz nor <name> in `dir` (names the directory and both names).
//   kIoError       the file cannot be opened or zlib fails (corrupt gzip stream).
//   kInvalidInput  truncated header, wrong magic (expected and found, in hex), zero or
//                  oversized dimensions, truncated pixels or labels (expected N bytes, found
//                  M), count mismatch between the two files, label out of range, or invalid
//                  options (negative limit, pad_to smaller than the image, stddev <= 0).
// Speed: the 60,000 training images load in well under a second (chunked reads, one table
// lookup per pixel).
Result<Dataset> LoadIdxDataset(const std::string& dir, Split split, const ImageOptions& opts,
                               int64_t limit = 0);

// OK when `dir` holds all four IDX files (train and t10k, images and labels; each either
// gzip-compressed with ".gz" or plain). Otherwise kNotFound naming the directory and listing
// every missing file (or saying that the directory does not exist).
Status CheckDataDir(const std::string& dir);

// The four IDX files of `dir` as found (train images, train labels, test images, test labels;
// NAME.gz before NAME), "" for one that is missing.
std::vector<std::string> IdxFilePaths(const std::string& dir);

// Where the training data lives, in this order:
//   1. `flag_value` when non-empty; it must pass CheckDataDir, else that error.
//   2. the environment variable SHARDSCOPE_DATA when set and non-empty; it must pass
//      CheckDataDir, else that error (an explicit setting that is wrong is never silently
//      replaced by another data set).
//   3. the first of DefaultDataDirs() that passes CheckDataDir.
// When nothing is found, kNotFound listing everything tried and why each was rejected.
Result<std::string> ResolveDataDir(const std::string& flag_value);

// The same search with the environment value and the fallback directories given explicitly
// (`env_value` empty = unset). ResolveDataDir(f) is
// ResolveDataDirFrom(f, getenv("SHARDSCOPE_DATA"), DefaultDataDirs()). For tests and tools.
Result<std::string> ResolveDataDirFrom(const std::string& flag_value, const std::string& env_value,
                                       const std::vector<std::string>& default_dirs);

// Where Debian's dataset-fashion-mnist package installs the gzip IDX files:
// "/usr/share/datasets/fashion-mnist", and its "raw" subdirectory (the layout torchvision
// expects, in case a packaging uses it).
std::vector<std::string> DefaultDataDirs();

// A learnable synthetic classification set, deterministic for a given seed.
//
// Each class c gets a prototype drawn once from N(0, 1) per element; example i gets a label
// drawn uniformly from [0, num_classes) and the value prototype[label] + 0.5 * N(0, 1) per
// element. Examples are generated one after another from one stream, so the first k
// examples of MakeSyntheticDataset(n, ...) equal MakeSyntheticDataset(k, ...) with the same
// shape, classes and seed. Classes are well separated (nearest prototype classifies almost
// every example correctly once an example has a few dozen elements).
//
// Result: images f32 [n, example_shape...], labels i32 [n], num_classes as given.
// Requires n >= 0, num_classes >= 1, every dimension of example_shape >= 1 (asserted).
Dataset MakeSyntheticDataset(int64_t n, Shape example_shape, int num_classes, uint64_t seed);

// Walks a Dataset in batches, optionally in a shuffled order that is a pure function of
// (seed, epoch) - the same on every run, rank and device count.
//
// The Dataset must outlive the iterator and must not change while it is used. Construction
// performs Reset(0). Not thread-safe.
class BatchIterator {
 public:
  // batch_size >= 1 (asserted). With drop_remainder, a final partial batch is skipped, so
  // every batch has exactly batch_size examples; without it the last batch holds the
  // remaining N mod batch_size examples.
  BatchIterator(const Dataset& data, int64_t batch_size, uint64_t seed, bool shuffle,
                bool drop_remainder = true);

  // Fills the next batch and returns true, or returns false (leaving both tensors untouched)
  // when the epoch is exhausted. *images becomes [b, example_shape...] (the data's dtype) and
  // *labels i32 [b] (or [b, T] for sequence labels), where b is the batch's size; tensors that
  // already have that shape and dtype are reused without reallocation. Each example is one memcpy.
  bool Next(Tensor* images, Tensor* labels);

  // Starts epoch `epoch` from its first batch. With shuffle, the order is a Fisher-Yates
  // shuffle of 0..N-1 driven by shardscope::Rng seeded from (seed, epoch); without shuffle
  // it is 0..N-1. The same (seed, epoch) always gives the same order.
  void Reset(int epoch);

  // Moves past the next `batches` batches of the epoch without filling them (resuming a
  // run from a checkpoint's data position); past the end, Next() returns false.
  void Skip(int64_t batches);

  // Batches Next() yields per epoch: N / batch_size with drop_remainder, else rounded up.
  int64_t batches_per_epoch() const;

  int64_t batch_size() const { return batch_size_; }
  int epoch() const { return epoch_; }
  // The example indices of the current epoch, in visiting order.
  const std::vector<int64_t>& order() const { return order_; }

 private:
  const Dataset* data_;
  int64_t batch_size_;
  uint64_t seed_;
  bool shuffle_;
  bool drop_remainder_;
  int epoch_ = 0;
  int64_t cursor_ = 0;  // position in order_ of the next example
  std::vector<int64_t> order_;
};

}  // namespace shardscope
