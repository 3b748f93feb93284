// Calibration samples for static quantization, read one at a time.
//
// Calibration runs the float model over a few hundred samples and only keeps per-tensor
// statistics (quant/observers.h), so the reader never holds more than one sample: memory
// stays flat however many samples the folder has. Layouts, detected from what PATH holds
// (mixing two in one folder is an error, so a stray file never changes what is read):
//
//   a. a folder of .npz files, one sample per file, keys = model input names; samples in
//      natural file-name order (sample_2.npz before sample_10.npz);
//   b. a folder with one <input_name>.npy per model input whose first axis indexes
//      samples. When the .npy has the model input's rank, sample i is the slice [i:i+1]
//      (batch 1); with one more axis, sample i is a[i] (the leading axis dropped). Only
//      the header is read up front; each sample is one seek and one read per input;
//   c. ONNX test-data folders: PATH/test_data_set_*/input_*.pb, or PATH being one such
//      set. Tensors are matched to inputs as onnx/test_data.h does (by name, else by
//      number); output_*.pb files are not read;
//   d. PATH being a single .npz file: one sample.
//
// Every sample is checked against the model's inputs before it is returned: all required
// inputs present and no others (except that a decoder exported with a KV cache may leave
// out attention_mask, position_ids and past_key_values.*, filled as a first generation
// step gets them: quant/decoder_prompt.h), rank, constant dims and symbols consistent across the
// sample's inputs (as Session::run would), and the dtype. Dtype rule: an exact match, or
//   - integer -> integer (any widths, signed or not) when every value fits the model's
//     type; a value that does not fit is an error naming the file and the value;
//   - float16 / bfloat16 / float64 -> float32 by rounding to nearest (float64 values
//     beyond float32's range are an error);
// anything else (int32 data for a float32 input, float for int64 ids, bool) is an error.
// Every error names the file (and the input) it is about.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "io/npy.h"
#include "ir/dim.h"
#include "runtime/session.h"

namespace octet {
class Value;
}

namespace octet::quant {

// What the reader needs to know about one model input.
struct InputSpec {
  std::string name;
  DType dtype = DType::Float32;
  std::optional<DimVector> dims;  // nullopt: rank unknown, no shape checks

  static InputSpec of(const Value& value);
};
// Session::required_inputs() (or any graph inputs) as specs, in the same order.
std::vector<InputSpec> input_specs(const std::vector<const Value*>& values);

class CalibrationSource {
 public:
  enum class Layout { NpzFolder, NpyStacks, OnnxTestData, NpzFile };

  // Detects the layout and checks what can be checked without reading every sample:
  // the file names, every .npy header, and the first sample in full. `limit` > 0 keeps
  // only the first `limit` samples (--calib-samples).
  static CalibrationSource open(const std::string& path, const std::vector<InputSpec>& inputs,
                                size_t limit = 0);

  // Samples this source yields (after the limit); available() is before it.
  size_t size() const { return size_; }
  size_t available() const { return available_; }
  Layout layout() const { return layout_; }
  // Sample i (i < size()), its tensors in the order of the model inputs given to open().
  // Reads from disk on every call; nothing is cached.
  NamedTensors sample(size_t i) const;
  // "12 samples from a folder of .npz files 'calib/'" (with a limit: "first 8 of 12 ...").
  std::string describe() const;

 private:
  // One <input>.npy stack (layout b), in model-input order.
  struct Stack {
    std::string input;  // the model input it feeds
    std::filesystem::path file;
    NpyHeader header;
    std::vector<int64_t> sample_shape;  // one sample's shape
    size_t sample_bytes = 0;
  };

  CalibrationSource() = default;
  void open_npy_stacks(const std::vector<std::filesystem::path>& files);
  NamedTensors read_npz(const std::filesystem::path& file) const;
  NamedTensors read_stacks(size_t i) const;
  NamedTensors read_test_data_set(const std::filesystem::path& dir) const;
  // Converts and checks one sample's tensors (given in any order) and returns them in
  // model-input order; `where(name)` says which file an input came from.
  NamedTensors conform(NamedTensors given, const std::function<std::string(const std::string&)>& where) const;

  std::filesystem::path path_;
  std::vector<InputSpec> inputs_;
  Layout layout_ = Layout::NpzFile;
  bool fill_prompt_ = false;  // a with-past decoder: missing prompt-step inputs are filled
  bool one_token_ = false;    // ... that takes one new token per step: no cache may be filled
  size_t available_ = 0, size_ = 0;
  std::vector<std::filesystem::path> files_;  // .npz files or test-data-set folders
  std::vector<Stack> stacks_;
};

// Deterministic calibration / hold-out split of n samples: the last round(n * fraction)
// samples are held out when n >= 5 (at least one stays for calibration), else none are,
// and the caller evaluates on the calibration samples and says so. fraction in [0, 1).
// Returns (calibration indices, held-out indices), each ascending.
std::pair<std::vector<size_t>, std::vector<size_t>> split_holdout(size_t n, double fraction);

}  // namespace octet::quant
