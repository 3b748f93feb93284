// gather_quantized_rows: Gather(DequantizeLinear(int8 table), ids) dequantizes only the
// gathered rows, with results equal bit for bit to dequantizing the whole table.
#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

constexpr int64_t kRows = 7, kWidth = 5;

Tensor table_values(DType t) {
  Tensor out(t, {kRows, kWidth});
  for (int64_t i = 0; i < out.numel(); ++i) {
    const int v = static_cast<int>((i * 37) % 255) - (t == DType::Int8 ? 127 : 0);
    out.mutable_raw()[i] = static_cast<uint8_t>(v);
  }
  return out;
}

struct TableSpec {
  DType dtype = DType::Int8;
  bool per_row = true;       // one scale per slice along dq_axis, else one scale
  bool zero_points = false;  // non-zero zero points, else an all-zero zero-point input
  int64_t dq_axis = 0;       // 1: one scale per column
  int64_t gather_axis = 0;
};

std::shared_ptr<Graph> make(const TableSpec& s) {
  PassGraph b;
  b.input("ids", DType::Int64, {Dim(2), Dim(3)});
  b.init("table", table_values(s.dtype));
  const int64_t n = s.per_row ? (s.dq_axis == 0 ? kRows : kWidth) : 1;
  std::vector<float> scales;
  for (int64_t i = 0; i < n; ++i) scales.push_back(0.013f * static_cast<float>(i + 1) + 0.0071f);
  Tensor zp(s.dtype, s.per_row ? std::vector<int64_t>{n} : std::vector<int64_t>{});
  for (int64_t i = 0; i < n; ++i) zp.mutable_raw()[i] = s.zero_points ? static_cast<uint8_t>(3 * i + 1) : 0;
  b.init("scale", s.per_row ? Tensor::from_vector<float>({n}, scales) : Tensor::scalar<float>(scales[0]));
  b.init("zp", std::move(zp));
  b.node("DequantizeLinear", {"table", "scale", "zp"}, {"dq"}, {Attribute::make_int("axis", s.dq_axis)});
  b.node("Gather", {"dq", "ids"}, {"y"}, {Attribute::make_int("axis", s.gather_axis)});
  b.output("y");
  return b.done();
}

NamedTensors ids_input() {
  // Negative ids count from the end, as Gather defines; the rewrite must agree.
  return {{"ids", Tensor::from_vector<int64_t>({2, 3}, {0, 6, 3, -1, 2, -7})}};
}

NamedTensors ids_input_for_axis1() {
  return {{"ids", Tensor::from_vector<int64_t>({2, 3}, {0, 4, 3, -1, 2, 1})}};
}

void expect_rewritten_exactly(const TableSpec& spec, bool subtracts) {
  auto g = testing::rewrite_and_compare([&] { return make(spec); }, passes::gather_quantized_rows(), ids_input(),
                                        /*tolerance=*/0.0);
  EXPECT_EQ(count_ops(*g, "Mul"), 1);
  EXPECT_EQ(count_ops(*g, "Sub"), subtracts ? 1 : 0);
  // The table's Gather now reads the int8 table itself.
  for (const Node* n : g->nodes()) {
    if (n->op_type() == "Gather") {
      EXPECT_NE(n->input(0)->name(), "dq");
    }
  }
}

TEST(GatherQuantizedRows, PerRowInt8TableWithZeroZeroPoints) {
  expect_rewritten_exactly({DType::Int8, true, false}, /*subtracts=*/false);
}

TEST(GatherQuantizedRows, PerRowUint8TableWithZeroPoints) {
  expect_rewritten_exactly({DType::UInt8, true, true}, /*subtracts=*/true);
}

TEST(GatherQuantizedRows, PerTensorScaleAndZeroPoint) {
  expect_rewritten_exactly({DType::UInt8, false, true}, /*subtracts=*/true);
  expect_rewritten_exactly({DType::Int8, false, false}, /*subtracts=*/false);
}

TEST(GatherQuantizedRows, LeavesOtherLayoutsAlone) {
  // Per-column scales (DQ axis 1) are not per row: the ids cannot select them.
  auto columns = make(TableSpec{DType::Int8, true, false, /*dq_axis=*/1});
  run_pass(*columns, passes::gather_quantized_rows());
  EXPECT_EQ(count_ops(*columns, "Mul"), 0);
  EXPECT_EQ(testing::run_graph(columns, ids_input()).size(), 1u);
  // A Gather on axis 1 is not a row lookup.
  auto across = make(TableSpec{DType::Int8, false, false, 0, /*gather_axis=*/1});
  run_pass(*across, passes::gather_quantized_rows());
  EXPECT_EQ(count_ops(*across, "Mul"), 0);
  EXPECT_EQ(testing::run_graph(across, ids_input_for_axis1()).size(), 1u);
}

// Through the whole level-2 pipeline, with a table too large to fold: no DequantizeLinear
// is left to run over the whole table, and the outputs are unchanged.
TEST(GatherQuantizedRows, OptimizerDequantizesOnlyGatheredRows) {
  auto original = make({DType::Int8, true, true});
  auto optimized = make({DType::Int8, true, true});
  OptimizeOptions options;
  options.fold_max_bytes = 16;  // the 140-byte float table does not fit: not folded
  optimize(*optimized, options);
  EXPECT_EQ(count_ops(*optimized, "DequantizeLinear"), 0);
  EXPECT_EQ(testing::max_relative_error(testing::run_graph(optimized, ids_input()),
                                        testing::run_graph(original, ids_input())),
            0.0);
}

}  // namespace
}  // namespace octet
