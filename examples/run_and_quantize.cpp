// octet's public C++ API in one small program:
//   octet_example MODEL.onnx
// loads the model, lists its inputs and outputs, runs it at batch 2 x seq 8 on made-up
// inputs (views of this program's vectors, not copies), then quantizes it to int8 with
// calibration samples this program produces through a CalibrationSource.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <vector>

#include <octet/octet.h>

namespace {

std::string shape_text(const std::vector<octet::Dimension>& shape) {
  std::string s;
  for (const auto& d : shape) s += (s.empty() ? "" : ",") + (d.known() ? std::to_string(d.value) : d.symbol);
  return "[" + s + "]";
}

// Inputs for one run: int64 ids 1..9 (inside any vocabulary), masks of ones, zeros for
// everything else; symbolic dims become batch x seq.
struct Inputs {
  std::vector<std::vector<int64_t>> ints;
  std::vector<std::vector<float>> floats;
  octet::NamedTensors tensors;
};

Inputs make_inputs(const std::vector<octet::TensorInfo>& infos, int64_t batch, int64_t seq, int64_t seed) {
  Inputs in;
  in.ints.reserve(infos.size());
  in.floats.reserve(infos.size());
  for (const octet::TensorInfo& info : infos) {
    std::vector<int64_t> shape;
    for (size_t i = 0; i < info.shape.size(); ++i)
      shape.push_back(info.shape[i].known() ? info.shape[i].value : i == 0 ? batch : seq);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (info.type == octet::ElementType::Int64) {
      auto& v = in.ints.emplace_back(static_cast<size_t>(n), 0);
      for (int64_t i = 0; i < n; ++i)
        v[i] = info.name.find("mask") != std::string::npos ? 1
               : info.name.find("type") != std::string::npos ? 0 : 1 + (i * 7 + seed) % 9;
      in.tensors.emplace_back(info.name, octet::Tensor::view(info.type, shape, v.data()));
    } else {
      auto& v = in.floats.emplace_back(static_cast<size_t>(n), 0.5f);
      in.tensors.emplace_back(info.name, octet::Tensor::view(octet::ElementType::Float32, shape, v.data()));
    }
  }
  return in;
}

// Four generated samples, one at a time: what a real program would read from its data.
class GeneratedSamples : public octet::CalibrationSource {
 public:
  explicit GeneratedSamples(std::vector<octet::TensorInfo> inputs) : inputs_(std::move(inputs)) {}
  bool next(octet::NamedTensors& sample) override {
    if (given_ == 4) return false;
    Inputs in = make_inputs(inputs_, 1, 8 + given_, given_);
    for (auto& [name, t] : in.tensors)  // the vectors die here: hand over copies
      sample.emplace_back(name, octet::Tensor::copy(t.type(), t.shape(), t.data()));
    ++given_;
    return true;
  }

 private:
  std::vector<octet::TensorInfo> inputs_;
  int given_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: octet_example MODEL.onnx\n";
    return 2;
  }
  try {
    octet::Session session(argv[1], {.threads = 2, .optimization_level = 2});
    for (const auto& i : session.inputs())
      std::cout << "input '" << i.name << "' " << octet::element_type_name(i.type) << shape_text(i.shape) << "\n";
    Inputs in = make_inputs(session.inputs(), 2, 8, 0);
    for (const auto& [name, t] : session.run(in.tensors))
      std::cout << "output '" << name << "' " << t.describe() << "\n";

    const std::string out = (std::filesystem::temp_directory_path() / "octet_example_int8.onnx").string();
    GeneratedSamples samples(session.inputs());
    const octet::QuantizeReport report = octet::quantize(argv[1], out, {}, &samples);
    std::cout << "quantized: " << report.layers.size() << " layers, " << report.int8_mac_share * 100
              << "% of MACs in int8, " << report.calibration_source << "\n";
    std::filesystem::remove(out);
  } catch (const octet::Error& e) {
    std::cerr << "octet_example: " << e.what() << " [file: " << e.file() << ", node: " << e.node() << "]\n";
    return 1;
  }
  return 0;
}
