// The IDX loader (MNIST / Fashion-MNIST) and the search for a data directory.
//
// Both gzip-compressed and plain IDX files are read through zlib's gz* interface (which
// passes plain files through). Pixels are inflated in blocks of about 1 MiB of whole images
// and converted while in cache, one table lookup per pixel, straight into the (possibly
// padded) float buffer that becomes the image tensor without a copy.

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/data.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr uint32_t kMaxSide = 4096;            // rows / columns above this are corrupt
constexpr int kNumClasses = 10;
// zlib's gzread takes an unsigned int length; read in chunks of this many bytes.
constexpr int64_t kChunkBytes = int64_t{16} << 20;
// Never reserve more than this ahead of the data actually arriving, so that a corrupt count
// in a header cannot make us allocate terabytes before noticing the file is short.
constexpr int64_t kMaxReserveBytes = int64_t{256} << 20;

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08X", v);
  return buf;
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// What a 4-byte IDX magic number says about the file, for error messages.
std::string DescribeMagic(uint32_t magic) {
  if (magic == kImagesMagic) return "an IDX image file";
  if (magic == kLabelsMagic) return "an IDX label file";
  if ((magic >> 16) == 0x1F8B) return "a gzip stream: the file seems to be compressed twice";
  const uint32_t type = (magic >> 8) & 0xFF;
  const uint32_t dims = magic & 0xFF;
  const bool idx_type =
      type == 0x08 || type == 0x09 || type == 0x0B || type == 0x0C || type == 0x0D || type == 0x0E;
  if ((magic >> 16) == 0 && idx_type) {
    return "an IDX file of element type 0x" + Hex32(type).substr(8) + " with " +
           std::to_string(dims) + " dimension(s), not unsigned bytes of the expected rank";
  }
  return "not an IDX file";
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

bool IsFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// The path of `name` in `dir`: "<name>.gz" if present, else "<name>", else "".
std::string FindIdxFile(const std::string& dir, const std::string& name) {
  const std::string gz = JoinPath(dir, name + ".gz");
  if (IsFile(gz)) return gz;
  const std::string plain = JoinPath(dir, name);
  if (IsFile(plain)) return plain;
  return "";
}

Result<std::string> RequireIdxFile(const std::string& dir, const std::string& name,
                                   const char* what) {
  std::string path = FindIdxFile(dir, name);
  if (!path.empty()) return path;
  if (!IsDirectory(dir)) {
    return Status::NotFound(dir + ": no such directory (looking for the " + what + " file " + name +
                            ".gz or " + name + ")");
  }
  return Status::NotFound(JoinPath(dir, name + ".gz") + ": missing " + what +
                          " file: searched directory " + dir + " for " + name + ".gz or " + name +
                          ", found neither");
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

// One open IDX file; every error message starts with its path.
class IdxReader {
 public:
  static Result<IdxReader> Open(const std::string& path) {
    errno = 0;
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) {
      const int err = errno;
      return Status::Io(path + ": cannot open: " +
                        (err != 0 ? std::strerror(err) : "zlib could not allocate its state"));
    }
    gzbuffer(f, 1 << 18);
    return IdxReader(path, GzHandle(f));
  }

  // Reads up to `n` bytes into dst and returns how many arrived (fewer only at the end of
  // the data). Sets the truncation note when the gzip stream itself ended before its
  // trailer.
  Result<int64_t> ReadInto(uint8_t* dst, int64_t n) {
    int64_t done = 0;
    while (done < n) {
      const int64_t chunk = std::min(n - done, kChunkBytes);
      const int got = gzread(file_.get(), dst + done, static_cast<unsigned>(chunk));
      if (got < 0) {
        int errnum = 0;
        std::string msg = gzerror(file_.get(), &errnum);
        if (errnum == Z_ERRNO) return Status::Io(path_ + ": read error: " + std::strerror(errno));
        // zlib prefixes its message with the path it was opened with; keep just the reason.
        if (msg.rfind(path_ + ": ", 0) == 0) msg.erase(0, path_.size() + 2);
        return Status::Io(path_ + ": corrupt gzip data: " + msg);
      }
      done += got;
      if (got < chunk) break;  // end of data
    }
    if (done < n) {
      int errnum = 0;
      gzerror(file_.get(), &errnum);
      if (errnum == Z_BUF_ERROR) stream_truncated_ = true;
    }
    return done;
  }

  // Appends up to `n` bytes to *out, growing it as data arrives (a corrupt count in a
  // header cannot make us allocate more than kMaxReserveBytes ahead of the data).
  Status Read(int64_t n, std::vector<uint8_t>* out) {
    out->reserve(out->size() + static_cast<size_t>(std::min(n, kMaxReserveBytes)));
    int64_t left = n;
    while (left > 0) {
      const int64_t chunk = std::min(left, kChunkBytes);
      const size_t old_size = out->size();
      out->resize(old_size + static_cast<size_t>(chunk));
      SHARDSCOPE_ASSIGN_OR_RETURN(int64_t got, ReadInto(out->data() + old_size, chunk));
      out->resize(old_size + static_cast<size_t>(got));
      left -= got;
      if (got < chunk) break;
    }
    return Status::Ok();
  }

  // A note for "truncated" messages when the gzip stream itself ended early (the file was
  // cut short), else "".
  std::string TruncationNote() const {
    return stream_truncated_ ? " (the gzip stream itself ends early: the file is cut short)" : "";
  }

  // Reads a header of `words` big-endian uint32 values whose first is `magic`.
  Result<std::vector<uint32_t>> ReadHeader(uint32_t magic, int words, const char* what) {
    std::vector<uint8_t> bytes;
    const int64_t want = int64_t{4} * words;
    SHARDSCOPE_RETURN_IF_ERROR(Read(want, &bytes));
    const int64_t got = static_cast<int64_t>(bytes.size());
    // A wrong magic number says more than a short header (e.g. a file of another kind).
    if (got >= 4 && BigEndian32(bytes.data()) != magic) {
      const uint32_t found = BigEndian32(bytes.data());
      return Status::Invalid(path_ + ": wrong magic number: expected " + Hex32(magic) + " (" +
                             what + "), found " + Hex32(found) + " (" + DescribeMagic(found) + ")");
    }
    if (got < want) {
      return Status::Invalid(path_ + ": truncated header: expected " + std::to_string(want) +
                             " bytes (" + what + " header), found " + std::to_string(got) +
                             TruncationNote());
    }
    std::vector<uint32_t> header(words);
    for (int i = 0; i < words; ++i) header[i] = BigEndian32(bytes.data() + 4 * i);
    return header;
  }

 private:
  IdxReader(std::string path, GzHandle file) : path_(std::move(path)), file_(std::move(file)) {}

  std::string path_;
  GzHandle file_;
  bool stream_truncated_ = false;
};

float PixelValue(int pixel, const ImageOptions& opts) {
  float x = static_cast<float>(pixel) / 255.0f;
  if (opts.normalize) x = (x - opts.mean) / opts.stddev;
  return x;
}

Status ValidateOptions(const std::string& dir, const ImageOptions& opts, int64_t limit) {
  if (limit < 0) {
    return Status::Invalid(dir + ": invalid limit " + std::to_string(limit) +
                           " (0 keeps every example, > 0 keeps the first `limit`)");
  }
  if (opts.pad_to < 0) {
    return Status::Invalid(dir + ": invalid pad_to " + std::to_string(opts.pad_to) +
                           " (0 keeps the stored size, else the padded side length)");
  }
  if (opts.normalize && !(opts.stddev > 0.0f)) {
    return Status::Invalid(dir + ": invalid normalization stddev " + std::to_string(opts.stddev) +
                           " (must be > 0)");
  }
  return Status::Ok();
}

const std::vector<std::string>& AllIdxNames() {
  static const std::vector<std::string> names = {
      IdxImagesName(Split::kTrain), IdxLabelsName(Split::kTrain), IdxImagesName(Split::kTest),
      IdxLabelsName(Split::kTest)};
  return names;
}

}  // namespace

