// octet.QMatMul read only by static QMatMuls -> it writes their 8-bit A (y_scale,
// y_zero_point), the readers' a_channel_scale folded into its output_scale. The rewrite
// changes no number: with the reference kernels and with the optimized ones (QuantizeLinear's
// division and rounding in oneDNN's post-ops) the outputs are the same bits as the
// original graph's, at every ISA level (oneDNN's is chosen per process: child runs).
// Per-token readers (dynamic QMatMuls) instead: the producer writes its output per row
// (y_dynamic_type: u8 Y, y_scale, y_zero_point) and the outputs keep their bits too.
#include <gtest/gtest.h>

#include "int8_rewrite_test_util.h"
#include "isa_child_runs.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

struct Options {
  std::vector<int64_t> x_shape = {2, 9, 24};
  bool channel_scale = true;     // the reader has an a_channel_scale (a SmoothQuant factor)
  bool producer_scale = false;   // the producer has an output_scale (LayerScale)
  bool dynamic_producer = false; // the producer quantizes its own A per row
  DType act = DType::UInt8;      // the reader's a_zero_point type
  int readers = 1;
  // Cases that must stay:
  bool float_reader = false;     // the producer's output is also a graph output
  bool dynamic_reader = false;   // the reader quantizes per row
  // Per-token readers: every reader dynamic (no a_channel_scale), of dynamic_type
  // reader_type; mixed_types: the second one of the other type (must stay).
  bool per_token = false;
  std::string reader_type = "uint8";
  bool mixed_types = false;
  bool residual = false;         // the producer adds a residual (x's shape, so n == k)
};

std::shared_ptr<Graph> make(const Options& o) {
  PassGraph b;
  b.g->opset_imports["octet"] = 1;
  const int64_t k = o.x_shape.back(), h = 40, n = 16;
  b.input("x", DType::Float32, DimVector(o.x_shape.begin(), o.x_shape.end()));
  b.init("sa", Tensor::scalar<float>(4.0f / 255.0f));
  b.init("za", Tensor::scalar<uint8_t>(128));
  b.init("w1", testing::qmm::rand_int8({k, h}, 3));
  b.init("sb1", Tensor::scalar<float>(1.0f / (127.0f * std::sqrt(float(k)))));
  b.init("b1", testing::ramp(DType::Float32, {h}, 4, 0.5f));
  b.init("os", testing::ramp(DType::Float32, {h}, 5, 1.5f));
  b.init("sa2", Tensor::scalar<float>(2.2f / 255.0f));
  if (o.act == DType::UInt8) b.init("za2", Tensor::scalar<uint8_t>(30));
  else b.init("za2", Tensor::scalar<int8_t>(-98));
  Tensor cs(DType::Float32, {h});
  for (int64_t i = 0; i < h; ++i) cs.mutable_data<float>()[i] = 0.4f + 0.05f * static_cast<float>(i % 13);
  b.init("cs", std::move(cs));
  std::vector<std::string> p_ins = {"x", o.dynamic_producer ? "" : "sa", o.dynamic_producer ? "" : "za", "w1", "sb1",
                                    "", "b1"};
  if (o.producer_scale || o.residual) p_ins.resize(10);
  if (o.residual) p_ins[7] = "res";
  if (o.producer_scale) p_ins[9] = "os";
  if (o.residual) {
    DimVector r_dims(o.x_shape.begin(), o.x_shape.end() - 1);
    r_dims.push_back(Dim(h));
    b.input("res", DType::Float32, r_dims);
  }
  b.node("QMatMul", p_ins, {"h"}, {Attribute::make_string("activation", "gelu")}, "octet");
  for (int i = 0; i < o.readers; ++i) {
    const std::string r = "r" + std::to_string(i);
    b.init(r + "_w", testing::qmm::rand_int8({h, n}, 10 + i));
    b.init(r + "_sb", Tensor::scalar<float>(1.0f / (127.0f * std::sqrt(float(h)))));
    const bool dynamic = (o.dynamic_reader && i == 0) || o.per_token;
    std::vector<std::string> ins = {"h", dynamic ? "" : "sa2", dynamic ? "" : "za2", r + "_w", r + "_sb"};
    if (o.channel_scale) {
      ins.resize(9);
      ins[8] = "cs";
    }
    std::vector<Attribute> attrs;
    if (o.per_token)
      attrs.push_back(Attribute::make_string(
          "dynamic_type", o.mixed_types && i == 1 ? (o.reader_type == "int8" ? "uint8" : "int8") : o.reader_type));
    b.node("QMatMul", ins, {r}, attrs, "octet");
    b.output(r);
  }
  if (o.float_reader) b.output("h");
  return b.done();
}

