// Tests of the IDX loader (real MNIST / Fashion-MNIST files and crafted broken files, gzip
// and plain) and of the data directory search.

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "shardscope/data.h"

namespace shardscope {
namespace {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("shardscope_data_") + std::to_string(getpid()) + "_" +
                       (info ? std::string(info->test_suite_name()) + "_" + info->name() : "x");
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void WritePlain(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

void WriteGzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

// Whole contents of a (possibly gzip) file, decompressed.
std::vector<uint8_t> ReadAllGz(const std::string& path) {
  std::vector<uint8_t> out;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  uint8_t buf[1 << 16];
  int got;
  while ((got = gzread(f, buf, sizeof(buf))) > 0) out.insert(out.end(), buf, buf + got);
  gzclose(f);
  return out;
}

std::vector<uint8_t> ReadAllRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  out->push_back(static_cast<uint8_t>(v >> 24));
  out->push_back(static_cast<uint8_t>(v >> 16));
  out->push_back(static_cast<uint8_t>(v >> 8));
  out->push_back(static_cast<uint8_t>(v));
}

// IDX image file bytes: header then `count * rows * cols` pixels (pixel k = k % 256), of
// which only the first `pixel_bytes` are written when pixel_bytes >= 0.
std::vector<uint8_t> ImageBytes(uint32_t count, uint32_t rows, uint32_t cols,
                                int64_t pixel_bytes = -1, uint32_t magic = 0x803) {
  std::vector<uint8_t> out;
  PutU32(&out, magic);
  PutU32(&out, count);
  PutU32(&out, rows);
  PutU32(&out, cols);
  const int64_t n = pixel_bytes >= 0 ? pixel_bytes : int64_t{count} * rows * cols;
  for (int64_t k = 0; k < n; ++k) out.push_back(static_cast<uint8_t>(k % 256));
  return out;
}

// IDX label file bytes: header then the given labels.
std::vector<uint8_t> LabelBytes(uint32_t count, const std::vector<uint8_t>& labels,
                                uint32_t magic = 0x801) {
  std::vector<uint8_t> out;
  PutU32(&out, magic);
  PutU32(&out, count);
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

#define EXPECT_CONTAINS(text, part)                          \
  EXPECT_NE(std::string(text).find(part), std::string::npos) \
      << "missing \"" << (part) << "\" in: " << (text)

const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";
const std::string kFashion = std::string(SHARDSCOPE_DATASETS_DIR) + "/fashion-mnist";

ImageOptions Raw() {
  ImageOptions o;
  o.normalize = false;
  return o;
}

// ---------------------------------------------------------------- real data sets

// Load time is a benchmark figure (benchmarks/README.md), not asserted here.
TEST(IdxRealData, LoadsAllOfMnistTrain) {
  Result<Dataset> ds = LoadIdxDataset(kMnist, Split::kTrain, ImageOptions{});
  ASSERT_TRUE(ds.ok()) << ds.status().message();

  EXPECT_EQ(ds->size(), 60000);
  EXPECT_EQ(ds->num_classes, 10);
  EXPECT_EQ(ds->images.shape(), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(ds->images.dtype(), DType::kF32);
  EXPECT_EQ(ds->labels.shape(), (Shape{60000}));
  EXPECT_EQ(ds->labels.dtype(), DType::kI32);
  EXPECT_EQ(ds->labels.ints()[0], 5);

  // The published class counts of the MNIST training set.
  const int expected[10] = {5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949};
  int counts[10] = {};
  for (int64_t i = 0; i < ds->size(); ++i) {
    const int y = ds->labels.ints()[i];
    ASSERT_GE(y, 0);
    ASSERT_LT(y, 10);
    ++counts[y];
  }
  for (int c = 0; c < 10; ++c) EXPECT_EQ(counts[c], expected[c]) << "class " << c;

  // Normalised range: black maps to -mean/stddev, white to (1-mean)/stddev.
  const float* x = ds->images.data();
  const auto [lo, hi] = std::minmax_element(x, x + ds->images.size());
  EXPECT_FLOAT_EQ(*lo, (0.0f - 0.1307f) / 0.3081f);
  EXPECT_FLOAT_EQ(*hi, (1.0f - 0.1307f) / 0.3081f);
  EXPECT_FLOAT_EQ(*lo, BackgroundValue(ImageOptions{}));
  // A corner pixel of the first image is background; its centre is not.
  EXPECT_FLOAT_EQ(x[0], *lo);
  float first_sum = 0;
  for (int k = 0; k < 784; ++k) first_sum += x[k] - *lo;
  EXPECT_GT(first_sum, 10.0f);
}

TEST(IdxRealData, MnistTestSplit) {
  Result<Dataset> ds = LoadIdxDataset(kMnist, Split::kTest, ImageOptions{});
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_EQ(ds->size(), 10000);
  EXPECT_EQ(ds->images.shape(), (Shape{10000, 1, 28, 28}));
  EXPECT_EQ(ds->labels.ints()[0], 7);
  EXPECT_EQ(ds->labels.ints()[1], 2);
  EXPECT_EQ(ds->labels.ints()[2], 1);
}

TEST(IdxRealData, FashionMnist) {
  Result<Dataset> train = LoadIdxDataset(kFashion, Split::kTrain, ImageOptions{}, 1000);
  ASSERT_TRUE(train.ok()) << train.status().message();
  EXPECT_EQ(train->size(), 1000);
  EXPECT_EQ(train->labels.ints()[0], 9);  // ankle boot
  Result<Dataset> test = LoadIdxDataset(kFashion, Split::kTest, ImageOptions{});
  ASSERT_TRUE(test.ok()) << test.status().message();
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(test->labels.ints()[0], 9);  // ankle boot
}

TEST(IdxRealData, RawPixelsAreByteOver255) {
  Result<Dataset> ds = LoadIdxDataset(kMnist, Split::kTest, Raw(), 20);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  // Compare against the bytes of the file itself.
  std::vector<uint8_t> bytes = ReadAllGz(kMnist + "/t10k-images-idx3-ubyte.gz");
  ASSERT_GE(bytes.size(), 16u + 20 * 784);
  for (int64_t k = 0; k < 20 * 784; ++k) {
    ASSERT_EQ(ds->images.data()[k], static_cast<float>(bytes[16 + k]) / 255.0f) << k;
  }
  EXPECT_EQ(BackgroundValue(Raw()), 0.0f);
}

TEST(IdxRealData, LimitKeepsThePrefix) {
  Result<Dataset> all = LoadIdxDataset(kMnist, Split::kTest, ImageOptions{});
  Result<Dataset> some = LoadIdxDataset(kMnist, Split::kTest, ImageOptions{}, 123);
  ASSERT_TRUE(all.ok() && some.ok());
  EXPECT_EQ(some->size(), 123);
  EXPECT_EQ(some->images.shape(), (Shape{123, 1, 28, 28}));
  EXPECT_EQ(some->labels.shape(), (Shape{123}));
  EXPECT_EQ(0, std::memcmp(some->images.data(), all->images.data(), 123 * 784 * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(some->labels.ints(), all->labels.ints(), 123 * sizeof(int32_t)));

  // A limit beyond the count keeps everything.
  Result<Dataset> more = LoadIdxDataset(kMnist, Split::kTest, ImageOptions{}, 1000000);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->size(), 10000);
}

TEST(IdxRealData, PadTo32CentresTheImageOnBackground) {
  for (bool normalize : {true, false}) {
    ImageOptions plain;
    plain.normalize = normalize;
    ImageOptions padded = plain;
    padded.pad_to = 32;
    Result<Dataset> a = LoadIdxDataset(kMnist, Split::kTrain, plain, 50);
    Result<Dataset> b = LoadIdxDataset(kMnist, Split::kTrain, padded, 50);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(b->images.shape(), (Shape{50, 1, 32, 32}));
    const float bg = BackgroundValue(padded);
    EXPECT_FLOAT_EQ(bg, normalize ? -0.1307f / 0.3081f : 0.0f);
    for (int64_t i = 0; i < 50; ++i) {
      const float* pa = a->images.data() + i * 28 * 28;
      const float* pb = b->images.data() + i * 32 * 32;
      for (int r = 0; r < 32; ++r) {
        for (int c = 0; c < 32; ++c) {
          const bool interior = r >= 2 && r < 30 && c >= 2 && c < 30;
          if (interior) {
            ASSERT_EQ(pb[r * 32 + c], pa[(r - 2) * 28 + (c - 2)]) << i << " " << r << " " << c;
          } else {
            ASSERT_EQ(pb[r * 32 + c], bg) << i << " " << r << " " << c;
          }
        }
      }
    }
    EXPECT_EQ(0, std::memcmp(a->labels.ints(), b->labels.ints(), 50 * sizeof(int32_t)));
  }
}

TEST(IdxRealData, ReadsUncompressedFiles) {
  ScratchDir dir;
  for (const char* name : {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    WritePlain(dir.file(name), ReadAllGz(kMnist + "/" + name + ".gz"));
  }
  Result<Dataset> plain = LoadIdxDataset(dir.str(), Split::kTest, ImageOptions{});
  Result<Dataset> gz = LoadIdxDataset(kMnist, Split::kTest, ImageOptions{});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_TRUE(gz.ok());
  ASSERT_EQ(plain->images.shape(), gz->images.shape());
  EXPECT_EQ(
      0, std::memcmp(plain->images.data(), gz->images.data(), gz->images.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(plain->labels.ints(), gz->labels.ints(), 10000 * sizeof(int32_t)));
}

// ---------------------------------------------------------------- crafted files

// Writes a test-split pair into `dir`, gzip-compressed or plain.
void WritePair(const ScratchDir& dir, bool gzip, const std::vector<uint8_t>& images,
               const std::vector<uint8_t>& labels) {
  const std::string suffix = gzip ? ".gz" : "";
  auto write = gzip ? WriteGzip : WritePlain;
  write(dir.file("t10k-images-idx3-ubyte" + suffix), images);
  write(dir.file("t10k-labels-idx1-ubyte" + suffix), labels);
}

class IdxCrafted : public ::testing::TestWithParam<bool> {
 protected:
  bool gzip() const { return GetParam(); }
  std::string images_path() const {
    return dir_.file(std::string("t10k-images-idx3-ubyte") + (gzip() ? ".gz" : ""));
  }
  std::string labels_path() const {
    return dir_.file(std::string("t10k-labels-idx1-ubyte") + (gzip() ? ".gz" : ""));
  }
  Result<Dataset> Load(const ImageOptions& opts = Raw(), int64_t limit = 0) {
    return LoadIdxDataset(dir_.str(), Split::kTest, opts, limit);
  }
  ScratchDir dir_;
};

INSTANTIATE_TEST_SUITE_P(GzipAndPlain, IdxCrafted, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Gzip") : std::string("Plain");
                         });

TEST_P(IdxCrafted, ValidSmallFile) {
  WritePair(dir_, gzip(), ImageBytes(3, 2, 4), LabelBytes(3, {0, 9, 4}));
  Result<Dataset> ds = Load();
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_EQ(ds->images.shape(), (Shape{3, 1, 2, 4}));
  for (int k = 0; k < 24; ++k) EXPECT_EQ(ds->images.data()[k], static_cast<float>(k) / 255.0f);
  EXPECT_EQ(ds->labels.ints()[1], 9);

  // Non-square images pad centred on both axes (2x4 -> 6x6: top 2, left 1).
  ImageOptions pad = Raw();
  pad.pad_to = 6;
  Result<Dataset> padded = Load(pad);
  ASSERT_TRUE(padded.ok()) << padded.status().message();
  EXPECT_EQ(padded->images.shape(), (Shape{3, 1, 6, 6}));
  EXPECT_EQ(padded->images.data()[2 * 6 + 1], 0.0f / 255.0f);
  EXPECT_EQ(padded->images.data()[2 * 6 + 2], 1.0f / 255.0f);
  EXPECT_EQ(padded->images.data()[3 * 6 + 4], 7.0f / 255.0f);
  EXPECT_EQ(padded->images.data()[3 * 6 + 5], 0.0f);
}

TEST_P(IdxCrafted, EmptyDataSet) {
  WritePair(dir_, gzip(), ImageBytes(0, 28, 28), LabelBytes(0, {}));
  Result<Dataset> ds = Load();
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_EQ(ds->size(), 0);
  EXPECT_EQ(ds->images.shape(), (Shape{0, 1, 28, 28}));
}

TEST_P(IdxCrafted, WrongImageMagic) {
  // A label file where the image file should be.
  WritePair(dir_, gzip(), LabelBytes(3, {1, 2, 3}), LabelBytes(3, {1, 2, 3}));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidInput);
  const std::string& m = ds.status().message();
  EXPECT_CONTAINS(m, images_path());
  EXPECT_CONTAINS(m, "wrong magic");
  EXPECT_CONTAINS(m, "expected 0x00000803");
  EXPECT_CONTAINS(m, "found 0x00000801");
  EXPECT_CONTAINS(m, "label file");
}

TEST_P(IdxCrafted, WrongLabelMagic) {
  WritePair(dir_, gzip(), ImageBytes(3, 2, 2), LabelBytes(3, {1, 2, 3}, 0xDEADBEEF));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  const std::string& m = ds.status().message();
  EXPECT_CONTAINS(m, labels_path());
  EXPECT_CONTAINS(m, "expected 0x00000801");
  EXPECT_CONTAINS(m, "found 0xDEADBEEF");
}

TEST_P(IdxCrafted, TruncatedPixels) {
  // 2 images of 28x28 announced (1568 bytes), 1000 present.
  WritePair(dir_, gzip(), ImageBytes(2, 28, 28, 1000), LabelBytes(2, {1, 2}));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidInput);
  const std::string& m = ds.status().message();
  EXPECT_CONTAINS(m, images_path());
  EXPECT_CONTAINS(m, "truncated");
  EXPECT_CONTAINS(m, "expected 1568 bytes of pixels");
  EXPECT_CONTAINS(m, "found 1000");

  // With a limit that the present bytes cover, the prefix loads.
  Result<Dataset> one = Load(Raw(), 1);
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->size(), 1);
}

TEST_P(IdxCrafted, TruncatedLabels) {
  WritePair(dir_, gzip(), ImageBytes(5, 2, 2), LabelBytes(5, {1, 2, 3}));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  const std::string& m = ds.status().message();
  EXPECT_CONTAINS(m, labels_path());
  EXPECT_CONTAINS(m, "expected 5 bytes of labels, found 3");
}

TEST_P(IdxCrafted, TruncatedHeader) {
  std::vector<uint8_t> images = ImageBytes(3, 28, 28);
  images.resize(10);  // magic, count, half of rows
  WritePair(dir_, gzip(), images, LabelBytes(3, {1, 2, 3}));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  const std::string& m = ds.status().message();
  EXPECT_CONTAINS(m, images_path());
  EXPECT_CONTAINS(m, "truncated header");
  EXPECT_CONTAINS(m, "expected 16 bytes");
  EXPECT_CONTAINS(m, "found 10");

  // An empty labels file is a truncated header too.
  WritePair(dir_, gzip(), ImageBytes(3, 2, 2), {});
  ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), labels_path());
  EXPECT_CONTAINS(ds.status().message(), "expected 8 bytes");
  EXPECT_CONTAINS(ds.status().message(), "found 0");
}