Shape Dataset::example_shape() const {
  const Shape& s = images.shape();
  return s.empty() ? Shape{} : Shape(s.begin() + 1, s.end());
}

int64_t Dataset::example_size() const { return NumElements(example_shape()); }

float BackgroundValue(const ImageOptions& opts) { return PixelValue(0, opts); }

const char* SplitName(Split split) { return split == Split::kTrain ? "train" : "test"; }

std::string IdxImagesName(Split split) {
  return split == Split::kTrain ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte";
}

std::string IdxLabelsName(Split split) {
  return split == Split::kTrain ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte";
}

Result<Dataset> LoadIdxDataset(const std::string& dir, Split split, const ImageOptions& opts,
                               int64_t limit) {
  SHARDSCOPE_RETURN_IF_ERROR(ValidateOptions(dir, opts, limit));
  SHARDSCOPE_ASSIGN_OR_RETURN(std::string images_path,
                              RequireIdxFile(dir, IdxImagesName(split), "images"));
  SHARDSCOPE_ASSIGN_OR_RETURN(std::string labels_path,
                              RequireIdxFile(dir, IdxLabelsName(split), "labels"));

  SHARDSCOPE_ASSIGN_OR_RETURN(IdxReader images_file, IdxReader::Open(images_path));
  SHARDSCOPE_ASSIGN_OR_RETURN(IdxReader labels_file, IdxReader::Open(labels_path));
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<uint32_t> ih,
                              images_file.ReadHeader(kImagesMagic, 4, "IDX images"));
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<uint32_t> lh,
                              labels_file.ReadHeader(kLabelsMagic, 2, "IDX labels"));

  const int64_t count = ih[1];
  const int64_t rows = ih[2];
  const int64_t cols = ih[3];
  if (rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide) {
    return Status::Invalid(images_path + ": bad image dimensions " + std::to_string(rows) + "x" +
                           std::to_string(cols) + " (rows and columns must be 1.." +
                           std::to_string(kMaxSide) + ")");
  }
  if (lh[1] != ih[1]) {
    return Status::Invalid(images_path + " holds " + std::to_string(count) + " images but " +
                           labels_path + " holds " + std::to_string(lh[1]) +
                           " labels (count mismatch between images and labels)");
  }
  if (opts.pad_to != 0 && (opts.pad_to < rows || opts.pad_to < cols)) {
    return Status::Invalid(images_path + ": cannot pad " + std::to_string(rows) + "x" +
                           std::to_string(cols) + " images to " + std::to_string(opts.pad_to) +
                           "x" + std::to_string(opts.pad_to) + " (pad_to is smaller)");
  }

  const int64_t n = limit > 0 ? std::min(limit, count) : count;
  const int64_t image_bytes = rows * cols;

  // Labels first: small, and a bad label is cheaper to report before reading the pixels.
  std::vector<uint8_t> label_bytes;
  SHARDSCOPE_RETURN_IF_ERROR(labels_file.Read(n, &label_bytes));
  if (static_cast<int64_t>(label_bytes.size()) < n) {
    return Status::Invalid(labels_path + ": truncated: expected " + std::to_string(n) +
                           " bytes of labels, found " + std::to_string(label_bytes.size()) +
                           labels_file.TruncationNote());
  }
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int label = label_bytes[i];
    if (label >= kNumClasses) {
      return Status::Invalid(labels_path + ": label " + std::to_string(label) + " of example " +
                             std::to_string(i) + " is out of range 0.." +
                             std::to_string(kNumClasses - 1));
    }
    labels[i] = label;
  }

  float table[256];
  for (int p = 0; p < 256; ++p) table[p] = PixelValue(p, opts);

  const int64_t out_h = opts.pad_to > 0 ? opts.pad_to : rows;
  const int64_t out_w = opts.pad_to > 0 ? opts.pad_to : cols;
  const int64_t out_image = out_h * out_w;
  const int64_t top = (out_h - rows) / 2;
  const int64_t left = (out_w - cols) / 2;

  // Stream the pixels: inflate a block of whole images into a small buffer, then convert it
  // (one table lookup per pixel) while it is still in cache. The float buffer grows with the
  // data, so a corrupt count can only cost what the file really holds.
  const int64_t block_images = std::max<int64_t>(1, (int64_t{1} << 20) / image_bytes);
  std::vector<uint8_t> block(static_cast<size_t>(block_images * image_bytes));
  std::vector<float> values;
  values.reserve(static_cast<size_t>(
      std::min(n * out_image, kMaxReserveBytes / static_cast<int64_t>(sizeof(float)))));
  for (int64_t first = 0; first < n; first += block_images) {
    const int64_t count_here = std::min(block_images, n - first);
    const int64_t want = count_here * image_bytes;
    SHARDSCOPE_ASSIGN_OR_RETURN(int64_t got, images_file.ReadInto(block.data(), want));
    if (got < want) {
      return Status::Invalid(
          images_path + ": truncated: expected " + std::to_string(n * image_bytes) +
          " bytes of pixels (" + std::to_string(n) + " images of " + std::to_string(rows) + "x" +
          std::to_string(cols) + "), found " + std::to_string(first * image_bytes + got) +
          images_file.TruncationNote());
    }
    const size_t old_size = values.size();
    values.resize(old_size + static_cast<size_t>(count_here * out_image), table[0]);
    for (int64_t i = 0; i < count_here; ++i) {
      float* image = values.data() + old_size + i * out_image;
      const uint8_t* in = block.data() + i * image_bytes;
      for (int64_t r = 0; r < rows; ++r) {
        float* row = image + (r + top) * out_w + left;
        const uint8_t* in_row = in + r * cols;
        for (int64_t c = 0; c < cols; ++c) row[c] = table[in_row[c]];
      }
    }
  }

  Dataset ds;
  ds.num_classes = kNumClasses;
  ds.images = Tensor::FromVector({n, 1, out_h, out_w}, std::move(values));
  ds.labels = Tensor::FromInts({n}, std::move(labels));
  return ds;
}

