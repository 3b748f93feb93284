// ONNX test-data folders, the layout of onnx's backend tests and onnx_test_runner:
//
//   DIR/test_data_set_0/input_0.pb, input_1.pb, ..., output_0.pb, ...
//   DIR/test_data_set_1/...
//
// Each file is one serialized TensorProto. A tensor whose name is a model input (output)
// name goes to that input (output); an unnamed one, or one whose name the model does not
// have, goes by its number: input_<i>.pb is the i-th input that is not an initializer.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace octet {

// "sample_2" < "sample_10": runs of digits compare as numbers, ties broken by the plain
// string, so file lists sort the same whatever order the directory listing gave.
bool natural_less(const std::string& a, const std::string& b);

// `dir` itself when it holds input_*.pb files, else its subfolders that do (in natural
// order: test_data_set_2 before test_data_set_10). An error when there are none.
std::vector<std::filesystem::path> find_test_data_sets(const std::filesystem::path& dir);

struct TestTensor {
  std::string name;  // the model input or output it belongs to
  std::filesystem::path file;
  Tensor tensor;
};

struct TestDataSet {
  std::filesystem::path dir;
  std::vector<TestTensor> inputs, outputs;  // outputs: the expected ones, possibly none
};

// Loads and matches one data set. Errors name the file: a number past the model's
// inputs/outputs, two files for one input, a file that is not a TensorProto.
TestDataSet load_test_data_set(const std::filesystem::path& dir, const std::vector<std::string>& input_names,
                               const std::vector<std::string>& output_names);

// Only the inputs of one data set (input_*.pb), matched as above; expected outputs are
// not read. For readers that feed a model many data sets (calibration).
std::vector<TestTensor> load_test_data_inputs(const std::filesystem::path& dir,
                                              const std::vector<std::string>& input_names);

}  // namespace octet
