#include "quant/calibration_data.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>

#include "ir/graph.h"
#include "onnx/test_data.h"
#include "generate/one_token_steps.h"
#include "quant/decoder_prompt.h"
#include "quant/input_conversion.h"

namespace octet::quant {

namespace fs = std::filesystem;

namespace {

void sort_natural(std::vector<fs::path>& files) {
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return natural_less(a.filename().string(), b.filename().string());
  });
}

std::string input_list(const std::vector<InputSpec>& inputs) {
  std::string out;
  for (const InputSpec& in : inputs) out += (out.empty() ? "" : ", ") + in.name;
  return out;
}

const std::regex& input_pb_pattern() {
  static const std::regex pattern(R"(input_\d{1,6}\.pb)");
  return pattern;
}

bool holds_input_pbs(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (std::regex_match(entry.path().filename().string(), input_pb_pattern())) return true;
  return false;
}

// What a folder holds, for layout detection.
struct FolderScan {
  std::vector<fs::path> npz, npy;
  bool test_data = false;  // input_*.pb here or in a subfolder
  size_t entries = 0;
};

FolderScan scan_folder(const fs::path& dir) {
  FolderScan scan;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    ++scan.entries;
    const fs::path& p = entry.path();
    if (entry.is_directory(ec)) {
      if (holds_input_pbs(p)) scan.test_data = true;
    } else if (p.extension() == ".npz") {
      scan.npz.push_back(p);
    } else if (p.extension() == ".npy") {
      scan.npy.push_back(p);
    } else if (std::regex_match(p.filename().string(), input_pb_pattern())) {
      scan.test_data = true;
    }
  }
  if (ec) fail(dir.string(), ": cannot list (", ec.message(), ")");
  sort_natural(scan.npz);
  sort_natural(scan.npy);
  return scan;
}

}  // namespace

InputSpec InputSpec::of(const Value& value) { return {value.name(), value.type.dtype, value.type.dims}; }

std::vector<InputSpec> input_specs(const std::vector<const Value*>& values) {
  std::vector<InputSpec> out;
  for (const Value* v : values) out.push_back(InputSpec::of(*v));
  return out;
}

namespace {

// A with-past decoder that takes one new token per step (one_token_steps.h).
bool takes_one_new_token(const std::vector<InputSpec>& inputs) {
  const InputSpec *mask = nullptr, *past = nullptr;
  for (const InputSpec& in : inputs) {
    if (in.name == "attention_mask") mask = &in;
    if (in.name == "past_key_values.0.key") past = &in;
  }
  return mask && past && mask->dims && past->dims && generate::one_new_token_dims(*mask->dims, *past->dims);
}

}  // namespace

CalibrationSource CalibrationSource::open(const std::string& path, const std::vector<InputSpec>& inputs,
                                          size_t limit) {
  if (inputs.empty()) fail(path, ": the model has no inputs to calibrate with");
  CalibrationSource s;
  s.path_ = path;
  s.inputs_ = inputs;
  s.fill_prompt_ = is_with_past_decoder(inputs);
  s.one_token_ = s.fill_prompt_ && takes_one_new_token(inputs);
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) fail(path, ": no such file or folder (calibration data)");
  if (!fs::is_directory(p, ec)) {
    if (p.extension() == ".npy")
      fail(path, ": a single .npy file is not a calibration set; put one <input>.npy per model input (",
           input_list(inputs), ") in a folder, the first axis indexing samples");
    if (p.extension() != ".npz" && sniff_array_file(p) != ArrayFileKind::Npz)
      fail(path, ": not a .npz file or a folder (calibration data is a folder of .npz files, of "
           "<input>.npy stacks, of ONNX test_data_set_* folders, or one .npz file)");
    s.layout_ = Layout::NpzFile;
    s.files_ = {p};
  } else {
    const FolderScan scan = scan_folder(p);
    const int kinds = !scan.npz.empty() + !scan.npy.empty() + scan.test_data;
    if (kinds > 1)
      fail(path, ": mixes calibration layouts (", scan.npz.size(), " .npz files, ", scan.npy.size(),
           " .npy files", scan.test_data ? ", ONNX input_*.pb test data" : "", "); keep one kind per folder");
    if (kinds == 0)
      fail(path, scan.entries == 0 ? ": the folder is empty" : ": no calibration samples in the folder",
           "; expected .npz files (one sample each), one <input>.npy per model input (", input_list(inputs),
           "), or ONNX test_data_set_*/input_*.pb folders");
    if (!scan.npz.empty()) {
      s.layout_ = Layout::NpzFolder;
      s.files_ = scan.npz;
    } else if (!scan.npy.empty()) {
      s.layout_ = Layout::NpyStacks;
      s.open_npy_stacks(scan.npy);
    } else {
      s.layout_ = Layout::OnnxTestData;
      s.files_ = find_test_data_sets(p);
    }
  }
  if (s.layout_ != Layout::NpyStacks) s.available_ = s.files_.size();
  s.size_ = limit ? std::min(limit, s.available_) : s.available_;
  // The first sample in full, so a wrong folder fails here and not mid-calibration.
  if (s.size_ > 0) (void)s.sample(0);
  return s;
}