TEST_P(IdxCrafted, CountMismatch) {
  WritePair(dir_, gzip(), ImageBytes(3, 2, 2), LabelBytes(4, {1, 2, 3, 4}));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  const std::string& m = ds.status().message();
  EXPECT_CONTAINS(m, images_path());
  EXPECT_CONTAINS(m, labels_path());
  EXPECT_CONTAINS(m, "3 images");
  EXPECT_CONTAINS(m, "4 labels");
  EXPECT_CONTAINS(m, "count mismatch");
  // Also with a limit: the files disagree whatever we keep.
  EXPECT_FALSE(Load(Raw(), 1).ok());
}

TEST_P(IdxCrafted, LabelOutOfRange) {
  WritePair(dir_, gzip(), ImageBytes(4, 2, 2), LabelBytes(4, {0, 9, 10, 3}));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  const std::string& m = ds.status().message();
  EXPECT_CONTAINS(m, labels_path());
  EXPECT_CONTAINS(m, "label 10 of example 2");
  EXPECT_CONTAINS(m, "out of range 0..9");
  // The first two examples are fine.
  EXPECT_TRUE(Load(Raw(), 2).ok());
}

TEST_P(IdxCrafted, BadDimensions) {
  WritePair(dir_, gzip(), ImageBytes(3, 0, 28), LabelBytes(3, {1, 2, 3}));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), images_path());
  EXPECT_CONTAINS(ds.status().message(), "bad image dimensions 0x28");

  WritePair(dir_, gzip(), ImageBytes(3, 28, 100000, 0), LabelBytes(3, {1, 2, 3}));
  ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), "bad image dimensions 28x100000");
}

