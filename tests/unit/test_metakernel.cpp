// Metakernel templates: loading (with located errors), application, the library.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "core/driver/kernels_command.hpp"
#include "core/metakernel/application.hpp"
#include "core/metakernel/library.hpp"
#include "core/metakernel/metakernel.hpp"

using namespace tapestry;
using namespace tapestry::metakernel;
using namespace tapestry::driver;

namespace {

std::vector<Metakernel> load(const std::string& yaml, const std::string& name = "k.yaml") {
  return loadMetakernels(SourceFile(name, yaml));
}

Metakernel loadOne(const std::string& yaml) {
  std::vector<Metakernel> ks = load(yaml);
  REQUIRE(ks.size() == 1);
  return std::move(ks[0]);
}

// The formatted diagnostic of the Error that loading `yaml` throws.
std::string loadError(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    return e.what();
  }
  FAIL("expected a load error");
  return {};
}

std::string applyError(const Metakernel& k, const Operation& op) {
  try {
    apply(k, op);
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    return e.message();
  }
  FAIL("expected an application error");
  return {};
}

TensorType tensor(std::vector<std::int64_t> shape, std::string dtype = "float32") {
  return TensorType{std::move(shape), std::move(dtype)};
}

// SPEC §4.1, verbatim.
const char* kSpecMatmul = R"yaml(matmul:
  doc: Batched matrix product, result[..., m, n] = sum_k X[..., m, k] * W[..., k, n].
  params: {}                       # name: {type: int|ints|bool, default: ...}
  constraints:
    dtype: {enum: [float32, float64, float16, bfloat16, int32, int64]}
  inputs:
    X: {shape: "[$batch..., $m, $k]", dtype: "$dtype", ipf: "[@[:-2]..., @[-1]] :> [1...]"}
    W: {shape: "[$batch..., $k, $n]", dtype: "$dtype", ipf: "[@[:-3]..., @[-1], @[-2]] :> [1...]"}
  index: "[$batch..., $m, $n, $k]"
  outputs:
    result: {shape: "[$batch..., $m, $n]", dtype: "$dtype", ipf: "[@[:-1]...] :> [1...]", combine: sum}
  cost: {flops: "2"}               # per index point
  where: []                         # extra boolean checks, e.g. "$axis < len($shape)"
)yaml";

// The draft from the seed issue (shared/seeds/metakernel-template-language-issue.txt),
// verbatim but for the name.
const char* kSeedMatmul = R"yaml(seed_matmul:
  index: "[$batch..., $in_row, $out_col]"

  constraints:
    dtype:
      enum:
        - int32
        - int64
        - float32
        - float64
        - complex64
        - complex128

  inputs:
    X:
      shape: "[$batch..., $in_row, $inner]"
      dtype: "$dtype"

      # this is shorthand for:
      # ipf:
      #   map: "[..., 1, 0]"
      #   shape: "[..., 1, $inner]"
      #
      # which is shorthand for:
      # ipf:
      #   map: "[ones($index.size - 2)..., 1, 0]"
      #   shape: "[ones($index.size - 2)..., 1, $inner]"
      #
      # Where the map unpacks to a diagonal matrix
      # with 1s on the prefix dimensions.
      ipf: "[..., 1, 0] :> [..., 1, $inner]"

    W:
      shape: "[$batch..., $inner, $out_col]"
      dtype: "$dtype"
      ipf: "[..., 0, 1] :> [..., $inner, 1]"

  outputs:
    result:
      # shape defaults to: "[$.index...]"
      # ipf defaults to: "[...] >: [...]"
      dtype: "$dtype"
)yaml";

Operation matmulOp(std::vector<std::int64_t> x, std::vector<std::int64_t> w,
                   const std::string& dtype = "float32") {
  Operation op;
  op.inputs["X"] = {tensor(std::move(x), dtype)};
  op.inputs["W"] = {tensor(std::move(w), dtype)};
  return op;
}

} // namespace