void expect_rewrite(const Options& o) {
  auto original = make(o), fused = make(o);
  EXPECT_EQ(run_pass(*fused, passes::fuse_qmatmul_output_quantize()).passes[0].rewrites, 1);
  EXPECT_TRUE(verify_graph(*fused).empty());
  const Node* producer = nullptr;
  for (const Node* n : fused->nodes()) {
    ASSERT_EQ(n->op_type(), "QMatMul");
    if (n->input(0)->name() == "x") producer = n;
    if (o.per_token) {
      if (n == producer) {
        EXPECT_EQ(n->attr_string("y_dynamic_type", ""), o.reader_type);
        ASSERT_EQ(n->outputs().size(), 3u);
        EXPECT_EQ(n->output(0)->type.dtype, DType::UInt8);
        EXPECT_EQ(n->output(2)->type.dtype, DType::Int32);
      } else {
        ASSERT_NE(producer, nullptr);
        for (size_t i = 0; i < 3; ++i) EXPECT_EQ(n->input(i), producer->output(i)) << "reader input " << i;
      }
    } else if (n->input(0)->name() == "x") {
      EXPECT_EQ(n->output(0)->type.dtype, o.act);
      EXPECT_EQ(n->inputs().size(), 12u);
    } else {
      EXPECT_TRUE(n->inputs().size() <= 8 || n->input(8) == nullptr) << "the reader kept its a_channel_scale";
    }
  }
  NamedTensors in = {{"x", testing::ramp(DType::Float32, o.x_shape, 1, 2.0f)}};
  if (o.residual) {
    std::vector<int64_t> r_shape(o.x_shape.begin(), o.x_shape.end() - 1);
    r_shape.push_back(40);
    in.emplace_back("res", testing::ramp(DType::Float32, r_shape, 7, 1.0f));
  }
  testing::expect_rewrite_keeps_bits(original, fused, in);
}

TEST(FuseQMatMulOutputQuantize, RewritesKeepTheNumbers) {
  Options plain, no_channel, layer_scale, dynamic_p, int8, two, one_row;
  no_channel.channel_scale = false;
  layer_scale.channel_scale = false;
  layer_scale.producer_scale = true;
  dynamic_p.dynamic_producer = true;
  int8.act = DType::Int8;
  two.readers = 2;
  one_row.x_shape = {1, 1, 24};
  for (const Options& o : {plain, no_channel, layer_scale, dynamic_p, int8, two, one_row}) {
    SCOPED_TRACE("x " + shape_to_string(o.x_shape) + " readers " + std::to_string(o.readers) +
                 (o.channel_scale ? " channel" : "") + (o.producer_scale ? " producer-scale" : "") +
                 (o.dynamic_producer ? " dynamic-producer" : "") + " " + dtype_name(o.act));
    expect_rewrite(o);
  }
}

// Per-token readers: the producer's epilogue quantizes each row as the readers did, so the
// readers' outputs are the same bits (static fused producer and dynamic producer, uint8
// and int8 rows, two readers, a residual and an output_scale, one row).
TEST(FuseQMatMulOutputQuantize, PerTokenReadersKeepTheNumbers) {
  for (int v = 0; v < 8; ++v) {
    Options o;
    o.per_token = true;
    o.channel_scale = false;
    o.reader_type = v % 2 ? "int8" : "uint8";
    o.dynamic_producer = (v / 2) % 2 == 1;
    o.readers = v >= 4 ? 2 : 1;
    o.producer_scale = v == 2 || v == 7;
    o.residual = v == 3 || v == 6;
    if (v == 5) o.x_shape = {1, 1, 24};
    if (v == 6) o.x_shape = {1, 1, 24};
    SCOPED_TRACE("per-token variant " + std::to_string(v));
    expect_rewrite(o);
  }
}

TEST(FuseQMatMulOutputQuantize, RewritesKeepTheNumbersAtEveryIsa) {
  testing::expect_child_runs_pass_at_every_isa(
      "FuseQMatMulOutputQuantize.RewritesKeepTheNumbers:FuseQMatMulOutputQuantize.PerTokenReadersKeepTheNumbers",
      "fuse_qmatmul_output_quantize");
}

TEST(FuseQMatMulOutputQuantize, CasesThatMustStay) {
  Options float_reader, dynamic_reader, two_scales;
  float_reader.float_reader = true;
  dynamic_reader.dynamic_reader = true;
  two_scales.producer_scale = true;  // and the reader's a_channel_scale: two factors
  // Per-token near misses: a second float reader (a graph output), a calibrated reader
  // beside a per-token one, a reader with a_channel_scale, readers of two dynamic_types.
  Options pt_float, pt_calibrated, pt_channel, pt_mixed;
  for (Options* o : {&pt_float, &pt_calibrated, &pt_channel, &pt_mixed}) {
    o->per_token = true;
    o->channel_scale = false;
  }
  pt_float.float_reader = true;
  pt_calibrated.per_token = false;  // reader 0 dynamic, reader 1 static
  pt_calibrated.dynamic_reader = true;
  pt_calibrated.readers = 2;
  pt_channel.channel_scale = true;
  pt_mixed.readers = 2;
  pt_mixed.mixed_types = true;
  for (const Options& o : {float_reader, dynamic_reader, two_scales, pt_float, pt_calibrated, pt_channel, pt_mixed}) {
    auto g = make(o);
    EXPECT_EQ(run_pass(*g, passes::fuse_qmatmul_output_quantize()).passes[0].rewrites, 0);
    for (const Node* n : g->nodes()) EXPECT_EQ(n->output(0)->type.dtype, DType::Float32);
  }
}

}  // namespace
}  // namespace octet