TEST_P(IdxCrafted, HugeCountInCorruptHeaderIsTruncationNotCrash) {
  WritePair(dir_, gzip(), ImageBytes(0xFFFFFFFFu, 28, 28, 784), LabelBytes(0xFFFFFFFFu, {1}));
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), "truncated");
}

TEST_P(IdxCrafted, BadOptions) {
  WritePair(dir_, gzip(), ImageBytes(3, 28, 28), LabelBytes(3, {1, 2, 3}));
  ImageOptions small = Raw();
  small.pad_to = 20;
  Result<Dataset> ds = Load(small);
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), "cannot pad 28x28 images to 20x20");
  EXPECT_FALSE(Load(Raw(), -1).ok());
  ImageOptions zero_std;
  zero_std.stddev = 0;
  EXPECT_FALSE(Load(zero_std).ok());
}

TEST_P(IdxCrafted, MissingFile) {
  WritePair(dir_, gzip(), ImageBytes(3, 2, 2), LabelBytes(3, {1, 2, 3}));
  std::filesystem::remove(labels_path());
  Result<Dataset> ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kNotFound);
  const std::string& m = ds.status().message();
  EXPECT_CONTAINS(m, "searched directory " + dir_.str());
  EXPECT_CONTAINS(m, "t10k-labels-idx1-ubyte.gz or t10k-labels-idx1-ubyte");
  EXPECT_CONTAINS(m, "labels file");

  // The train split is entirely absent from this directory.
  ds = LoadIdxDataset(dir_.str(), Split::kTrain, Raw());
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), "train-images-idx3-ubyte");

  ds = LoadIdxDataset(dir_.file("nope"), Split::kTest, Raw());
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), dir_.file("nope") + ": no such directory");
}