TEST_CASE("SPEC matmul: index, output, IPFs, reduction dim, flops", "[metakernel]") {
  Metakernel k = loadOne(kSpecMatmul);
  CHECK(k.name == "matmul");
  CHECK(k.inputs.size() == 2);
  Application a = apply(k, matmulOp({2, 4, 8}, {2, 8, 3}));
  CHECK(a.index == ZRange::fromShape(ZPoint{2, 4, 3, 8}));
  REQUIRE(a.outputs.size() == 1);
  CHECK(a.outputs[0].name == "result");
  CHECK(a.outputs[0].tensors == std::vector<TensorType>{tensor({2, 4, 3})});
  CHECK(a.outputs[0].combine == Combine::Sum);
  REQUIRE(a.input("X") != nullptr);
  CHECK(a.input("X")->ipfs ==
        std::vector<IndexProjection>{IndexProjection(
            ZAffineMap(ZMatrix{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}), ZPoint{1, 1, 1})});
  CHECK(a.input("W")->ipfs ==
        std::vector<IndexProjection>{IndexProjection(
            ZAffineMap(ZMatrix{{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}}), ZPoint{1, 1, 1})});
  CHECK(a.output("result")->ipfs ==
        std::vector<IndexProjection>{IndexProjection(
            ZAffineMap(ZMatrix{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}), ZPoint{1, 1, 1})});
  CHECK(a.reductionDims == std::vector<std::size_t>{3});
  CHECK(a.reductionSplittable);
  CHECK(a.flopsPerPoint == 2);
  CHECK(a.flops == 2 * 2 * 4 * 3 * 8);
  CHECK(a.bindings.find("k")->value == expr::Value(8));
  CHECK(a.bindings.find("k")->source == "X");
  CHECK(a.bindings.find("dtype")->value == expr::Value(expr::DType{"float32"}));

  Json j = toJson(a);
  CHECK(j["index"].dump() == R"({"start":[0,0,0,0],"end":[2,4,3,8]})");
  CHECK(j["reduction_dims"].dump() == "[3]");
  CHECK(j["combine"].dump() == R"({"result":"sum"})");
  CHECK(j["flops"] == 384);
  CHECK(j["ipf"]["inputs"]["X"][0]["affineMap"]["projection"].dump() ==
        "[[1,0,0,0],[0,1,0,0],[0,0,0,1]]");
}

TEST_CASE("SPEC matmul: conflicts show both shapes", "[metakernel]") {
  Metakernel k = loadOne(kSpecMatmul);
  CHECK(applyError(k, matmulOp({4, 8}, {9, 3})) ==
        "matmul: X is [4, 8] and W is [9, 3]: $k is 8 from X but 9 from W");
  Operation named = matmulOp({4, 8}, {9, 3});
  named.name = "fc1";
  CHECK(applyError(k, named) ==
        "fc1 (matmul): X is [4, 8] and W is [9, 3]: $k is 8 from X but 9 from W");
  CHECK(applyError(k, matmulOp({4, 8}, {8, 3}, "complex64")) ==
        "matmul: $dtype is complex64 from X, expected one of: float32, float64, float16, "
        "bfloat16, int32, int64");
  Operation mixed = matmulOp({4, 8}, {8, 3});
  mixed.inputs["W"][0].dtype = "float64";
  CHECK(applyError(k, mixed) == "matmul: X has dtype float32 and W has dtype float64: $dtype "
                                "is float32 from X but float64 from W");
  Operation missing;
  missing.inputs["X"] = {tensor({4, 8})};
  CHECK(applyError(k, missing) == "matmul: missing input W (the kernel's inputs are: X, W)");
  Operation extra = matmulOp({4, 8}, {8, 3});
  extra.inputs["Y"] = {tensor({1})};
  CHECK(applyError(k, extra) == "matmul: unknown input \"Y\" (expected one of: X, W)");
  Operation two = matmulOp({4, 8}, {8, 3});
  two.inputs["X"].push_back(tensor({4, 8}));
  CHECK(applyError(k, two) == "matmul: input X takes one tensor, got 2");
  Operation params = matmulOp({4, 8}, {8, 3});
  params.params["axis"] = 1;
  CHECK(applyError(k, params) == "matmul: unknown param \"axis\" (the kernel takes no params)");
}