void CalibrationSource::open_npy_stacks(const std::vector<fs::path>& files) {
  std::map<std::string, fs::path> by_name;
  for (const fs::path& f : files) {
    const std::string name = f.stem().string();
    const bool known = std::any_of(inputs_.begin(), inputs_.end(), [&](const InputSpec& in) { return in.name == name; });
    if (!known)
      fail(f.string(), ": '", name, "' is not a model input (the model's inputs: ", input_list(inputs_),
           "; each .npy must be named <input>.npy)");
    by_name[name] = f;
  }
  for (const InputSpec& in : inputs_) {
    auto it = by_name.find(in.name);
    if (it == by_name.end() && fill_prompt_ && is_prompt_fillable(in.name)) continue;  // conform fills it
    if (it == by_name.end())
      fail(path_.string(), ": no ", in.name, ".npy for model input '", in.name, "' (each model input needs one: ",
           input_list(inputs_), ")");
    Stack st;
    st.input = in.name;
    st.file = it->second;
    st.header = read_npy_header(st.file);
    const std::string what = st.file.string() + ": input '" + in.name + "'";
    check_input_dtype(st.header.dtype, in.dtype, what);
    const std::vector<int64_t>& shape = st.header.shape;
    if (shape.empty())
      fail(what, ": a scalar has no sample axis (the first axis of each .npy indexes samples)");
    const int64_t rank = in.dims ? static_cast<int64_t>(in.dims->size()) : -1;
    const int64_t file_rank = static_cast<int64_t>(shape.size());
    if (rank < 0 || file_rank == rank) {
      // Samples are slices [i:i+1]: each has batch 1, which a fixed batch other than 1
      // can never accept; say how to save it instead of failing on every sample.
      if (rank > 0 && (*in.dims)[0].is_constant() && (*in.dims)[0].value() != 1)
        fail(what, ": the model's first dim is fixed at ", (*in.dims)[0].value(), " (", dims_to_string(*in.dims),
             "), so a stack of its rank cannot be cut into batch-1 samples; save it with a leading sample ",
             "axis (rank ", rank + 1, ")");
      st.sample_shape = shape;
      st.sample_shape[0] = 1;
    } else if (file_rank == rank + 1) {
      st.sample_shape.assign(shape.begin() + 1, shape.end());
    } else {
      fail(what, ": shape ", shape_to_string(shape), " has rank ", file_rank, ", but the model input is ",
           dims_to_string(*in.dims), " (rank ", rank, "); expected rank ", rank, " (samples along axis 0, batch 1 ",
           "each) or ", rank + 1, " (a leading sample axis)");
    }
    st.sample_bytes = dtype_storage_bytes(st.header.dtype, shape_numel(st.sample_shape));
    stacks_.push_back(std::move(st));
  }
  const int64_t count = stacks_.front().header.shape[0];
  for (const Stack& st : stacks_)
    if (st.header.shape[0] != count)
      fail(path_.string(), ": sample counts differ across the .npy stacks: ", stacks_.front().file.filename().string(),
           " has ", count, ", ", st.file.filename().string(), " has ", st.header.shape[0],
           " (the first axis of every stack indexes the same samples)");
  if (count == 0) fail(stacks_.front().file.string(), ": holds 0 samples (its first axis is 0)");
  available_ = static_cast<size_t>(count);
}