TEST(IdxCorruptGzip, StreamCutShort) {
  ScratchDir dir;
  WriteGzip(dir.file("t10k-images-idx3-ubyte.gz"), ImageBytes(50, 28, 28));
  WriteGzip(dir.file("t10k-labels-idx1-ubyte.gz"), LabelBytes(50, std::vector<uint8_t>(50, 1)));
  std::vector<uint8_t> gz = ReadAllRaw(dir.file("t10k-images-idx3-ubyte.gz"));
  ASSERT_GT(gz.size(), 100u);
  gz.resize(gz.size() / 2);
  WritePlain(dir.file("t10k-images-idx3-ubyte.gz"), gz);
  Result<Dataset> ds = LoadIdxDataset(dir.str(), Split::kTest, Raw());
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), dir.file("t10k-images-idx3-ubyte.gz"));
  EXPECT_CONTAINS(ds.status().message(), "truncated");
  EXPECT_CONTAINS(ds.status().message(), "expected 39200 bytes of pixels");
  EXPECT_CONTAINS(ds.status().message(), "gzip stream itself ends early");
}

TEST(IdxCorruptGzip, GarbledData) {
  ScratchDir dir;
  std::vector<uint8_t> pixels = ImageBytes(50, 28, 28);
  for (size_t k = 16; k < pixels.size(); ++k) pixels[k] = static_cast<uint8_t>((k * 7919) >> 3);
  WriteGzip(dir.file("t10k-images-idx3-ubyte.gz"), pixels);
  WriteGzip(dir.file("t10k-labels-idx1-ubyte.gz"), LabelBytes(50, std::vector<uint8_t>(50, 1)));
  std::vector<uint8_t> gz = ReadAllRaw(dir.file("t10k-images-idx3-ubyte.gz"));
  for (size_t k = gz.size() / 2; k < gz.size() / 2 + 64; ++k) gz[k] ^= 0x5A;
  WritePlain(dir.file("t10k-images-idx3-ubyte.gz"), gz);
  Result<Dataset> ds = LoadIdxDataset(dir.str(), Split::kTest, Raw());
  ASSERT_FALSE(ds.ok());
  EXPECT_CONTAINS(ds.status().message(), dir.file("t10k-images-idx3-ubyte.gz"));
  EXPECT_EQ(ds.status().code(), StatusCode::kIoError);
  EXPECT_CONTAINS(ds.status().message(), "corrupt gzip data: ");
}