TEST_CASE("The seed's draft matmul loads and means what the seed says", "[metakernel]") {
  Metakernel k = loadOne(kSeedMatmul);
  CHECK(k.name == "seed_matmul");
  Application a = apply(k, matmulOp({2, 4, 8}, {2, 8, 3}));
  CHECK(a.index == ZRange::fromShape(ZPoint{2, 4, 3}));
  CHECK(a.output("result")->tensors == std::vector<TensorType>{tensor({2, 4, 3})});
  // X: diag(1, 1, 0), shape [1, 1, $inner]; W: diag(1, 0, 1), shape [1, $inner, 1].
  CHECK(a.input("X")->ipfs ==
        std::vector<IndexProjection>{IndexProjection(
            ZAffineMap(ZMatrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 0}}), ZPoint{1, 1, 8})});
  CHECK(a.input("W")->ipfs ==
        std::vector<IndexProjection>{IndexProjection(
            ZAffineMap(ZMatrix{{1, 0, 0}, {0, 0, 0}, {0, 0, 1}}), ZPoint{1, 8, 1})});
  CHECK(a.output("result")->ipfs == std::vector<IndexProjection>{IndexProjection::identity(3)});
  CHECK(a.reductionDims.empty());
  CHECK_FALSE(a.reductionSplittable); // the output has no combine
  CHECK(a.flops == 0);                // no cost given
}

TEST_CASE("Loader errors are located, with the YAML line and a caret", "[metakernel]") {
  SECTION("an expression error points at the column inside the string") {
    CHECK(loadError("mm:\n"
                    "  inputs:\n"
                    "    X:\n"
                    "      shape: \"[$batch..., $m $k]\"\n"
                    "  index: \"[$m]\"\n"
                    "  outputs:\n"
                    "    result: {dtype: float32}\n") ==
          "k.yaml:4:30: error: in shape pattern \"[$batch..., $m $k]\": expected ',' or ']' at "
          "column 16\n"
          "      shape: \"[$batch..., $m $k]\"\n"
          "                             ^\n");
  }
  SECTION("plain (unquoted) scalars have no quote to skip") {
    CHECK(loadError("k:\n"
                    "  index: [$m,, 2]\n"
                    "  outputs:\n"
                    "    result: {dtype: float32}\n")
              .starts_with("k.yaml:2:10: error: index expression: expected a string, got list"));
    CHECK(loadError("k:\n"
                    "  index: $m +\n"
                    "  outputs:\n"
                    "    result: {dtype: float32}\n")
              .starts_with("k.yaml:2:14: error: in index expression \"$m +\": "));
  }
  SECTION("unknown keys name the expected ones") {
    CHECK(loadError("k:\n"
                    "  index: \"[1]\"\n"
                    "  outptus: {}\n") ==
          "k.yaml:3:3: error: unknown key \"outptus\" in kernel k (expected one of: doc, params, "
          "constraints, inputs, let, index, outputs, cost, where, examples, body, extern)\n"
          "  outptus: {}\n"
          "  ^\n");
    CHECK(loadError("k:\n"
                    "  index: \"[1]\"\n"
                    "  outputs:\n"
                    "    result: {dtype: float32, combin: sum}\n") ==
          "k.yaml:4:30: error: unknown key \"combin\" in output result (expected one of: shape, "
          "dtype, ipf, combine, list, count, doc)\n"
          "    result: {dtype: float32, combin: sum}\n"
          "                             ^\n");
  }
  SECTION("missing keys, bad values") {
    CHECK(loadError("k:\n"
                    "  outputs:\n"
                    "    result: {dtype: float32}\n") ==
          "k.yaml:1:1: error: kernel k: missing required key \"index\"\nk:\n^\n");
    CHECK(loadError("k:\n"
                    "  params:\n"
                    "    axis: {type: integer}\n"
                    "  index: \"[1]\"\n"
                    "  outputs: {r: {dtype: float32}}\n")
              .starts_with("k.yaml:3:18: error: param axis: unknown type \"integer\" (expected "
                           "one of: int, ints, bool, float, dtype)\n"));
    CHECK(loadError("k:\n"
                    "  params:\n"
                    "    axis: {type: int, default: [1]}\n"
                    "  index: \"[1]\"\n"
                    "  outputs: {r: {dtype: float32}}\n")
              .starts_with("k.yaml:3:32: error: param axis: default: expected int, got list\n"));
    CHECK(loadError("k:\n"
                    "  index: \"[1]\"\n"
                    "  outputs: {r: {dtype: float32, combine: avg}}\n")
              .starts_with("k.yaml:3:42: error: output r: unknown combine \"avg\" (expected one "
                           "of: sum, max, min, prod)\n"));
    CHECK(loadError("k:\n"
                    "  index: \"[1]\"\n"
                    "  outputs: {r: {dtype: float32, list: true}}\n")
              .starts_with("k.yaml:3:13: error: output r: a list output needs a count "
                           "expression (count: EXPR)\n"));
    CHECK(loadError("k:\n"
                    "  index: \"[1]\"\n"
                    "  outputs: {}\n")
              .starts_with("k.yaml:3:12: error: outputs: a kernel needs at least one output\n"));
    CHECK(loadError("1k:\n"
                    "  index: \"[1]\"\n"
                    "  outputs: {r: {dtype: float32}}\n")
              .starts_with("k.yaml:1:1: error: kernel name \"1k\" is not valid"));
  }
  SECTION("YAML syntax errors and duplicate keys") {
    CHECK(loadError("k:\n"
                    "  index: \"[1]\"\n"
                    "  index: \"[2]\"\n")
              .starts_with("k.yaml:3:3: error: kernel k: duplicate key \"index\"\n"));
    CHECK(loadError("k: {index: [1\n").starts_with("k.yaml:"));
    CHECK(loadError("- a\n- b\n")
              .starts_with(
                  "k.yaml:1:1: error: expected a map of kernel names to templates, got list\n"));
  }
  SECTION("an empty file has no kernels") {
    CHECK(load("# nothing\n").empty());
  }
}

