// hdf5_reader_test.cpp: HDF5 files written here with the C API, good and broken.
#include "data/hdf5_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_files.h"

namespace gradshare::data {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ScratchDir;
using testing::user_error_of;
using testing::write_h5;

// Creates `path` and lets `fill` add datasets to it.
template <typename F>
std::string make_h5(const std::string& path, F&& fill) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  fill(file);
  H5Fclose(file);
  return path;
}

TEST(Hdf5Reader, RoundTripFloatFeatures) {
  ScratchDir dir;
  const std::vector<float> features = {0.5f, -1.0f, 2.0f, 3.25f, 4.0f, 5.0f};
  const std::vector<std::int32_t> labels = {2, 0, 1};
  const std::string path = make_h5(dir.file("good.h5"), [&](hid_t file) {
    write_h5(file, "x", H5T_NATIVE_FLOAT, {3, 2}, features);
    write_h5(file, "y", H5T_NATIVE_INT32, {3}, labels);
  });
  const Dataset dataset = read_hdf5(path, "x", "y");
  EXPECT_EQ(dataset.features, features);
  EXPECT_EQ(dataset.labels, labels);
  EXPECT_EQ(dataset.sample_shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(dataset.num_classes, 0);
}

TEST(Hdf5Reader, ConvertsTypesAndShapes) {
  ScratchDir dir;
  const std::vector<std::uint8_t> pixels = {0, 255, 7, 9, 10, 11, 12, 13};
  const std::vector<double> wide = {1.5, -2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0};
  const std::vector<std::uint16_t> column_labels = {3, 1};
  const std::string path = make_h5(dir.file("types.h5"), [&](hid_t file) {
    write_h5(file, "images", H5T_NATIVE_UINT8, {2, 2, 2}, pixels);
    write_h5(file, "volumes", H5T_NATIVE_DOUBLE, {2, 2, 1, 2}, wide);
    write_h5(file, "labels", H5T_NATIVE_UINT16, {2, 1}, column_labels);
    testing::write_num_classes(file, "labels", 5);
  });
  const Dataset images = read_hdf5(path, "images", "labels");
  EXPECT_EQ(images.sample_shape, (std::vector<std::int64_t>{1, 2, 2}));
  EXPECT_EQ(images.features, std::vector<float>(pixels.begin(), pixels.end()));
  EXPECT_EQ(images.labels, (std::vector<std::int32_t>{3, 1}));
  EXPECT_EQ(images.num_classes, 5);
  const Dataset volumes = read_hdf5(path, "volumes", "labels");
  EXPECT_EQ(volumes.sample_shape, (std::vector<std::int64_t>{2, 1, 2}));
  EXPECT_EQ(volumes.features, std::vector<float>(wide.begin(), wide.end()));
}

TEST(Hdf5Reader, DatasetsInGroups) {
  ScratchDir dir;
  const std::string path = make_h5(dir.file("groups.h5"), [&](hid_t file) {
    hid_t group = H5Gcreate2(file, "train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(group);
    write_h5(file, "train/x", H5T_NATIVE_FLOAT, {1, 3}, std::vector<float>{1, 2, 3});
    write_h5(file, "train/y", H5T_NATIVE_INT64, {1}, std::vector<std::int64_t>{4});
  });
  const Dataset dataset = read_hdf5(path, "train/x", "train/y");
  EXPECT_EQ(dataset.labels, (std::vector<std::int32_t>{4}));
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "test/x", "train/y"); }),
              AllOf(HasSubstr(path + ": no dataset 'test/x' (data.features_dataset)"),
                    HasSubstr("train/x (1, 3)"), HasSubstr("train/y (1)")));
}

TEST(Hdf5Reader, BrokenFiles) {
  ScratchDir dir;
  const std::vector<float> six(6, 1.0f);
  const std::string path = make_h5(dir.file("broken.h5"), [&](hid_t file) {
    write_h5(file, "x", H5T_NATIVE_FLOAT, {3, 2}, six);
    write_h5(file, "flat", H5T_NATIVE_FLOAT, {6}, six);
    write_h5(file, "y", H5T_NATIVE_INT32, {3}, std::vector<std::int32_t>{0, 1, 2});
    write_h5(file, "y2", H5T_NATIVE_INT32, {2}, std::vector<std::int32_t>{0, 1});
    write_h5(file, "ywide", H5T_NATIVE_INT32, {3, 2}, std::vector<std::int32_t>(6, 0));
    write_h5(file, "yfloat", H5T_NATIVE_FLOAT, {3}, std::vector<float>{0, 1, 2});
    write_h5(file, "yneg", H5T_NATIVE_INT32, {3}, std::vector<std::int32_t>{0, -4, 2});
    write_h5(file, "yhuge", H5T_NATIVE_INT64, {3}, std::vector<std::int64_t>{0, 1, 1LL << 40});
    write_h5(file, "ycapped", H5T_NATIVE_INT32, {3}, std::vector<std::int32_t>{0, 1, 2});
    testing::write_num_classes(file, "ycapped", 2);
  });
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "x", "labels"); }),
              AllOf(HasSubstr(path + ": no dataset 'labels' (data.labels_dataset)"),
                    HasSubstr("x (3, 2)")));
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "flat", "y"); }),
              AllOf(HasSubstr(path + ": features dataset 'flat' has rank 1 (6)")));
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "x", "y2"); }),
              AllOf(HasSubstr(path + ": mismatched lengths"), HasSubstr("has 3 samples"),
                    HasSubstr("'y2' has 2")));
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "x", "ywide"); }),
              HasSubstr(path + ": labels dataset 'ywide' has shape (3, 2)"));
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "x", "yfloat"); }),
              HasSubstr("integer class ids"));
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "x", "yneg"); }),
              HasSubstr(path + ": dataset 'yneg': label -4 of sample 1 is out of range"));
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "x", "yhuge"); }),
              HasSubstr("label 1099511627776 of sample 2 is out of range"));
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "x", "ycapped"); }),
              AllOf(HasSubstr("label 2 of sample 2"), HasSubstr("num_classes attribute")));
}

TEST(Hdf5Reader, NotAnHdf5File) {
  ScratchDir dir;
  const std::string text = dir.file("text.h5");
  testing::write_bytes(text, {'h', 'e', 'l', 'l', 'o'}, false);
  EXPECT_EQ(user_error_of([&] { read_hdf5(text, "x", "y"); }), text + ": not an HDF5 file");
  const std::string missing = dir.file("missing.h5");
  EXPECT_EQ(user_error_of([&] { read_hdf5(missing, "x", "y"); }),
            missing + ": cannot open: no such file");
}

TEST(Hdf5Reader, TruncatedFile) {
  ScratchDir dir;
  const std::string path = make_h5(dir.file("big.h5"), [&](hid_t file) {
    write_h5(file, "x", H5T_NATIVE_FLOAT, {1000, 16}, std::vector<float>(16000, 2.0f));
    write_h5(file, "y", H5T_NATIVE_INT32, {1000}, std::vector<std::int32_t>(1000, 1));
  });
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  // Depending on where the cut falls, HDF5 fails to open the file or to read the data.
  EXPECT_THAT(user_error_of([&] { read_hdf5(path, "x", "y"); }), HasSubstr(path + ": "));
}

}  // namespace
}  // namespace gradshare::data