TEST(IdxFiles, PrefersGzipWhenBothFormsExist) {
  ScratchDir dir;
  WriteGzip(dir.file("t10k-images-idx3-ubyte.gz"), ImageBytes(2, 2, 2));
  WriteGzip(dir.file("t10k-labels-idx1-ubyte.gz"), LabelBytes(2, {1, 1}));
  WritePlain(dir.file("t10k-images-idx3-ubyte"), ImageBytes(3, 2, 2));
  WritePlain(dir.file("t10k-labels-idx1-ubyte"), LabelBytes(3, {2, 2, 2}));
  Result<Dataset> ds = LoadIdxDataset(dir.str(), Split::kTest, Raw());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_EQ(ds->size(), 2);
  EXPECT_EQ(ds->labels.ints()[0], 1);
}

// ---------------------------------------------------------------- data directory search

void WriteAllFour(const ScratchDir& dir, const std::string& sub = "") {
  std::filesystem::create_directories(dir.file(sub));
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    WritePlain(dir.file(sub.empty() ? name : sub + "/" + name), {0});
  }
}

TEST(DataDir, CheckAcceptsTheSharedDataSets) {
  EXPECT_TRUE(CheckDataDir(kMnist).ok());
  EXPECT_TRUE(CheckDataDir(kFashion).ok());
}