TEST_CASE("Params: defaults, types, required", "[metakernel]") {
  Metakernel k = loadOne(R"yaml(reduce:
  params:
    axis: {type: int, default: -1}
    keepdims: {type: bool, default: false}
    eps: {type: float, default: 1e-5}
    perm: {type: ints, default: [1, 0]}
    out: {type: dtype, default: float64}
    need: {type: int}
  inputs:
    input: {shape: "[$shape...]", dtype: "$dtype"}
  let:
    ax: "$axis % len($shape)"
  where:
    - "$axis >= -len($shape) and $axis < len($shape)"
    - "$ax >= 0"
  index: "[$shape...]"
  outputs:
    result: {dtype: "$out"}
)yaml");
  Operation op;
  op.inputs["input"] = {tensor({5, 6})};
  op.params["need"] = 3;
  Application a = apply(k, op);
  CHECK(a.bindings.find("axis")->value == expr::Value(-1));
  CHECK(a.bindings.find("axis")->source == "params");
  CHECK(a.bindings.find("keepdims")->value == expr::Value(false));
  CHECK(a.bindings.find("eps") == nullptr); // floats stay out of the language
  CHECK(a.bindings.find("perm")->value == expr::Value::ints({1, 0}));
  CHECK(a.bindings.find("ax")->value == expr::Value(1));
  CHECK(a.bindings.find("ax")->source == "let");
  CHECK(a.output("result")->tensors[0].dtype == "float64");
  CHECK(a.params.dump() ==
        R"({"axis":-1,"keepdims":false,"eps":1e-05,"perm":[1,0],"out":"float64","need":3})");

  Operation bad = op;
  bad.params["axis"] = "x";
  CHECK(applyError(k, bad) == "reduce: param axis: expected int, got string");
  bad = op;
  bad.params["axis"] = 1.5;
  CHECK(applyError(k, bad) == "reduce: param axis: expected int, got float");
  bad = op;
  bad.params["perm"] = Json::array({1, "a"});
  CHECK(applyError(k, bad) ==
        "reduce: param perm: expected ints, got a list with string \"a\" at index 1");
  bad = op;
  bad.params["keepdims"] = 1;
  CHECK(applyError(k, bad) == "reduce: param keepdims: expected bool, got int");
  bad = op;
  bad.params.erase("need");
  CHECK(applyError(k, bad) == "reduce: param need: required int param not given");
  bad = op;
  bad.params["axis"] = 2;
  CHECK(applyError(k, bad) == "reduce: where clause \"$axis >= -len($shape) and $axis < "
                              "len($shape)\" does not hold ($axis = 2, $shape = [5, 6])");
  bad = op;
  bad.params["eps"] = 1; // an int is a fine float
  CHECK(apply(k, bad).params["eps"] == 1);
}

