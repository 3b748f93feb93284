// float32 ai.onnx Conv (1-D, 2-D and 3-D) through oneDNN's convolution primitive.
//
// Session creation takes a node when W is a float32 constant (an initializer that is not
// an overridable graph input) of rank 3 to 5 and its attributes are well formed; anything
// else stays with the reference kernel, which also reports the errors. W is reordered
// once into the layout oneDNN prefers for it (format_tag::any, asked with the input's
// static shape when the graph knows it). The state then owns W (owns_input(1)): runs never
// read the graph's copy, which the session may drop; a shape that wants plain W, or the
// reference kernel, gets a temporary copy unpacked from the packed one. Without a packed
// copy runs read the graph's W. The bias is the primitive's own (fused).
//
// Layouts: octet tensors are plain NCHW (NCW, NCDHW). oneDNN's direct kernels want
// channels-last or blocked src/dst; with plain src/dst it falls back to im2col + GEMM.
// Measured on the ViT patch embedding ([1,3,224,224] * [64,3,16,16], stride 16, one
// thread): im2col+GEMM on plain layouts 0.54 ms, brgconv on its own layouts 0.15-0.20 ms
// plus 0.05 ms reordering src and dst. So the primitive picks its layouts and the run
// reorders X in and Y out (into this thread's own scratch memory) when they differ from
// plain; a shape for which that finds no fast implementation retries with plain layouts.
// At optimizer level 2 a patch Conv read as tokens or channels-last (ViT's patch
// embedding) no longer reaches this kernel: it becomes a patch Transpose + MatMul
// (passes/rewrites/conv_patches_to_matmul.cpp), measured faster than these reorders.
//
// Primitives are created per input shape and thread count on first use and cached in the
// node's state behind a mutex (bounded like the matmul cache). A shape oneDNN cannot take
// (an empty tensor, a mismatch the reference kernel reports) runs the reference kernel.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/dnnl_common.h"
#include "kernels/kernel.h"

namespace octet::dnnl_cpu {

enum class AutoPad { NotSet, Valid, SameUpper, SameLower };

// The node's attributes, validated at session creation.
struct ConvSpec {
  int64_t spatial = 0;  // number of spatial dims (1..3)
  int64_t group = 1;
  int64_t filters = 0;         // M, W's dim 0
  int64_t group_channels = 0;  // C / group, W's dim 1
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  AutoPad auto_pad = AutoPad::NotSet;
  bool has_bias = false;
};

// One run as oneDNN sees it.
struct ConvProblem {
  dnnl::memory::dims src, wei, dst, bias;  // wei grouped ([G, M/G, C/G, k...]) when group > 1
  dnnl::memory::dims strides, dilates, pad_l, pad_r;  // dilates: ONNX dilation - 1
  std::vector<int64_t> out_shape;
};

// W as oneDNN sees it: [M, C/G, k...], or [G, M/G, C/G, k...] when group > 1 (the same
// bytes: ONNX stores the groups' filters one after another).
dnnl::memory::dims conv_weight_dims(const ConvSpec& spec);

// The problem for input shape `x` (N, C, D1..Dn), or nullopt when the shape does not fit
// the node (wrong rank or channels, an empty tensor, a kernel larger than the padded
// input): the reference kernel then runs and reports what is wrong.
std::optional<ConvProblem> conv_problem(const ConvSpec& spec, const std::vector<int64_t>& x);

// Conv/ConvTranspose attribute `name` with n entries (default `fallback`), each >= `min`;
// nullopt when malformed, and the reference kernel then reports it.
std::optional<std::vector<int64_t>> conv_attr_ints(const Node& node, const char* name, size_t n, int64_t fallback,
                                                   int64_t min);

class ConvState : public KernelState {
 public:
  // Reorders W (the node's constant input 1) into oneDNN's preferred layout.
  // Throws dnnl::error on oneDNN failures.
  ConvState(const Node& node, ConvSpec spec);

  const ConvSpec& spec() const { return spec_; }
  bool prepacked() const { return static_cast<bool>(packed_); }
  // W (input 1) when it is prepacked: runs never read the graph's copy.
  bool owns_input(size_t i) const override { return i == 1 && prepacked(); }
  // A plain copy of W ([M, C/G, k...]), unpacked from the prepacked one.
  Tensor unpack_w() const;
  int64_t primitives_created() const { return cache_.created(); }
  int64_t reference_runs() const { return reference_runs_.load(); }
  // The oneDNN implementations of the cached primitives, with their src layout.
  std::vector<std::string> implementations() const;

  struct Entry {
    dnnl::convolution_forward primitive;
    dnnl::memory::desc scratchpad, src, dst;  // src/dst: the layouts the primitive reads/writes
    std::optional<dnnl::reorder> src_in, dst_out;  // plain <-> those layouts, when they differ
    dnnl::memory::desc src_in_scratchpad, dst_out_scratchpad;
    bool uses_packed = false;
    bool usable = false;
    std::string impl;
  };
  std::shared_ptr<const Entry> primitive_for(const ConvProblem& p, int threads) const;
  void execute(const KernelContext& ctx, const ConvProblem& p, const Entry& entry, Tensor& out) const;
  void count_reference_run() const { ++reference_runs_; }

 private:
  std::shared_ptr<const Entry> create(const ConvProblem& p) const;

  ConvSpec spec_;
  dnnl::memory::dims wei_dims_;        // oneDNN's view of W (grouped when group > 1)
  std::optional<dnnl::memory> packed_;  // W in oneDNN's layout; null when plain is preferred

  PrimitiveCache<Entry> cache_;
  mutable std::atomic<int64_t> reference_runs_{0};
};

// Registers ai.onnx Conv.
void register_conv(KernelRegistry& r);
// Registers ai.onnx ConvTranspose (oneDNN deconvolution; dnnl_conv_transpose.cpp).
void register_conv_transpose(KernelRegistry& r);
// For tests, of a ConvTranspose node's state: runs that fell back to the reference kernel,
// and the oneDNN implementation of each cached primitive.
int64_t conv_transpose_reference_runs(const KernelState& state);
std::vector<std::string> conv_transpose_implementations(const KernelState& state);

}  // namespace octet::dnnl_cpu