TEST(DataDir, CheckListsWhatIsMissing) {
  ScratchDir dir;
  WritePlain(dir.file("train-images-idx3-ubyte"), {0});
  WriteGzip(dir.file("t10k-images-idx3-ubyte.gz"), {0});
  Status st = CheckDataDir(dir.str());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(st.message(), dir.str());
  EXPECT_CONTAINS(st.message(),
                  "missing train-labels-idx1-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]");
  EXPECT_EQ(st.message().find("missing train-images"), std::string::npos);

  EXPECT_CONTAINS(CheckDataDir(dir.file("absent")).message(), "no such directory");
  EXPECT_CONTAINS(CheckDataDir(dir.file("train-images-idx3-ubyte")).message(), "not a directory");
}

TEST(DataDir, FlagComesFirst) {
  ScratchDir env;
  WriteAllFour(env);
  Result<std::string> r = ResolveDataDirFrom(kMnist, env.str(), {kFashion});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, kMnist);
}

TEST(DataDir, BadFlagIsAnErrorNotAFallback) {
  ScratchDir dir;
  Result<std::string> r = ResolveDataDirFrom(dir.str(), kMnist, {kFashion});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "flag");
  EXPECT_CONTAINS(r.status().message(), dir.str());
  EXPECT_CONTAINS(r.status().message(), "train-images-idx3-ubyte[.gz]");
}

TEST(DataDir, EnvironmentIsSecond) {
  ScratchDir env;
  WriteAllFour(env);
  Result<std::string> r = ResolveDataDirFrom("", env.str(), {kFashion});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, env.str());

  Result<std::string> bad = ResolveDataDirFrom("", env.file("absent"), {kFashion});
  ASSERT_FALSE(bad.ok());
  EXPECT_CONTAINS(bad.status().message(), "SHARDSCOPE_DATA");
  EXPECT_CONTAINS(bad.status().message(), env.file("absent"));
}

TEST(DataDir, DefaultsInOrderIncludingSubdirectory) {
  ScratchDir root;
  WriteAllFour(root, "raw");
  Result<std::string> r = ResolveDataDirFrom("", "", {root.str(), root.file("raw"), kFashion});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, root.file("raw"));
}

TEST(DataDir, NothingFoundListsEverythingTried) {
  ScratchDir root;
  Result<std::string> r = ResolveDataDirFrom("", "", {root.str(), root.file("raw")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  const std::string& m = r.status().message();
  EXPECT_CONTAINS(m, "flag: not given");
  EXPECT_CONTAINS(m, "SHARDSCOPE_DATA: not set");
  EXPECT_CONTAINS(m, root.str() + ": missing");
  EXPECT_CONTAINS(m, root.file("raw") + ": no such directory");
  EXPECT_CONTAINS(m, "dataset-fashion-mnist");
}

TEST(DataDir, ResolveReadsTheEnvironment) {
  EXPECT_EQ(DefaultDataDirs().front(), "/usr/share/datasets/fashion-mnist");
  const char* old = std::getenv("SHARDSCOPE_DATA");
  const std::string saved = old ? old : "";
  ASSERT_EQ(setenv("SHARDSCOPE_DATA", kFashion.c_str(), 1), 0);
  Result<std::string> r = ResolveDataDir("");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, kFashion);
  Result<std::string> flag = ResolveDataDir(kMnist);
  ASSERT_TRUE(flag.ok());
  EXPECT_EQ(*flag, kMnist);
  if (old) {
    setenv("SHARDSCOPE_DATA", saved.c_str(), 1);
  } else {
    unsetenv("SHARDSCOPE_DATA");
  }
}

}  // namespace
}  // namespace shardscope