TEST_CASE("Application errors name the field and point at the template", "[metakernel]") {
  Metakernel k = loadOne("k:\n"
                         "  inputs:\n"
                         "    input: {shape: \"[$a, $b]\", dtype: \"$dtype\"}\n"
                         "  index: \"[$a, $c]\"\n"
                         "  outputs:\n"
                         "    result: {dtype: \"$dtype\"}\n");
  Operation op;
  op.inputs["input"] = {tensor({2, 3})};
  try {
    apply(k, op);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.message().starts_with("k: in index expression \"[$a, $c]\": "));
    CHECK(e.message().find("$c") != std::string::npos);
    REQUIRE(e.diagnostic().notes.size() == 1);
    const Diagnostic& note = e.diagnostic().notes[0];
    CHECK(note.location.file == "k.yaml");
    CHECK(note.location.line == 4);
    CHECK(note.message == "in kernel k, index expression \"[$a, $c]\"");
  }
  SECTION("rank mismatch in a pattern") {
    Operation r3;
    r3.inputs["input"] = {tensor({2, 3, 4})};
    std::string message = applyError(k, r3);
    CHECK(message.starts_with("k: "));
    CHECK(message.find("[2, 3, 4]") != std::string::npos);
  }
  SECTION("the default ipf needs equal ranks") {
    Metakernel r = loadOne("r:\n"
                           "  inputs:\n"
                           "    input: {shape: \"[$a, $b]\"}\n"
                           "  index: \"[$a, $b]\"\n"
                           "  outputs:\n"
                           "    result: {shape: \"[$a]\", dtype: float32}\n");
    Operation o;
    o.inputs["input"] = {tensor({2, 3})};
    CHECK(applyError(r, o) ==
          "r: output result has rank 1 but the index zr[0:2, 0:3] has rank 2: the default ipf "
          "\"[@...] :> [1...]\" needs equal ranks (give an ipf)");
  }
}

TEST_CASE("List inputs and list outputs evaluate per tensor with $j", "[metakernel]") {
  Metakernel k = loadOne(R"yaml(chunks:
  params:
    n: {type: int, default: 2}
  inputs:
    parts: {shape: "[$m, $w[$i]]", dtype: "$dtype", list: true, ipf: "[@[0], @[1] - $j] :> [1, 1]"}
  index: "[$m, 4]"
  outputs:
    results:
      list: true
      count: "$n"
      shape: "[$m, $j + 1]"
      dtype: "$dtype"
      ipf: "[@[0], 0] :> [1, $j + 1]"
)yaml");
  Operation op;
  op.inputs["parts"] = {tensor({3, 1}), tensor({3, 2})};
  Application a = apply(k, op);
  const PortResult* in = a.input("parts");
  REQUIRE(in != nullptr);
  CHECK(in->list);
  REQUIRE(in->ipfs.size() == 2);
  CHECK(in->ipfs[1] ==
        IndexProjection(ZAffineMap(ZMatrix{{1, 0}, {0, 1}}, ZPoint{0, -1}), ZPoint{1, 1}));
  const PortResult* out = a.output("results");
  REQUIRE(out->tensors.size() == 2);
  CHECK(out->tensors[1] == tensor({3, 2}));
  CHECK(out->ipfs[1] == IndexProjection(ZAffineMap(ZMatrix{{1, 0}, {0, 0}}), ZPoint{1, 2}));
  CHECK(a.reductionDims == std::vector<std::size_t>{1});

  Operation empty;
  empty.inputs["parts"] = {};
  CHECK(applyError(k, empty) == "chunks: input parts is a list input and needs at least one "
                                "tensor");
}

