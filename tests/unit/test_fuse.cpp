// Fused kernels composed from two templates (core/metakernel/fuse.hpp): their
// names, the composed IPFs, combine and flops, the parts a backend runs, and
// the errors that say why two templates do not compose.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "core/metakernel/application.hpp"
#include "core/metakernel/fuse.hpp"
#include "core/metakernel/library.hpp"

using namespace tapestry;
using namespace tapestry::metakernel;

namespace {

TensorType tensor(std::vector<std::int64_t> shape, std::string dtype = "float32") {
  return TensorType{std::move(shape), std::move(dtype)};
}

std::string applyError(const Metakernel& k, const Operation& op) {
  try {
    apply(k, op);
  } catch (const Error& e) {
    return e.message();
  }
  FAIL("expected an application error");
  return {};
}

std::string fuseError(const MetakernelLibrary& lib, const std::string& name) {
  try {
    lib.find(name);
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    return e.message();
  }
  FAIL("expected fuse(...) to fail: " + name);
  return {};
}

} // namespace

TEST_CASE("fuse names: the one spelling, nested producers, ports", "[metakernel][fuse]") {
  const std::optional<FuseName> plain = parseFuseName("fuse(matmul, relu)");
  REQUIRE(plain);
  CHECK(plain->producer == "matmul");
  CHECK(plain->consumer == "relu");
  CHECK(plain->port.empty());
  const std::optional<FuseName> nested = parseFuseName("fuse(fuse(matmul, add.A), relu)");
  REQUIRE(nested);
  CHECK(nested->producer == "fuse(matmul, add.A)");
  CHECK(nested->consumer == "relu");
  CHECK(isFuseKernelName("fuse(fuse(matmul, add.A), relu)"));
  CHECK_FALSE(isFuseKernelName("fuse(matmul,relu)"));
  CHECK_FALSE(isFuseKernelName("fuse(fuse(matmul,add), relu)"));
  CHECK_FALSE(parseFuseName("fuse(matmul)"));
  CHECK_FALSE(parseFuseName("fuse(a, b, c)"));
  CHECK_FALSE(parseFuseName("fuse(a, fuse(b, c))")); // a consumer is a kernel name
  CHECK_FALSE(parseFuseName("matmul"));
  CHECK(fuseName(FuseName{"conv2d", "add", "B"}) == "fuse(conv2d, add.B)");
}

TEST_CASE("fuse(matmul, relu): the producer's index space, no combine, one body",
          "[metakernel][fuse]") {
  const MetakernelLibrary lib = MetakernelLibrary::standard();
  const Metakernel* k = lib.find("fuse(matmul, relu)");
  REQUIRE(k != nullptr);
  CHECK(lib.find("fuse(matmul, relu)") == k); // made once
  CHECK(k->name == "fuse(matmul, relu)");
  CHECK(k->findParam("transpose_w") != nullptr);
  REQUIRE(k->inputs.size() == 2);
  Operation op;
  op.inputs["X"] = {tensor({4, 8})};
  op.inputs["W"] = {tensor({8, 3})};
  const Application a = apply(*k, op);
  CHECK(a.index == ZRange::fromShape(ZPoint{4, 3, 8}));
  CHECK(a.outputs[0].name == "result");
  CHECK(a.outputs[0].tensors == std::vector<TensorType>{tensor({4, 3})});
  CHECK_FALSE(a.outputs[0].combine); // relu of partial sums is not relu of the sum
  CHECK(a.reductionDims == std::vector<std::size_t>{2});
  CHECK_FALSE(a.reductionSplittable);
  // 2 flops a product point; relu's 12 over 96 points round down.
  CHECK(a.flops == 2 * 4 * 3 * 8);
  REQUIRE(a.body != nullptr);
  CHECK(a.body->field.text == "fused_result = transpose(X, perm=$perm_x) @ transpose(W, "
                              "perm=$perm_w); result = relu(fused_result)");
  // Another library (a copy) makes its own.
  const MetakernelLibrary other = lib;
  CHECK(other.find("fuse(matmul, relu)") != k);
  CHECK(lib.kernels().size() == other.kernels().size()); // fused ones are not listed
}