Status CheckDataDir(const std::string& dir) {
  if (dir.empty()) return Status::NotFound("empty data directory path");
  if (!IsDirectory(dir)) {
    std::error_code ec;
    return Status::NotFound(dir +
                            (fs::exists(dir, ec) ? ": not a directory" : ": no such directory"));
  }
  std::string missing;
  for (const std::string& name : AllIdxNames()) {
    if (FindIdxFile(dir, name).empty()) missing += (missing.empty() ? "" : ", ") + name + "[.gz]";
  }
  if (missing.empty()) return Status::Ok();
  return Status::NotFound(dir + ": missing " + missing +
                          " (an MNIST-format data directory holds train-images-idx3-ubyte, "
                          "train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                          "t10k-labels-idx1-ubyte, each plain or gzip-compressed with .gz)");
}

std::vector<std::string> IdxFilePaths(const std::string& dir) {
  std::vector<std::string> paths;
  for (const std::string& name : AllIdxNames()) paths.push_back(FindIdxFile(dir, name));
  return paths;
}

std::vector<std::string> DefaultDataDirs() {
  return {"/usr/share/datasets/fashion-mnist", "/usr/share/datasets/fashion-mnist/raw"};
}

Result<std::string> ResolveDataDirFrom(const std::string& flag_value, const std::string& env_value,
                                       const std::vector<std::string>& default_dirs) {
  if (!flag_value.empty()) {
    Status st = CheckDataDir(flag_value);
    if (!st.ok()) return st.WithContext("data directory given by flag");
    return flag_value;
  }
  if (!env_value.empty()) {
    Status st = CheckDataDir(env_value);
    if (!st.ok()) return st.WithContext("data directory given by SHARDSCOPE_DATA");
    return env_value;
  }
  std::string tried = "flag: not given; SHARDSCOPE_DATA: not set";
  for (const std::string& dir : default_dirs) {
    Status st = CheckDataDir(dir);
    if (st.ok()) return dir;
    tried += "; " + st.message();
  }
  return Status::NotFound(
      "no data directory found. Tried: " + tried +
      ". Pass a directory holding the MNIST-format IDX files with the data flag, set "
      "SHARDSCOPE_DATA, or install Debian's dataset-fashion-mnist package");
}

Result<std::string> ResolveDataDir(const std::string& flag_value) {
  const char* env = std::getenv("SHARDSCOPE_DATA");
  return ResolveDataDirFrom(flag_value, env != nullptr ? env : "", DefaultDataDirs());
}

}  // namespace shardscope
