// idx_reader_test.cpp: IDX files written here, good and broken, plain and gzip-compressed.
#include "data/idx_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "test_files.h"

namespace gradshare::data {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::idx_bytes;
using testing::ScratchDir;
using testing::user_error_of;
using testing::write_bytes;

std::vector<std::uint8_t> iota_bytes(std::size_t n) {
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(i * 7 + 1);
  return out;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class IdxReaderTest : public ::testing::TestWithParam<bool> {
 protected:
  bool gzip() const { return GetParam(); }
  std::string write(const std::string& name, const std::vector<std::uint8_t>& bytes) {
    const std::string path = dir_.file(name + (gzip() ? ".gz" : ""));
    write_bytes(path, bytes, gzip());
    return path;
  }
  ScratchDir dir_;
};

TEST_P(IdxReaderTest, ReadsUint8Images) {
  const auto payload = iota_bytes(3 * 2 * 4);
  const IdxArray array = read_idx(write("images", idx_bytes(0x08, {3, 2, 4}, payload)));
  EXPECT_EQ(array.type, IdxType::kUint8);
  EXPECT_EQ(array.dims, (std::vector<std::int64_t>{3, 2, 4}));
  EXPECT_EQ(array.bytes, payload);
  const std::vector<float> features = idx_to_features(array);
  ASSERT_EQ(features.size(), payload.size());
  for (std::size_t i = 0; i < payload.size(); ++i) EXPECT_EQ(features[i], payload[i]);
}

TEST_P(IdxReaderTest, ConvertsBigEndianTypes) {
  // int16 -2 and 300, int32 -70000, float32 1.5, float64 -0.25, int8 -5
  const std::string i16 = write("i16", idx_bytes(0x0B, {2}, {0xff, 0xfe, 0x01, 0x2c}));
  const std::string i32 = write("i32", idx_bytes(0x0C, {1}, {0xff, 0xfe, 0xee, 0x90}));
  const std::string f32 = write("f32", idx_bytes(0x0D, {1, 1}, {0x3f, 0xc0, 0x00, 0x00}));
  const std::string f64 = write("f64", idx_bytes(0x0E, {1, 1}, {0xbf, 0xd0, 0, 0, 0, 0, 0, 0}));
  const std::string i8 = write("i8", idx_bytes(0x09, {1}, {0xfb}));
  EXPECT_EQ(idx_to_labels(read_idx(i16), i16), (std::vector<std::int32_t>{-2, 300}));
  EXPECT_EQ(idx_to_features(read_idx(i16)), (std::vector<float>{-2.0f, 300.0f}));
  EXPECT_EQ(idx_to_labels(read_idx(i32), i32), (std::vector<std::int32_t>{-70000}));
  EXPECT_EQ(idx_to_features(read_idx(f32)), (std::vector<float>{1.5f}));
  EXPECT_EQ(idx_to_features(read_idx(f64)), (std::vector<float>{-0.25f}));
  EXPECT_EQ(idx_to_labels(read_idx(i8), i8), (std::vector<std::int32_t>{-5}));
  EXPECT_THAT(user_error_of([&] { idx_to_labels(read_idx(f32), f32); }),
              AllOf(HasSubstr(f32), HasSubstr("integer element type")));
}

TEST_P(IdxReaderTest, TruncatedPayloadNamesFileAndSizes) {
  const auto bytes = idx_bytes(0x08, {3, 2, 2}, iota_bytes(10));
  const std::string path = write("short", bytes);
  EXPECT_THAT(user_error_of([&] { read_idx(path); }),
              AllOf(HasSubstr(path + ": truncated: header says 3 images of 2x2"),
                    HasSubstr("(uint8, 12 bytes)"), HasSubstr("has 10 bytes")));
}

TEST_P(IdxReaderTest, TruncatedHeader) {
  const std::string empty = write("empty", {});
  EXPECT_THAT(user_error_of([&] { read_idx(empty); }), HasSubstr(empty + ": truncated"));
  const std::string cut = write("cut", {0, 0, 8, 3, 0, 0, 0, 3, 0, 0});
  EXPECT_THAT(user_error_of([&] { read_idx(cut); }),
              AllOf(HasSubstr(cut + ": truncated"), HasSubstr("header")));
}

TEST_P(IdxReaderTest, ExtraBytesAreASizeMismatch) {
  const std::string path = write("long", idx_bytes(0x08, {2}, iota_bytes(5)));
  EXPECT_THAT(
      user_error_of([&] { read_idx(path); }),
      AllOf(HasSubstr(path + ": size mismatch"), HasSubstr("2 labels"), HasSubstr("has 5 bytes")));
}

TEST_P(IdxReaderTest, BadMagicTypeAndDimensions) {
  const std::string magic = write("magic", {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_THAT(user_error_of([&] { read_idx(magic); }),
              AllOf(HasSubstr(magic + ": bad magic 0x01020304"), HasSubstr("not an IDX file")));
  const std::string type = write("type", idx_bytes(0x07, {1}, {0}));
  EXPECT_THAT(user_error_of([&] { read_idx(type); }),
              AllOf(HasSubstr(type), HasSubstr("unknown IDX element type")));
  const std::string no_dims = write("nodims", {0, 0, 8, 0});
  EXPECT_THAT(user_error_of([&] { read_idx(no_dims); }),
              AllOf(HasSubstr(no_dims), HasSubstr("0 dimensions")));
}

TEST_P(IdxReaderTest, DatasetShapes) {
  const std::string labels = write("labels", idx_bytes(0x08, {2}, {1, 0}));
  const std::string idx3 = write("idx3", idx_bytes(0x08, {2, 2, 3}, iota_bytes(12)));
  const std::string idx2 = write("idx2", idx_bytes(0x08, {2, 5}, iota_bytes(10)));
  const std::string idx4 = write("idx4", idx_bytes(0x08, {2, 3, 1, 2}, iota_bytes(12)));
  const Dataset d3 = read_idx_dataset(idx3, labels);
  EXPECT_EQ(d3.sample_shape, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(d3.size(), 2u);
  EXPECT_EQ(d3.sample_size(), 6u);
  EXPECT_EQ(d3.labels, (std::vector<std::int32_t>{1, 0}));
  EXPECT_EQ(d3.sample(1)[0], iota_bytes(12)[6]);
  EXPECT_EQ(read_idx_dataset(idx2, labels).sample_shape, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(read_idx_dataset(idx4, labels).sample_shape, (std::vector<std::int64_t>{3, 1, 2}));
  const std::string column = write("column", idx_bytes(0x08, {2, 1}, {1, 0}));
  EXPECT_EQ(read_idx_dataset(idx2, column).labels, (std::vector<std::int32_t>{1, 0}));
}

TEST_P(IdxReaderTest, DatasetMismatches) {
  const std::string images = write("images", idx_bytes(0x08, {3, 2, 2}, iota_bytes(12)));
  const std::string two_labels = write("two", idx_bytes(0x08, {2}, {0, 1}));
  EXPECT_THAT(user_error_of([&] { read_idx_dataset(images, two_labels); }),
              AllOf(HasSubstr(two_labels + ": mismatched lengths: 2 labels"), HasSubstr(images),
                    HasSubstr("3 samples")));
  const std::string wide = write("wide", idx_bytes(0x08, {3, 2}, iota_bytes(6)));
  EXPECT_THAT(user_error_of([&] { read_idx_dataset(images, wide); }),
              AllOf(HasSubstr(wide), HasSubstr("(N) or (N, 1)")));
  const std::string flat = write("flat", idx_bytes(0x08, {3}, {0, 1, 2}));
  EXPECT_THAT(user_error_of([&] { read_idx_dataset(flat, flat); }),
              AllOf(HasSubstr(flat), HasSubstr("at least 2 dimensions")));
  const std::string negative =
      write("negative", idx_bytes(0x0C, {3}, {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfd, 0, 0, 0, 2}));
  EXPECT_THAT(user_error_of([&] { read_idx_dataset(images, negative); }),
              AllOf(HasSubstr(negative + ": label -3 of sample 1 is out of range")));
}

INSTANTIATE_TEST_SUITE_P(PlainAndGzip, IdxReaderTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "gzip" : "plain"; });

TEST(IdxReader, MissingFile) {
  ScratchDir dir;
  const std::string path = dir.file("nothing.gz");
  EXPECT_EQ(user_error_of([&] { read_idx(path); }), path + ": cannot open: no such file");
}

TEST(IdxReader, CorruptGzipChecksum) {
  ScratchDir dir;
  const std::string path = dir.file("crc.gz");
  write_bytes(path, idx_bytes(0x08, {4, 8, 8}, iota_bytes(256)), true);
  std::vector<std::uint8_t> bytes = read_file(path);
  bytes[bytes.size() - 8] ^= 0xff;  // first byte of the CRC-32 trailer
  write_bytes(path, bytes, false);
  EXPECT_THAT(user_error_of([&] { read_idx(path); }),
              AllOf(HasSubstr(path + ": corrupt gzip data"), HasSubstr("check")));
}

TEST(IdxReader, TruncatedGzipStream) {
  ScratchDir dir;
  const std::string path = dir.file("cut.gz");
  std::vector<std::uint8_t> payload(20000);
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<std::uint8_t>(i * i >> 3);
  write_bytes(path, idx_bytes(0x08, {200, 10, 10}, payload), true);
  std::vector<std::uint8_t> bytes = read_file(path);
  bytes.resize(bytes.size() / 2);
  write_bytes(path, bytes, false);
  EXPECT_THAT(user_error_of([&] { read_idx(path); }),
              AllOf(HasSubstr(path + ": truncated: header says 200 images of 10x10"),
                    HasSubstr("(uint8, 20000 bytes)")));
}

}  // namespace
}  // namespace gradshare::data