NamedTensors CalibrationSource::sample(size_t i) const {
  if (i >= size_) fail(path_.string(), ": calibration sample ", i, " requested, but there are ", size_);
  switch (layout_) {
    case Layout::NpzFolder:
    case Layout::NpzFile: return read_npz(files_[i]);
    case Layout::NpyStacks: return read_stacks(i);
    case Layout::OnnxTestData: return read_test_data_set(files_[i]);
  }
  OCTET_ASSERT(false, "unknown calibration layout");
  return {};
}

NamedTensors CalibrationSource::read_npz(const fs::path& file) const {
  NamedArrays arrays = octet::read_npz(file);  // its errors start with the path
  const std::string where = file.string();
  for (const auto& entry : arrays) {
    const std::string& key = entry.first;  // not a structured binding: clang 14 cannot capture one
    const bool known = std::any_of(inputs_.begin(), inputs_.end(), [&](const InputSpec& in) { return in.name == key; });
    if (!known)
      fail(where, ": array '", key, "' is not a model input (the model's inputs: ", input_list(inputs_), ")");
  }
  return conform(std::move(arrays), [&](const std::string&) { return where; });
}

NamedTensors CalibrationSource::read_stacks(size_t i) const {
  NamedTensors given;
  for (size_t k = 0; k < stacks_.size(); ++k) {
    const Stack& st = stacks_[k];
    // One seek and one read: only this sample's bytes are ever in memory.
    Tensor t = Tensor::uninitialized(st.header.dtype, st.sample_shape);
    std::ifstream in(st.file, std::ios::binary);
    const uint64_t at = st.header.data_offset + static_cast<uint64_t>(i) * st.sample_bytes;
    if (!in) fail(st.file.string(), ": cannot open");
    in.seekg(static_cast<std::streamoff>(at));
    if (st.sample_bytes && !in.read(reinterpret_cast<char*>(t.mutable_raw()), static_cast<std::streamsize>(st.sample_bytes)))
      fail(st.file.string(), ": cannot read sample ", i, " (", st.sample_bytes, " bytes at offset ", at,
           "); was the file changed after it was opened?");
    given.emplace_back(st.input, std::move(t));
  }
  return conform(std::move(given), [&](const std::string& name) {
    for (const Stack& st : stacks_)
      if (st.input == name) return st.file.string() + " (sample " + std::to_string(i) + ")";
    return path_.string() + " (sample " + std::to_string(i) + ")";
  });
}

NamedTensors CalibrationSource::read_test_data_set(const fs::path& dir) const {
  std::vector<std::string> names;
  for (const InputSpec& in : inputs_) names.push_back(in.name);
  std::vector<TestTensor> loaded = load_test_data_inputs(dir, names);  // errors name the file
  NamedTensors given;
  std::map<std::string, std::string> files;
  for (TestTensor& t : loaded) {
    files[t.name] = t.file.string();
    given.emplace_back(t.name, std::move(t.tensor));
  }
  return conform(std::move(given), [&](const std::string& name) {
    auto it = files.find(name);
    return it != files.end() ? it->second : dir.string();
  });
}

namespace {
// A NaN or Inf in a sample poisons every range it flows into; said here, the file and
// input are known, where calibration could only name the tensor it ended up in.
void check_finite(const Tensor& t, const std::string& what) {
  if (t.dtype() != DType::Float32) return;
  const float* p = t.data<float>();
  int64_t nan = 0, inf = 0, first = -1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::isfinite(p[i])) continue;
    (std::isnan(p[i]) ? nan : inf) += 1;
    if (first < 0) first = i;
  }
  if (first >= 0)
    fail(what, " holds ", nan, " NaN and ", inf, " infinite value(s) (the first at flat index ", first,
         "); calibration needs finite inputs");
}
}  // namespace