TEST_CASE("fuse composes the consumer's other inputs through the producer's IPF",
          "[metakernel][fuse]") {
  const MetakernelLibrary lib = MetakernelLibrary::standard();
  // A bias [n] added to matmul's [m, n] result, then clipped: nested.
  const Metakernel* k = lib.find("fuse(fuse(matmul, add.A), clip)");
  REQUIRE(k != nullptr);
  CHECK(k->findParam("clip_min") != nullptr);
  CHECK(k->findInput("add_B") != nullptr);
  Operation op;
  op.inputs["X"] = {tensor({2, 4, 8})};
  op.inputs["W"] = {tensor({8, 3})};
  op.inputs["add_B"] = {tensor({3})};
  op.params = Json{{"clip_min", 0.0}, {"clip_max", 6.0}};
  const Application a = apply(*k, op);
  CHECK(a.index == ZRange::fromShape(ZPoint{2, 4, 3, 8}));
  // Point (b, m, n, k) reads bias[n].
  CHECK(a.input("add_B")->ipfs == std::vector<IndexProjection>{IndexProjection(
                                      ZAffineMap(ZMatrix{{0, 0, 1, 0}}), ZPoint{1})});
  CHECK(a.outputs[0].tensors == std::vector<TensorType>{tensor({2, 4, 3})});
  CHECK(a.output("result")->ipfs ==
        std::vector<IndexProjection>{IndexProjection(
            ZAffineMap(ZMatrix{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}), ZPoint{1, 1, 1})});
  CHECK_FALSE(a.reductionSplittable);
  // The consumer may not broadcast the producer's result.
  Operation wide = op;
  wide.inputs["add_B"] = {tensor({5, 2, 4, 3})};
  CHECK_THAT(applyError(*k, wide),
             Catch::Contains("add's index space must be the shape of matmul's output result"));
  // Elementwise after elementwise keeps every split: no reduction dim.
  const Metakernel* e = lib.find("fuse(add, relu)");
  REQUIRE(e != nullptr);
  Operation plus;
  plus.inputs["A"] = {tensor({4, 5})};
  plus.inputs["B"] = {tensor({5})};
  const Application b = apply(*e, plus);
  CHECK(b.reductionDims.empty());
  CHECK(b.flops == 2 * 4 * 5);
}

TEST_CASE("fuse says why two templates do not compose", "[metakernel][fuse]") {
  const MetakernelLibrary lib = MetakernelLibrary::standard();
  CHECK(lib.find("fusion") == nullptr);
  CHECK(fuseError(lib, "fuse(matmul,relu)") ==
        "kernel \"fuse(matmul,relu)\": a fused kernel is spelled \"fuse(matmul, relu)\" "
        "(fuse(PRODUCER, CONSUMER) or fuse(PRODUCER, CONSUMER.PORT))");
  // A name that starts like one and is not one says how one is written.
  for (const char* bad : {"fuse(", "fuse()", "fuse(matmul, )", "fuse(matmul, fuse(add, relu))",
                          "fuse(matmul, relu, tanh)", "fuse(matmul relu)"}) {
    CHECK(fuseError(lib, bad) == "kernel \"" + std::string(bad) +
                                     "\": not a fused kernel: fuse(PRODUCER, CONSUMER) or "
                                     "fuse(PRODUCER, CONSUMER.PORT), where CONSUMER is one "
                                     "kernel's name (nest on the producer's side: fuse(fuse(A, "
                                     "B), C))");
  }
  CHECK(fuseError(lib, "fuse(matmul, nosuch)") ==
        "kernel \"fuse(matmul, nosuch)\": unknown kernel \"nosuch\"");
  CHECK(fuseError(lib, "fuse(matmul, add.C)") ==
        "kernel \"fuse(matmul, add.C)\": add has no input C (its inputs: A, B)");
  CHECK_THAT(fuseError(lib, "fuse(matmul, softmax)"),
             Catch::Contains("softmax reads input through the IPF") &&
                 Catch::Contains("not element by element"));
  CHECK(fuseError(lib, "fuse(split, relu)") ==
        "kernel \"fuse(split, relu)\": the producer split must have exactly one output (not a "
        "list)");
  // where's condition is a bool: no dtype of matmul's result.
  CHECK(fuseError(lib, "fuse(matmul, where.condition)") ==
        "kernel \"fuse(matmul, where.condition)\": matmul and where allow no common value of "
        "$dtype");
  // Without a body on one side, the fused template has none: backends run the parts.
  const Metakernel* noBody = lib.find("fuse(conv2d, relu)");
  REQUIRE(noBody != nullptr);
  CHECK(noBody->body == nullptr);
  REQUIRE(noBody->fused != nullptr);
  CHECK(noBody->fused->producer->name == "conv2d");
  CHECK(noBody->fused->port == "input");
}