TEST_CASE("An optional input may be left out: no tensors, no bindings, no IPFs", "[metakernel]") {
  Metakernel k = loadOne(R"yaml(scaled:
  inputs:
    x: {shape: "[$n, $d]", dtype: "$dtype"}
    bias: {shape: "[$d]", dtype: "$dtype", ipf: "[@[1]] :> [1]", optional: true}
    gain: {shape: "[$g]", dtype: "float32", ipf: "[0] :> [$g]", optional: true}
  index: "[$n, $d]"
  outputs:
    result: {dtype: "$dtype"}
)yaml");
  CHECK_FALSE(k.findInput("x")->optional);
  CHECK(k.findInput("bias")->optional);
  CHECK(toJson(k)["inputs"]["bias"]["optional"] == true);
  CHECK(toJson(k)["inputs"]["x"]["optional"] == false);

  Operation given;
  given.inputs["x"] = {tensor({4, 3})};
  given.inputs["bias"] = {tensor({3})};
  given.inputs["gain"] = {tensor({5})};
  Application all = apply(k, given);
  REQUIRE(all.inputs.size() == 3);
  CHECK(all.input("bias")->ipfs.size() == 1);
  CHECK(all.bindings.find("g")->value == expr::Value(std::int64_t{5}));

  Operation bare;
  bare.inputs["x"] = {tensor({4, 3})};
  Application a = apply(k, bare);
  REQUIRE(a.inputs.size() == 3); // template order, the left-out ports too
  CHECK(a.inputs[1].name == "bias");
  CHECK(a.inputs[1].tensors.empty());
  CHECK(a.inputs[1].ipfs.empty());
  CHECK(a.inputs[2].tensors.empty());
  CHECK(a.bindings.find("g") == nullptr); // only gain's pattern binds it
  CHECK(a.index.shape().vector() == std::vector<std::int64_t>{4, 3});
  const Json json = toJson(a);
  CHECK(json["ipf"]["inputs"].contains("x"));
  CHECK_FALSE(json["ipf"]["inputs"].contains("bias"));
  CHECK_FALSE(json["ipf"]["inputs"].contains("gain"));

  // Given, an optional port is checked like any other.
  Operation wrong = bare;
  wrong.inputs["bias"] = {tensor({4})};
  CHECK(applyError(k, wrong) == "scaled: x is [4, 3] and bias is [4]: $d is 3 from x but 4 "
                                "from bias");
  // A required port left out still fails, and the message marks the optional ones.
  Operation none;
  none.inputs["bias"] = {tensor({3})};
  CHECK(applyError(k, none) == "scaled: missing input x (the kernel's inputs are: x, bias "
                               "(optional), gain (optional))");

  CHECK(loadError(R"yaml(k:
  inputs:
    x: {shape: "[$n]", optional: maybe}
  index: "[$n]"
  outputs:
    r: {dtype: float32}
)yaml")
            .starts_with("k.yaml:3:34: error: input x: optional: expected true or false, got "
                         "\"maybe\""));
}

TEST_CASE("A body sees no block for an optional input left out", "[metakernel]") {
  Metakernel k = loadOne(R"yaml(plus:
  inputs:
    x: {shape: "[$n]", dtype: "$dtype"}
    y: {shape: "[$n]", dtype: "$dtype", optional: true}
  index: "[$n]"
  outputs:
    result: {dtype: "$dtype"}
  body: "result = x + y"
)yaml");
  Operation both;
  both.inputs["x"] = {tensor({4})};
  both.inputs["y"] = {tensor({4})};
  CHECK(apply(k, both).body != nullptr);
  Operation one;
  one.inputs["x"] = {tensor({4})};
  CHECK(applyError(k, one) == "plus: in body \"result = x + y\": unknown name 'y' (blocks here: "
                              "x; variables start with '$') at column 14");
}

