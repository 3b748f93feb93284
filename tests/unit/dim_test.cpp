#include "ir/dim.h"

#include <gtest/gtest.h>

#include "octet/error.h"

namespace octet {
namespace {

TEST(Dim, ConstantsFoldAndCompare) {
  Dim a = 3, b = 4;
  EXPECT_EQ((a + b).value(), 7);
  EXPECT_EQ((a * b).value(), 12);
  EXPECT_EQ(Dim::floor_div(7, 2).value(), 3);
  EXPECT_EQ(Dim::floor_div(-7, 2).value(), -4);  // floor, not truncation
  EXPECT_EQ(Dim::mod(-7, 2).value(), 1);
  EXPECT_THROW(Dim::floor_div(Dim::symbol("s"), 0), Error);
}

TEST(Dim, SymbolsStaySymbolic) {
  Dim seq = Dim::symbol("seq"), past = Dim::symbol("past");
  Dim total = seq + past;
  EXPECT_FALSE(total.is_constant());
  EXPECT_EQ(total.to_string(), "past + seq");
  EXPECT_EQ(total, past + seq);  // canonical: order does not matter
  EXPECT_EQ((seq * 2).to_string(), "2*seq");
  EXPECT_EQ((seq + seq), seq * 2);
  EXPECT_EQ((seq - seq).value(), 0);
  EXPECT_TRUE(seq.is_symbol());
  EXPECT_FALSE((seq * 2).is_symbol());
  EXPECT_EQ((seq - 1).to_string(), "seq - 1");
  ASSERT_NE(seq.symbol_name_ptr(), nullptr);
  EXPECT_EQ(*seq.symbol_name_ptr(), "seq");
  EXPECT_EQ((seq * 2).symbol_name_ptr(), nullptr);
  EXPECT_EQ(Dim(3).symbol_name_ptr(), nullptr);
}

TEST(Dim, ReshapeMathSimplifiesBackToSymbols) {
  Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq");
  Dim total = batch * seq * 768;               // numel of [batch, seq, 768]
  Dim rest = Dim::floor_div(total, batch * seq * 12);  // Reshape(x, [batch, seq, 12, -1])
  EXPECT_EQ(rest.value(), 64);
  EXPECT_EQ(Dim::floor_div(total, 768), batch * seq);
  EXPECT_EQ(Dim::floor_div(total, Dim(12) * 64 * batch), seq);
}

TEST(Dim, InexactDivisionIsAnOpaqueAtom) {
  Dim seq = Dim::symbol("seq");
  Dim half = Dim::floor_div(seq, 2);
  EXPECT_FALSE(half.is_constant());
  EXPECT_EQ(half.evaluate({{"seq", 7}}), 3);
  EXPECT_EQ(Dim::floor_div(seq, 2), half);  // structural equality
  EXPECT_EQ(Dim::mod(seq, 2).evaluate({{"seq", 7}}), 1);
  EXPECT_EQ((half * 2 + Dim::mod(seq, 2)).evaluate({{"seq", 9}}), 9);
}

TEST(Dim, MaxMinAreCommutativeAndFold) {
  Dim a = Dim::symbol("a"), b = Dim::symbol("b");
  EXPECT_EQ(Dim::max(a, b), Dim::max(b, a));
  EXPECT_EQ(Dim::min(a, a), a);
  EXPECT_EQ(Dim::max(3, 5).value(), 5);
  EXPECT_EQ(Dim::min(a, b).evaluate({{"a", 2}, {"b", 9}}), 2);
}

TEST(Dim, MaxMinAbsorb) {
  Dim seq = Dim::symbol("seq"), x = Dim::symbol("x");
  Dim clipped = Dim::min(seq, 128);  // a position buffer sliced to seq
  EXPECT_EQ(Dim::max(seq, clipped), seq);
  EXPECT_EQ(Dim::max(clipped, seq), seq);
  EXPECT_EQ(broadcast_dim(seq, clipped), seq);
  EXPECT_EQ(Dim::min(seq, Dim::max(seq, x)), seq);
  EXPECT_EQ(Dim::max(seq, Dim::max(x, seq)), Dim::max(seq, x));
  EXPECT_EQ(Dim::min(Dim::min(seq, x), x), Dim::min(seq, x));
  // Not an absorption: the plain dim is not an operand.
  EXPECT_NE(Dim::max(x, clipped), x);
  EXPECT_NE(Dim::max(seq * 2, clipped), seq * 2);
}

TEST(Dim, EvaluateAndSubstitute) {
  Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq");
  Dim e = batch * seq * 12 + seq;
  EXPECT_EQ(e.evaluate({{"batch", 2}, {"seq", 8}}), 200);
  EXPECT_FALSE(e.evaluate({{"batch", 2}}).has_value());
  Dim partly = e.substitute({{"batch", 2}});
  EXPECT_EQ(partly, seq * 25);
  EXPECT_EQ(e.symbols(), (std::set<std::string>{"batch", "seq"}));
  EXPECT_EQ(Dim::floor_div(seq, 2).symbols(), std::set<std::string>{"seq"});
  EXPECT_EQ(Dim::floor_div(seq, 2).substitute({{"seq", 10}}).value(), 5);
}

TEST(Dim, FreshSymbolsAreDistinctAndAnonymous) {
  Dim x = Dim::fresh(), y = Dim::fresh();
  EXPECT_NE(x, y);
  EXPECT_TRUE(Dim::is_anonymous_name(x.symbol_name()));
  EXPECT_TRUE(Dim::is_anonymous_name("unk__3"));
  EXPECT_TRUE(Dim::is_anonymous_name(""));
  EXPECT_TRUE(Dim::is_anonymous_name("DynamicDimension.0"));
  EXPECT_FALSE(Dim::is_anonymous_name("batch"));
  EXPECT_FALSE(Dim::is_anonymous_name("seq_len"));
}

TEST(Dim, BroadcastRules) {
  Dim seq = Dim::symbol("seq"), other = Dim::symbol("other");
  EXPECT_EQ(*broadcast_dim(1, seq), seq);
  EXPECT_EQ(*broadcast_dim(seq, 1), seq);
  EXPECT_EQ(*broadcast_dim(seq, seq), seq);
  EXPECT_EQ(*broadcast_dim(seq, 8), Dim(8));
  EXPECT_FALSE(broadcast_dim(3, 4).has_value());
  Dim m = *broadcast_dim(seq, other);
  EXPECT_EQ(m.evaluate({{"seq", 1}, {"other", 5}}), 5);
  auto s = broadcast_shapes({Dim::symbol("b"), 1, seq}, {seq});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(dims_to_string(*s), "[b,1,seq]");
  EXPECT_FALSE(broadcast_shapes({3}, {4}).has_value());
}

}  // namespace
}  // namespace octet
