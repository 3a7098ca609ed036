// Tests for core/onnx's folds: a BatchNormalization folded into the
// convolution or the product before it (fuse.cpp), and constant folding of
// Mod, Transpose and ScatterND (fold.cpp, the attention mask a Swin
// Transformer builds), checked on the folded constants and on what is left
// unfolded.
#include "tests/unit/onnx_model.hpp"

namespace {

// A batch norm of 2 channels from `in` to `out`: s = scale / sqrt(var +
// epsilon) = [4 / 2, 3 / 3] = [2, 1], shift = B - mean * s = [0, -2].
void batchnorm(Model& m, const std::string& in, const std::string& out) {
  m.floats("scale", {2}, {4, 3}).floats("shift", {2}, {1, -1});
  m.floats("mean", {2}, {0.5f, 1}).floats("var", {2}, {3, 8});
  setFloat(m.node("BatchNormalization", {in, "scale", "shift", "mean", "var"}, {out}, "bn"),
           "epsilon", 1.0f);
}

} // namespace

TEST_CASE("a BatchNormalization after a convolution of constant weights folds into it", "[onnx]") {
  // s = scale / sqrt(var + epsilon) = [4 / 2, 3 / 3]; w' = w * s per output
  // channel, b' = (b - mean) * s + B.
  Model conv;
  conv.input("x", {1, 2, 3, 3}).floats("w", {2, 2, 1, 1}, {1, 2, 3, 4});
  conv.floats("b", {2}, {0.5f, -0.5f});
  conv.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  batchnorm(conv, "c", "y");
  conv.output("y");
  const ImportResult r = conv.import();
  CHECK(kernelsOf(r) == std::vector<std::string>{"conv:conv2d"});
  CHECK(op(r, 0).at("outputs").at("result") == "y");
  CHECK(r.folded == 1);
  CHECK(floatConstant(r, "w/folded_bn") ==
        std::pair{std::vector<std::int64_t>{2, 2, 1, 1}, std::vector<float>{2, 4, 3, 4}});
  CHECK(floatConstant(r, "w/folded_bn/bias").second == std::vector<float>{1, -2.5f});

  // A depthwise ConvTranspose, without bias: its weight [C, O/g, ...] scaled
  // along the output channel of each group (then flipped, as any weight of a
  // stride-1 ConvTranspose).
  Model up;
  up.input("x", {1, 2, 2, 2}).floats("w", {2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  setInt(up.node("ConvTranspose", {"x", "w"}, {"c"}, "up"), "group", 2);
  batchnorm(up, "c", "y");
  up.output("y");
  const ImportResult ru = up.import();
  CHECK(kernelsOf(ru) == std::vector<std::string>{"up:conv2d"});
  CHECK(floatConstant(ru, "w/folded_bn/flipped").second ==
        std::vector<float>{8, 6, 4, 2, 8, 7, 6, 5});
  CHECK(floatConstant(ru, "w/folded_bn/bias").second == std::vector<float>{0, -2});

  // Not folded: the convolution's result is read by something else too (here
  // a graph output), or the batch norm's parameters are not constants.
  Model shared = conv;
  shared.output("c");
  CHECK(kernelsOf(shared.import()) == std::vector<std::string>{"conv:conv2d", "bn:batchnorm"});
  Model varying;
  varying.input("x", {1, 2, 3, 3}).input("scale", {2}).floats("w", {2, 2, 1, 1}, {1, 2, 3, 4});
  varying.floats("shift", {2}, {1, -1}).floats("mean", {2}, {0.5f, 1}).floats("var", {2}, {3, 8});
  varying.node("Conv", {"x", "w"}, {"c"}, "conv");
  varying.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, "bn");
  varying.output("y");
  CHECK(kernelsOf(varying.import()) == std::vector<std::string>{"conv:conv2d", "bn:batchnorm"});
}

TEST_CASE("a BatchNormalization after a product of a constant weight folds into it", "[onnx]") {
  // s = [4 / 2, 3 / 3] = [2, 1], shift = B - mean * s = [0, -2]: B' = B * s
  // per column of the result, C' = beta * C * s + shift, beta 1.
  // A Gemm of transB 1 (as nn.Linear exports): the weight's rows are the
  // result's columns.
  Model gemm;
  gemm.input("x", {3, 2}).floats("w", {2, 2}, {1, 2, 3, 4}).floats("c", {2}, {0.5f, -0.5f});
  auto& fc = gemm.node("Gemm", {"x", "w", "c"}, {"h"}, "fc");
  setInt(fc, "transB", 1);
  setFloat(fc, "beta", 2.0f);
  batchnorm(gemm, "h", "y");
  gemm.output("y");
  const ImportResult r = gemm.import();
  CHECK(r.folded == 1);
  CHECK(kernelsOf(r).size() == 1);
  CHECK(floatConstant(r, "w/folded_bn") ==
        std::pair{std::vector<std::int64_t>{2, 2}, std::vector<float>{2, 4, 3, 4}});
  CHECK(floatConstant(r, "w/folded_bn/bias") ==
        std::pair{std::vector<std::int64_t>{2}, std::vector<float>{2, -3}});

  // A MatMul of rank 2 becomes a Gemm with the bias: B [K, N] scaled by column.
  Model matmul;
  matmul.input("x", {3, 2}).floats("w", {2, 2}, {1, 2, 3, 4});
  matmul.node("MatMul", {"x", "w"}, {"h"}, "fc");
  batchnorm(matmul, "h", "y");
  matmul.output("y");
  const ImportResult rm = matmul.import();
  CHECK(rm.folded == 1);
  CHECK(kernelsOf(rm) == kernelsOf(r));
  CHECK(floatConstant(rm, "w/folded_bn").second == std::vector<float>{2, 2, 6, 4});
  CHECK(floatConstant(rm, "w/folded_bn/bias").second == std::vector<float>{0, -2});
  CHECK(expandImported(rm).findTensor("y")->type.shape == std::vector<std::int64_t>{3, 2});

  // Not folded: a MatMul of rank 3, whose batch norm's channels (dim 1) are
  // not the product's columns, though as many; a Gemm whose C is [M, 1].
  Model batched;
  batched.input("x", {2, 2, 2}).floats("w", {2, 2}, {1, 2, 3, 4});
  batched.node("MatMul", {"x", "w"}, {"h"}, "fc");
  batchnorm(batched, "h", "y");
  batched.output("y");
  const ImportResult rb = batched.import();
  CHECK(rb.folded == 0);
  CHECK(kernelsOf(rb).back() == "bn:batchnorm");
  Model column;
  column.input("x", {3, 2}).floats("w", {2, 2}, {1, 2, 3, 4}).floats("c", {3, 1}, {1, 2, 3});
  column.node("Gemm", {"x", "w", "c"}, {"h"}, "fc");
  batchnorm(column, "h", "y");
  column.output("y");
  CHECK(kernelsOf(column.import()).back() == "bn:batchnorm");
}

TEST_CASE("Mod, Transpose and ScatterND of constants fold at import", "[onnx]") {
  Model m;
  m.input("x", {2, 3});
  m.floats("fa", {2}, {-7.5f, 7.5f}).floats("fb", {1}, {2.0f});
  setInt(m.node("Mod", {"fa", "fb"}, {"c"}, "c"), "fmod", 1);
  m.floats("t", {2, 3}, {1, 2, 3, 4, 5, 6});
  setInts(m.node("Transpose", {"t"}, {"tt"}, "tt"), "perm", {1, 0});
  m.node("Transpose", {"t"}, {"rev"}, "rev");
  // Rows 0 and 2 of a [3, 2] zero table set, then row 2 added to.
  m.floats("zero", {3, 2}, {0, 0, 0, 0, 0, 0}).ints("rows", {2, 1}, {0, -1});
  m.floats("up", {2, 2}, {1, 2, 3, 4}).ints("last", {1, 1}, {2}).floats("more", {1, 2}, {10, 20});
  m.node("ScatterND", {"zero", "rows", "up"}, {"set"}, "set");
  setString(m.node("ScatterND", {"set", "last", "more"}, {"sum"}, "sum"), "reduction", "add");
  setInts(m.node("Transpose", {"tt"}, {"tt2"}, "tt2"), "perm", {1, 0});
  m.node("Add", {"x", "tt2"}, {"y"}, "add");
  // (A constant graph output is a copy of the constant NAME/value.)
  m.output("y").output("c").output("rev").output("sum");
  const ImportResult r = m.import();
  CHECK(r.folded == 6);
  CHECK(floatConstant(r, "c/value") ==
        std::pair{std::vector<std::int64_t>{2}, std::vector<float>{-1.5f, 1.5f}});
  CHECK(floatConstant(r, "rev/value") ==
        std::pair{std::vector<std::int64_t>{3, 2}, std::vector<float>{1, 4, 2, 5, 3, 6}});
  CHECK(floatConstant(r, "sum/value").second == std::vector<float>{1, 2, 0, 0, 13, 24});
  CHECK(kernelsOf(r).front() == "add:add");
  // Python's sign rule for fmod 0: 7 % 3 = 1, -7 % 3 = 2, 7 % -3 = -2, -7 % -3 = -1.
  Model py;
  py.input("x", {4}, ::onnx::TensorProto::INT64).ints("a", {4}, {7, -7, 7, -7});
  py.ints("b", {4}, {3, 3, -3, -3});
  py.node("Mod", {"a", "b"}, {"m"}, "m");
  py.node("Add", {"x", "m"}, {"y"}, "add");
  py.output("y");
  const ImportResult rp = py.import();
  const auto it = std::find_if(rp.constants.begin(), rp.constants.end(),
                               [](const auto& c) { return c.name == "m"; });
  REQUIRE(it != rp.constants.end());
  std::vector<std::int64_t> got(4);
  std::memcpy(got.data(), it->bytes.data(), 32);
  CHECK(got == std::vector<std::int64_t>{1, 2, -2, -1});
}

TEST_CASE("folding refuses a ScatterND index out of range and an integer modulo by zero",
          "[onnx]") {
  Model scatter;
  scatter.input("x", {3, 2});
  scatter.floats("zero", {3, 2}, {0, 0, 0, 0, 0, 0}).ints("rows", {1, 1}, {3});
  scatter.floats("up", {1, 2}, {1, 2});
  scatter.node("ScatterND", {"zero", "rows", "up"}, {"set"}, "set");
  scatter.node("Add", {"x", "set"}, {"y"}, "add");
  scatter.output("y");
  const testing::Failure bad = failureOf([&] { scatter.import(); });
  CHECK(bad.code == ExitCode::InvalidInput);
  CHECK_THAT(bad.message, Contains("node set (ScatterND): index 3 is out of range"));

  Model mod;
  mod.input("x", {2}, ::onnx::TensorProto::INT64).ints("a", {2}, {7, 8}).ints("b", {2}, {3, 0});
  mod.node("Mod", {"a", "b"}, {"m"}, "m");
  mod.node("Add", {"x", "m"}, {"y"}, "add");
  mod.output("y");
  const testing::Failure zero = failureOf([&] { mod.import(); });
  CHECK(zero.code == ExitCode::InvalidInput);
  CHECK_THAT(zero.message, Contains("node m (Mod): integer modulo by zero"));
}