TEST_CASE("Library: duplicates, override, lookup", "[metakernel]") {
  const std::string a = "k:\n  index: \"[1]\"\n  outputs: {r: {dtype: float32}}\n";
  MetakernelLibrary lib;
  lib.addFile(SourceFile("a.yaml", a));
  try {
    lib.addFile(SourceFile("b.yaml", "# again\n" + a));
    FAIL("expected a duplicate error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "b.yaml:2:1: error: kernel \"k\" is already defined at a.yaml:1:1 (use "
          "--override-kernels to replace it)\n"
          "k:\n"
          "^\n"
          "a.yaml:1:1: note: the first definition of \"k\" is here\n");
  }
  lib.addFile(SourceFile("b.yaml", "# again\n" + a), true);
  CHECK(lib.get("k").location.file == "b.yaml");
  CHECK(lib.size() == 1);
  try {
    lib.get("nope");
    FAIL("expected an unknown-kernel error");
  } catch (const Error& e) {
    CHECK(e.message() == "unknown kernel \"nope\" (known: k)");
  }
}

TEST_CASE("A where clause may carry the message its failure gives", "[metakernel]") {
  const std::string head = "k:\n"
                           "  inputs:\n"
                           "    input: {shape: \"[$a, $b]\"}\n"
                           "  index: \"[$a, $b]\"\n"
                           "  outputs:\n"
                           "    result: {dtype: float32}\n"
                           "  where:\n";
  Metakernel k = loadOne(head + "    - \"$a > 1\"\n"
                                "    - check: \"$a == $b\"\n"
                                "      message: \"the input must be square\"\n");
  REQUIRE(k.where.size() == 2);
  CHECK(k.where[0].message.empty());
  CHECK(k.where[1].message == "the input must be square");
  CHECK(k.where[1].field.text == "$a == $b");

  Operation wide;
  wide.inputs["input"] = {tensor({2, 3})};
  CHECK(applyError(k, wide) == "k: the input must be square ($a = 2, $b = 3)");
  Operation one;
  one.inputs["input"] = {tensor({1, 1})};
  CHECK(applyError(k, one) == "k: where clause \"$a > 1\" does not hold ($a = 1)");

  // The JSON form (kernels show --format json) keeps the two shapes apart.
  const Json where = toJson(k)["where"];
  CHECK(where[0] == "$a > 1");
  CHECK(where[1] == Json{{"check", "$a == $b"}, {"message", "the input must be square"}});

  CHECK(loadError(head + "    - {check: \"$a == $b\"}\n") ==
        "k.yaml:8:7: error: where clause: a map needs both \"check\" (the expression) and "
        "\"message\" (what a failure says)\n"
        "    - {check: \"$a == $b\"}\n"
        "      ^\n");
  CHECK(loadError(head + "    - {check: \"$a == $b\", mesage: square}\n")
            .starts_with("k.yaml:8:27: error: unknown key \"mesage\" in where clause (expected "
                         "one of: check, message, given)"));
  CHECK(
      loadError(head + "    - {check: \"$a ==\", message: square}\n")
          .starts_with(
              "k.yaml:8:21: error: in where clause \"$a ==\": expected an expression at column 6"));
}

