// LoadTextDataset: a character-level next-token data set from any text file.
#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "shardscope/data.h"

namespace shardscope {

Result<TextDataset> LoadTextDataset(const std::string& path, int64_t sequence_length,
                                    int64_t max_vocab) {
  if (sequence_length < 1) {
    return Status::Invalid(path + ": sequence length must be at least 1, got " +
                           std::to_string(sequence_length));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open the text file (missing or unreadable)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::Io(path + ": read failed");
  const int64_t size = static_cast<int64_t>(text.size());
  if (size < sequence_length + 1) {
    return Status::Invalid(path + ": " + std::to_string(size) +
                           " bytes are too short for one sequence of " +
                           std::to_string(sequence_length) + " tokens and its next token (" +
                           std::to_string(sequence_length + 1) + " bytes)");
  }
  // The vocabulary in byte order: the same ids whatever the file's order of first use.
  std::array<int32_t, 256> id;
  id.fill(-1);
  TextDataset out;
  for (unsigned char c : text) id[c] = 0;
  for (int c = 0; c < 256; ++c) {
    if (id[c] == 0) {
      id[c] = static_cast<int32_t>(out.vocabulary.size());
      out.vocabulary.push_back(static_cast<char>(c));
    }
  }
  const int64_t vocab = static_cast<int64_t>(out.vocabulary.size());
  if (max_vocab > 0 && vocab > max_vocab) {
    return Status::Invalid(path + ": the text has " + std::to_string(vocab) +
                           " distinct bytes, more than the model's " + std::to_string(max_vocab) +
                           " token ids (its embedding and output width); make vocab_size and "
                           "the output at least " +
                           std::to_string(vocab));
  }
  // Non-overlapping windows; the targets are the inputs shifted by one byte.
  const int64_t n = (size - 1) / sequence_length;
  const int64_t test = n >= 10 ? n / 10 : 0;
  auto fill = [&](int64_t first, int64_t count, Dataset* d) {
    std::vector<int32_t> x(static_cast<size_t>(count * sequence_length)), y(x.size());
    for (int64_t i = 0; i < count * sequence_length; ++i) {
      const int64_t at = first * sequence_length + i;
      x[i] = id[static_cast<unsigned char>(text[at])];
      y[i] = id[static_cast<unsigned char>(text[at + 1])];
    }
    d->images = Tensor::FromInts({count, sequence_length}, std::move(x));
    d->labels = Tensor::FromInts({count, sequence_length}, std::move(y));
    d->num_classes = static_cast<int>(vocab);
  };
  fill(0, n - test, &out.train);
  fill(n - test, test, &out.test);
  return out;
}

}  // namespace shardscope