NamedTensors CalibrationSource::conform(NamedTensors given,
                                        const std::function<std::string(const std::string&)>& where) const {
  NamedTensors out;
  Bindings bindings;  // symbols must agree across the sample's inputs, as in Session::run
  std::vector<const InputSpec*> missing;
  for (const InputSpec& in : inputs_) {
    auto it = std::find_if(given.begin(), given.end(), [&](const auto& kv) { return kv.first == in.name; });
    if (it == given.end()) {
      if (!fill_prompt_ || !is_prompt_fillable(in.name)) {
        std::string have;
        for (const auto& kv : given) have += (have.empty() ? "" : ", ") + kv.first;
        fail(where(in.name), ": no data for model input '", in.name, "' (the model's inputs: ", input_list(inputs_),
             "; given: ", have.empty() ? "nothing" : have, ")",
             fill_prompt_ ? "; a decoder's samples may leave out only " + describe_prompt_fillable(inputs_) +
                                ", which are filled as a first (prompt) step gets them"
                          : "");
      }
      missing.push_back(&in);
      out.emplace_back(in.name, Tensor());  // filled below, once the given inputs bound the dims
      continue;
    }
    const std::string what = where(in.name) + ": input '" + in.name + "'";
    Tensor t = convert_input_dtype(it->second, in.dtype, what);
    if (in.dims) bind_dims(*in.dims, t.shape(), what, bindings);
    check_finite(t, what);
    out.emplace_back(in.name, std::move(t));
  }
  // A decoder's prompt-step inputs: the cache first (its dims come from the bindings
  // alone), then the mask and positions, which may bind a total-length symbol of their own.
  std::stable_sort(missing.begin(), missing.end(), [](const InputSpec* a, const InputSpec* b) {
    return is_past(a->name) > is_past(b->name);
  });
  for (const InputSpec* in : missing) {
    const std::string file = where(in->name);
    // A window through it with an empty cache is not what it computes when generating:
    // calibrating on it would round the weights for the wrong activations, silently.
    if (one_token_ && is_past(in->name))
      fail(file, ": the model declares attention_mask [batch, past + 1]: it takes one new token per step (optimum's "
           "legacy decoder_with_past_model.onnx), so a sample without the cache, run as a prompt, would not compute "
           "what it computes when generating; quantize the export's folder (decoder_model.onnx + "
           "decoder_with_past_model.onnx), which calibrates each file on the steps it runs, or give samples with the "
           "cache, or use --weights with --method rtn (no samples)");
    Tensor t = fill_prompt_input(*in, out, bindings, file);
    if (in->dims) bind_dims(*in->dims, t.shape(), file + ": input '" + in->name + "' (filled as a prompt step)", bindings);
    for (auto& kv : out)
      if (kv.first == in->name) kv.second = std::move(t);
  }
  return out;
}

std::string CalibrationSource::describe() const {
  std::string what;
  switch (layout_) {
    case Layout::NpzFolder: what = "a folder of .npz files"; break;
    case Layout::NpzFile: what = "the .npz file"; break;
    case Layout::NpyStacks: what = ".npy stacks (one per input) in"; break;
    case Layout::OnnxTestData: what = "ONNX test data sets in"; break;
  }
  std::string count = std::to_string(size_) + (size_ == 1 ? " sample" : " samples");
  if (size_ < available_) count = "first " + std::to_string(size_) + " of " + std::to_string(available_) + " samples";
  return count + " from " + what + " '" + path_.string() + "'";
}

std::pair<std::vector<size_t>, std::vector<size_t>> split_holdout(size_t n, double fraction) {
  if (!(fraction >= 0 && fraction < 1)) fail("hold-out fraction ", fraction, " must be in [0, 1)");
  size_t held = 0;
  if (n >= 5) held = std::min(n - 1, static_cast<size_t>(std::llround(static_cast<double>(n) * fraction)));
  std::pair<std::vector<size_t>, std::vector<size_t>> out;
  for (size_t i = 0; i < n; ++i) (i < n - held ? out.first : out.second).push_back(i);
  return out;
}

}  // namespace octet::quant