TEST_CASE("A where clause given an optional input holds when the input is left out",
          "[metakernel]") {
  const std::string head =
      "k:\n"
      "  inputs:\n"
      "    x: {shape: \"[$n, $t]\", ipf: \"[@[0], 0] :> [1, $t]\"}\n"
      "    bias: {shape: \"[$m..., $t]\", ipf: \"[broadcast_rows(@, $m)..., 0] "
      ":> [1..., $t]\", optional: true}\n"
      "  index: \"[$n]\"\n"
      "  outputs:\n"
      "    result: {shape: \"[$n, $t]\", dtype: float32, ipf: \"[@[0], 0] :> "
      "[1, $t]\"}\n"
      "  where:\n";
  const Metakernel k = loadOne(head + "    - check: \"broadcast([$n], $m) == [$n]\"\n"
                                      "      message: \"bias must broadcast against the rows\"\n"
                                      "      given: bias\n");
  REQUIRE(k.where.size() == 1);
  CHECK(k.where[0].given == "bias");
  CHECK(toJson(k)["where"][0] == Json{{"check", "broadcast([$n], $m) == [$n]"},
                                      {"message", "bias must broadcast against the rows"},
                                      {"given", "bias"}});
  Operation bare; // $m unbound: the clause is not evaluated
  bare.inputs["x"] = {tensor({4, 3})};
  CHECK(apply(k, bare).index.size() == 4);
  Operation row;
  row.inputs["x"] = {tensor({4, 3})};
  row.inputs["bias"] = {tensor({1, 3})};
  CHECK(apply(k, row).index.size() == 4);
  // An expression that cannot be evaluated on the shapes fails with the
  // clause's message and why.
  Operation wrong;
  wrong.inputs["x"] = {tensor({4, 3})};
  wrong.inputs["bias"] = {tensor({2, 3})};
  CHECK(applyError(k, wrong) ==
        "k: bias must broadcast against the rows (cannot broadcast [4] with [2])");

  CHECK(loadError(head + "    - {check: \"$n > 0\", message: m, given: x}\n")
            .starts_with("k.yaml:9:44: error: where clause: given: x is not an optional input of "
                         "the kernel"));
  CHECK(loadError(head + "    - {check: \"$n > 0\", message: m, given: nope}\n")
            .starts_with("k.yaml:9:44: error: where clause: given: nope is not an optional input"));
}

TEST_CASE("The embedded standard library loads", "[metakernel]") {
  CHECK(!embeddedStandardLibrary().empty());
  MetakernelLibrary lib = MetakernelLibrary::standard();
  CHECK(lib.size() > 0);
  for (const Metakernel* k : lib.kernels()) {
    CHECK(k->location.file.starts_with("<stdlib>/"));
    CHECK(isStandardLibraryFile(k->location.file));
    CHECK(!k->sourceText.empty());
  }
}

TEST_CASE("kernels command in-process", "[metakernel]") {
  std::ostringstream out, err;
  KernelsConfig config;
  config.action = KernelsConfig::Action::Check;
  CHECK(runKernelsCommand(config, out, err) == 0);
  CHECK(err.str().empty());
  CHECK(out.str().starts_with("checked "));

  config.action = KernelsConfig::Action::Show;
  config.name = "no_such_kernel";
  CHECK_THROWS_AS(runKernelsCommand(config, out, err), Error);
}

TEST_CASE("An optional input's default is what the body reads when it is left out",
          "[metakernel]") {
  Metakernel k = loadOne(R"yaml(plus:
  inputs:
    x: {shape: "[$n]", dtype: "$dtype"}
    y: {shape: "[$n]", dtype: "$dtype", optional: true, default: 0.5}
  index: "[$n]"
  outputs:
    result: {dtype: "$dtype"}
  body: "result = x + y"
)yaml");
  REQUIRE(k.findInput("y")->absent);
  CHECK(*k.findInput("y")->absent == 0.5);
  Operation one;
  one.inputs["x"] = {tensor({4})};
  const Application a = apply(k, one);
  REQUIRE(a.input("y") != nullptr);
  CHECK(a.input("y")->absent == 0.5);
  CHECK(a.input("y")->tensors.empty());
  CHECK_THAT(loadError(R"yaml(k:
  inputs:
    x: {shape: "[$n]", default: 0}
  index: "[$n]"
  outputs: {r: {dtype: float32}}
)yaml"),
             Catch::Contains("k.yaml:3:24: error: input x: default is only for optional inputs "
                             "(add optional: true)"));
  CHECK_THAT(loadError(R"yaml(k:
  inputs:
    x: {shape: "[$n]", optional: true, default: zero}
  index: "[$n]"
  outputs: {r: {dtype: float32}}
)yaml"),
             Catch::Contains("error: input x: default must be a number, got \"zero\""));
}