TEST_CASE("fuse keeps list and optional ports, and any port of the consumer",
          "[metakernel][fuse]") {
  const MetakernelLibrary lib = MetakernelLibrary::standard();
  // A list input of the producer stays a list.
  const Metakernel* joined = lib.find("fuse(concat, relu)");
  REQUIRE(joined != nullptr);
  REQUIRE(joined->findInput("tensors") != nullptr);
  CHECK(joined->findInput("tensors")->list);
  Operation cat;
  cat.inputs["tensors"] = {tensor({2, 3}), tensor({2, 5})};
  cat.params = Json{{"axis", 1}};
  const Application a = apply(*joined, cat);
  CHECK(a.outputs[0].tensors == std::vector<TensorType>{tensor({2, 8})});
  REQUIRE(a.fused != nullptr);
  CHECK(a.fused->producerKernel == "concat");
  CHECK(a.fused->consumerInputs == std::vector<int>{-1});
  // The producer's result as add's B; A (a residual) is the fused add_A.
  const Metakernel* residual = lib.find("fuse(conv2d, add.B)");
  REQUIRE(residual != nullptr);
  CHECK(residual->findInput("bias")->optional);
  Operation conv;
  conv.inputs["input"] = {tensor({2, 3, 6, 6})};
  conv.inputs["weight"] = {tensor({4, 3, 3, 3})};
  conv.inputs["add_A"] = {tensor({2, 4, 4, 4})};
  const Application b = apply(*residual, conv);
  REQUIRE(b.fused != nullptr);
  CHECK(b.fused->producerInputs == 3);
  CHECK(b.fused->consumerInputs == std::vector<int>{3, -1});
  CHECK(b.fused->consumer->outputs[0].tensors == std::vector<TensorType>{tensor({2, 4, 4, 4})});
  CHECK(b.input("add_A")->ipfs == b.output("result")->ipfs); // read where written
}

TEST_CASE("fuse keeps a consumer's where clause about an optional input", "[metakernel][fuse]") {
  MetakernelLibrary lib = MetakernelLibrary::standard();
  lib.addFile(SourceFile("shift.yaml", R"yaml(shift:
  inputs:
    input: {shape: "[$n...]", dtype: "$dtype"}
    offset: {shape: "[$m...]", dtype: "$dtype", ipf: "[broadcast_rows(@, $m)...] :> [1...]", optional: true}
  where:
    - check: "broadcast($n, $m) == $n"
      message: "offset must broadcast against the input"
      given: offset
  index: "[$n...]"
  outputs:
    result: {dtype: "$dtype"}
)yaml"));
  const Metakernel* fused = lib.find("fuse(relu, shift)");
  REQUIRE(fused != nullptr);
  const auto clause = std::find_if(fused->where.begin(), fused->where.end(),
                                   [](const WhereSpec& w) { return !w.given.empty(); });
  REQUIRE(clause != fused->where.end());
  CHECK(clause->given == "shift_offset"); // the consumer's port under its fused name
  CHECK(fused->findInput(clause->given)->optional);
  Operation bare;
  bare.inputs["input"] = {tensor({2, 3})};
  CHECK(apply(*fused, bare).outputs[0].tensors == std::vector<TensorType>{tensor({2, 3})});
  Operation row;
  row.inputs["input"] = {tensor({2, 3})};
  row.inputs[clause->given] = {tensor({3})};
  CHECK(apply(*fused, row).outputs[0].tensors == std::vector<TensorType>{tensor({2, 3})});
  Operation wrong;
  wrong.inputs["input"] = {tensor({2, 3})};
  wrong.inputs[clause->given] = {tensor({2})};
  CHECK(applyError(*fused, wrong).find("offset must broadcast against the input") !=
        std::string::npos);
}
