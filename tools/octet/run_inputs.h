// Where `octet run` gets its inputs: files named by --input (.npy, .npz, ONNX TensorProto
// .pb) and --random for the rest, each checked against the model's declared input types
// with errors that name the file.
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/dim.h"
#include "runtime/session.h"

namespace octet::cli {

struct RunInput {
  std::string name;
  Tensor tensor;
  std::string source;                 // "file a.npy", "random: normal(0, 1)"
  std::filesystem::path file;         // empty for generated inputs
};

// Reads every --input item ("NAME=FILE", or "FILE" for an .npz keyed by input names or a
// model with one input).
std::vector<RunInput> load_input_files(const Session& session, const std::vector<std::string>& items);

// Checks dtype and rank and binds the input's symbols into `bindings`, naming `source` in
// errors: a dtype, rank or fixed dim that differs, a symbol two inputs bind differently,
// or one that differs from what --dim asked for (`requested`).
void check_input(const Session& session, const RunInput& input, Bindings& bindings,
                 const Bindings& requested = {});

// `--dim NAME=N` items either bind a symbol of the inputs (`seq=128`) or one axis of one
// input (`input_ids:1=128`, for dims the model leaves anonymous). Splits the two and
// checks that each names something the model has.
struct DimRequests {
  Bindings symbols;
  std::vector<std::tuple<std::string, size_t, int64_t>> axes;  // input, axis, value
};
DimRequests split_dim_requests(const Session& session, const Bindings& requested);
// The same against a graph before any Session exists (optimize and bench split --dim
// before they specialize and optimize the graph).
DimRequests split_dim_requests(const Graph& graph, const Bindings& requested);

// Makes every required input that `given` lacks, or fails listing them (without --random).
std::vector<RunInput> make_missing_inputs(const Session& session, const std::vector<RunInput>& given,
                                          bool random, const DimRequests& dims, Bindings& bindings,
                                          uint64_t seed);

}  // namespace octet::cli
