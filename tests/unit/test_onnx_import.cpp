// Tests for core/onnx: models built in memory with the ONNX protobuf classes,
// imported, and checked on the graph/v1 document they give (operations,
// params, names, folded constants) and on their errors. Graphs whose kernels
// exist in the standard library are expanded too.
#include "tests/unit/onnx_model.hpp"

TEST_CASE("Gemm with transB and a bias vector is one linear reading W transposed", "[onnx]") {
  Model m;
  m.input("x", {4, 3})
      .floats("fc.weight", {2, 3}, {1, 2, 3, 4, 5, 6})
      .floats("fc.bias", {2}, {0.5f, -1});
  setInt(m.node("Gemm", {"x", "fc.weight", "fc.bias"}, {"y"}, "/fc/Gemm"), "transB", 1);
  m.output("y");
  const ImportResult r = m.import();
  REQUIRE(r.graph.at("operations").size() == 1);
  CHECK(op(r, 0).at("kernel") == "linear");
  CHECK(op(r, 0).at("name") == "/fc/Gemm");
  CHECK(op(r, 0).at("params") == Json{{"transpose_w", true}});
  CHECK(op(r, 0).at("inputs").at("W") == "fc.weight");
  CHECK(op(r, 0).at("inputs").at("bias") == "fc.bias");
  // Initializers are constant graph inputs; the activation is not.
  CHECK(r.graph.at("tensors").at("fc.weight") ==
        Json{{"dtype", "float32"}, {"shape", Json::array({2, 3})}, {"constant", true}});
  CHECK(r.graph.at("tensors").at("fc.bias").at("constant") == true);
  CHECK_FALSE(r.graph.at("tensors").at("x").contains("constant"));
  CHECK(r.graph.at("outputs") == Json::array({"y"}));
  REQUIRE(r.constants.size() == 2);
  CHECK(r.constants[0].name == "fc.weight");
  CHECK(r.constants[0].bytes.size() == 24);
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.findTensor("y")->type.shape == std::vector<std::int64_t>{4, 2});
  CHECK(g.findTensor("fc.weight")->constant);
}

TEST_CASE("Gemm with a C that broadcasts along the rows is a linear with a constant bias",
          "[onnx]") {
  SECTION("a one-element C is repeated into a bias [N]") {
    Model m;
    m.input("a", {3, 4}).floats("w", {3, 5}, std::vector<float>(15, 1.0f)).floats("c", {1}, {2.5f});
    ::onnx::NodeProto& n = m.node("Gemm", {"a", "w", "c"}, {"y"}, "g");
    setInt(n, "transA", 1);
    m.output("y");
    const ImportResult r = m.import();
    REQUIRE(r.graph.at("operations").size() == 1);
    CHECK(op(r, 0).at("kernel") == "linear");
    CHECK(op(r, 0).at("params") == Json{{"transpose_x", true}});
    CHECK(op(r, 0).at("inputs").at("bias") == "c/bias");
    CHECK(r.graph.at("tensors").at("c/bias") ==
          Json{{"dtype", "float32"}, {"shape", Json::array({5})}, {"constant", true}});
    CHECK_FALSE(r.graph.at("tensors").contains("c")); // read by nothing
    REQUIRE(r.constants.size() == 2);
    std::vector<float> bias(5);
    std::memcpy(bias.data(), r.constants[1].bytes.data(), 20);
    CHECK(bias == std::vector<float>(5, 2.5f));
    const graph::ExpandedGraph g = expandImported(r);
    CHECK(g.findTensor("y")->type.shape == std::vector<std::int64_t>{4, 5});
  }
  SECTION("a constant C [1, N] is reshaped to [N]") {
    Model m;
    m.input("a", {3, 4})
        .floats("w", {4, 2}, std::vector<float>(8, 1.0f))
        .floats("c", {1, 2}, {1, 2});
    m.node("Gemm", {"a", "w", "c"}, {"y"}, "g");
    m.output("y");
    const ImportResult r = m.import();
    REQUIRE(r.graph.at("operations").size() == 1);
    CHECK(op(r, 0).at("kernel") == "linear");
    CHECK_FALSE(op(r, 0).contains("params"));
    CHECK(r.graph.at("tensors").at("c/bias").at("shape") == Json::array({2}));
    CHECK(expandImported(r).findTensor("y")->type.shape == std::vector<std::int64_t>{3, 2});
  }
  SECTION("a C [1] that is no constant is added, broadcasting") {
    Model m;
    m.input("a", {3, 4}).input("c", {1}).floats("w", {4, 2}, std::vector<float>(8, 1.0f));
    m.node("Gemm", {"a", "w", "c"}, {"y"}, "g");
    m.output("y");
    const ImportResult r = m.import();
    const std::vector<std::string> kernels = kernelsOf(r);
    CHECK(kernels == std::vector<std::string>{"g:matmul", "g/add_C:add"});
    CHECK(expandImported(r).findTensor("y")->type.shape == std::vector<std::int64_t>{3, 2});
  }
}

TEST_CASE("shape arithmetic feeding a Reshape is folded to a constant shape", "[onnx]") {
  Model m;
  m.input("x", {2, 3, 4}).ints("zero", {}, {0}).ints("minus1", {1}, {-1}).ints("axes", {1}, {0});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "zero"}, {"b"});
  m.node("Unsqueeze", {"b", "axes"}, {"b1"});
  setInt(m.node("Concat", {"b1", "minus1"}, {"shape"}), "axis", 0);
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  const ImportResult r = m.import();
  CHECK(r.nodes == 5);
  CHECK(r.folded == 4);
  REQUIRE(r.graph.at("operations").size() == 1);
  CHECK(op(r, 0).at("kernel") == "reshape");
  CHECK(op(r, 0).at("name") == "Reshape_4"); // unnamed nodes are OpType_N
  CHECK(op(r, 0).at("params").at("shape") == Json::array({2, 12}));
  CHECK(r.constants.empty()); // the folded constants feed no operation
  CHECK(expandImported(r).findTensor("y")->type.shape == std::vector<std::int64_t>{2, 12});
}

TEST_CASE("a large Constant node is a graph input with data, and typed for inference", "[onnx]") {
  Model m;
  m.input("x", {2, 300});
  ::onnx::NodeProto& c = m.node("Constant", {}, {"w"}, "weights");
  ::onnx::AttributeProto* value = c.add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  ::onnx::TensorProto* t = value->mutable_t();
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(300);
  t->add_dims(300);
  t->set_raw_data(std::string(300 * 300 * 4, '\0'));
  m.node("MatMul", {"x", "w"}, {"h"}, "mm");
  m.node("Flatten", {"h"}, {"y"}, "flat"); // needs the shape of h, so that of w
  m.output("y");
  const ImportResult r = m.import();
  CHECK(r.folded == 1);
  REQUIRE(r.constants.size() == 1);
  CHECK(r.constants[0].name == "w");
  CHECK(r.constants[0].bytes.size() == 300 * 300 * 4);
  CHECK(op(r, 1).at("params").at("shape") == Json::array({2, 300}));
}

TEST_CASE("a causal mask made at run time from constants is folded", "[onnx]") {
  Model m;
  m.input("x", {3, 3}).ints("shape", {2}, {3, 3});
  ::onnx::NodeProto& ones = m.node("ConstantOfShape", {"shape"}, {"ones"});
  ::onnx::AttributeProto* value = ones.add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(1.0f);
  setInt(m.node("Trilu", {"ones"}, {"lower"}), "upper", 0);
  m.node("Cos", {"lower"}, {"cos"}); // folded like any elementwise function of constants
  m.node("Mul", {"x", "cos"}, {"y"}, "mask");
  m.output("y");
  const ImportResult r = m.import();
  CHECK(r.folded == 3);
  REQUIRE(r.constants.size() == 1);
  std::vector<float> cos(9);
  std::memcpy(cos.data(), r.constants[0].bytes.data(), 36);
  const float c1 = static_cast<float>(std::cos(1.0));
  CHECK(cos == std::vector<float>{c1, 1, 1, c1, c1, 1, c1, c1, c1});
}

TEST_CASE("one-element constant operands give the scalar forms", "[onnx]") {
  Model m;
  m.input("x", {2, 2}).floats("c", {}, {4.0f});
  m.node("Mul", {"x", "c"}, {"a"}, "mul");
  m.node("Sub", {"a", "c"}, {"b"}, "sub");
  m.node("Sub", {"c", "b"}, {"d"}, "rsub");
  m.node("Div", {"d", "c"}, {"e"}, "div");
  m.node("Div", {"c", "e"}, {"f"}, "rdiv");
  m.node("Pow", {"f", "c"}, {"y"}, "pow");
  m.output("y");
  const ImportResult r = m.import();
  REQUIRE(r.graph.at("operations").size() == 6);
  CHECK(op(r, 0).at("kernel") == "mul_scalar");
  CHECK(op(r, 0).at("params").at("value") == 4.0);
  CHECK(op(r, 1).at("kernel") == "add_scalar");
  CHECK(op(r, 1).at("params").at("value") == -4.0);
  CHECK(op(r, 2).at("kernel") == "rsub_scalar");
  // x / c stays a division (exact; mul_scalar(1/c) would round)
  CHECK(op(r, 3).at("kernel") == "div_scalar");
  CHECK(op(r, 3).at("params").at("value") == 4.0);
  CHECK(op(r, 4).at("kernel") == "rdiv_scalar");
  CHECK(op(r, 5).at("kernel") == "pow_scalar");
  CHECK(r.constants.empty()); // every use of c became a param

  // Integer operands stay tensor ops: the scalar forms take floats only.
  Model ints;
  ints.input("i", {3}, ::onnx::TensorProto::INT64).ints("k", {}, {2});
  ints.node("Div", {"i", "k"}, {"q"}, "div");
  ints.node("Add", {"q", "k"}, {"y"}, "add");
  ints.output("y");
  const ImportResult ir = ints.import();
  CHECK(op(ir, 0).at("kernel") == "div");
  CHECK(op(ir, 1).at("kernel") == "add");

  // [4] + [[c]] is [1, 4]: the one-element operand of higher rank stays a tensor
  Model ranked;
  ranked.input("x", {4}).floats("c", {1, 1}, {2.0f});
  ranked.node("Add", {"x", "c"}, {"y"}, "add");
  ranked.output("y");
  const ImportResult k = ranked.import();
  CHECK(op(k, 0).at("kernel") == "add");
  CHECK(expandImported(k).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 4});
}

TEST_CASE("Conv with a bias: one conv2d, the bias on its optional port", "[onnx]") {
  Model m;
  m.input("img", {1, 2, 5, 5}).input("w", {3, 2, 3, 3}).input("b", {3});
  setInts(m.node("Conv", {"img", "w", "b"}, {"y"}, "conv"), "pads", {1, 1, 1, 1});
  m.output("y");
  const ImportResult r = m.import();
  REQUIRE(r.graph.at("operations").size() == 1);
  CHECK(op(r, 0).at("kernel") == "conv2d");
  CHECK(op(r, 0).at("params").at("padding") == Json::array({1, 1}));
  CHECK_FALSE(op(r, 0).at("params").contains("groups"));
  CHECK(op(r, 0).at("inputs") == Json::parse(R"({"input": "img", "weight": "w", "bias": "b"})"));
  CHECK(op(r, 0).at("outputs").at("result") == "y");
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.findTensor("y")->type.shape == std::vector<std::int64_t>{1, 3, 5, 5});

  // Without B, the port is left out.
  Model plain;
  plain.input("img", {1, 2, 5, 5}).input("w", {3, 2, 3, 3});
  plain.node("Conv", {"img", "w"}, {"y"}, "conv");
  plain.output("y");
  const ImportResult p = plain.import();
  REQUIRE(p.graph.at("operations").size() == 1);
  CHECK(op(p, 0).at("inputs") == Json::parse(R"({"input": "img", "weight": "w"})"));

  // Pads that are not symmetric (top and left 1, bottom and right 0, as
  // TensorFlow's SAME padding exports at stride 2): the input is padded on
  // top and left with zeros first, then the convolution pads nothing.
  Model asym;
  asym.input("img", {1, 2, 5, 5}).input("w", {3, 2, 3, 3});
  setInts(asym.node("Conv", {"img", "w"}, {"y"}, "conv"), "pads", {1, 1, 0, 0});
  asym.output("y");
  const ImportResult a = asym.import();
  REQUIRE(a.graph.at("operations").size() == 3);
  CHECK(op(a, 0).at("kernel") == "concat");
  CHECK(op(a, 0).at("params").at("axis") == 2);
  CHECK(op(a, 0).at("inputs").at("tensors") == Json::parse(R"(["conv/pad_rows_before", "img"])"));
  CHECK(a.graph.at("tensors").at("conv/pad_rows_before").at("shape") ==
        Json::parse("[1, 2, 1, 5]"));
  CHECK(op(a, 1).at("params").at("axis") == 3);
  CHECK(op(a, 2).at("kernel") == "conv2d");
  CHECK(op(a, 2).at("params").at("padding") == Json::array({0, 0}));
  CHECK(expandImported(a).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 3, 4, 4});

  // A float16 input would need float16 constants: refused, saying why.
  Model half;
  half.input("img", {1, 2, 5, 5}, ::onnx::TensorProto::FLOAT16)
      .input("w", {3, 2, 3, 3}, ::onnx::TensorProto::FLOAT16);
  setInts(half.node("Conv", {"img", "w"}, {"y"}, "conv"), "pads", {1, 1, 0, 0});
  half.output("y");
  CHECK_THAT(failureOf([&] { half.import(); }).message,
             Contains("node conv (Conv): its pads are not symmetric, and tapestry pads a float16 "
                      "input with constants it cannot make"));
}

TEST_CASE("reductions over several axes are chains, highest axis first", "[onnx]") {
  Model m;
  m.input("x", {2, 3, 4});
  ::onnx::NodeProto& n = m.node("ReduceMean", {"x"}, {"y"}, "mean");
  setInts(n, "axes", {1, -1});
  setInt(n, "keepdims", 0);
  m.output("y");
  const ImportResult r = m.import();
  REQUIRE(r.graph.at("operations").size() == 2);
  CHECK(op(r, 0).at("params").at("axis") == 2);
  CHECK(op(r, 0).at("name") == "mean/axis2");
  CHECK(op(r, 1).at("params").at("axis") == 1);
  CHECK(op(r, 1).at("name") == "mean");
  CHECK(expandImported(r).findTensor("y")->type.shape == std::vector<std::int64_t>{2});
}

TEST_CASE("Identity is an alias, and Slice is normalized to full rank", "[onnx]") {
  Model m;
  m.input("x", {4, 6}).ints("st", {1}, {1}).ints("en", {1}, {-1}).ints("ax", {1}, {-1});
  m.node("Identity", {"x"}, {"x2"});
  m.node("Slice", {"x2", "st", "en", "ax"}, {"y"}, "cut");
  m.output("y");
  const ImportResult r = m.import();
  REQUIRE(r.graph.at("operations").size() == 1);
  CHECK(op(r, 0).at("inputs").at("input") == "x");
  CHECK(op(r, 0).at("params").at("starts") == Json::array({0, 1}));
  CHECK(op(r, 0).at("params").at("ends") == Json::array({4, 5}));
}

TEST_CASE("Dropout is an alias in inference, and training mode is refused", "[onnx]") {
  Model inference;
  inference.input("x", {4}).floats("ratio", {}, {0.5f}).flag("train", false);
  inference.node("Dropout", {"x", "ratio", "train"}, {"d"}, "drop");
  inference.node("Relu", {"d"}, {"y"}, "act");
  inference.output("y");
  const ImportResult r = inference.import();
  REQUIRE(r.graph.at("operations").size() == 1);
  CHECK(op(r, 0).at("inputs").at("input") == "x");

  Model training;
  training.input("x", {4}).floats("ratio", {}, {0.5f}).flag("train", true);
  training.node("Dropout", {"x", "ratio", "train"}, {"d"}, "drop");
  training.node("Relu", {"d"}, {"y"}, "act");
  training.output("y");
  const testing::Failure on = failureOf([&] { training.import(); });
  CHECK(on.code == ExitCode::InvalidInput);
  CHECK_THAT(on.message, Contains("drop") && Contains("its training_mode is true (random "
                                                      "dropping); tapestry imports inference "
                                                      "graphs"));

  Model asked;
  asked.input("x", {4}).input("train", {}, ::onnx::TensorProto::BOOL);
  asked.node("Dropout", {"x", "", "train"}, {"d"}, "drop");
  asked.node("Relu", {"d"}, {"y"}, "act");
  asked.output("y");
  CHECK_THAT(failureOf([&] { asked.import(); }).message,
             Contains("its training_mode input train is not a constant; tapestry imports "
                      "inference graphs (training_mode must be absent or a constant false)"));

  // Training mode with a constant ratio 0 drops nothing (torchvision's Swin
  // calls F.dropout(p=0.0) so), and a mask output that nothing reads (as
  // exporters name it) is no use of it; one that the graph returns is.
  Model none;
  none.input("x", {4}).floats("ratio", {}, {0.0f}).flag("train", true);
  none.node("Dropout", {"x", "ratio", "train"}, {"d", "mask"}, "drop");
  none.node("Relu", {"d"}, {"y"}, "act");
  none.output("y");
  const ImportResult rn = none.import();
  REQUIRE(rn.graph.at("operations").size() == 1);
  CHECK(op(rn, 0).at("inputs").at("input") == "x");
  Model masked = none;
  masked.output("mask");
  CHECK_THAT(failureOf([&] { masked.import(); }).message,
             Contains("its mask output is used; tapestry imports inference graphs"));
}

TEST_CASE("optional outputs that nothing reads are no use of them, a Split's results stay",
          "[onnx]") {
  // MaxPool's Indices named but unread; a Split whose second result nothing
  // reads still writes it under its name.
  Model m;
  m.input("x", {1, 1, 4, 4}).input("v", {4, 2});
  setInts(m.node("MaxPool", {"x"}, {"p", "idx"}, "pool"), "kernel_shape", {2, 2});
  setInt(m.node("Split", {"v"}, {"a", "b"}, "halves"), "num_outputs", 2);
  m.output("p").output("a");
  const ImportResult r = m.import();
  CHECK(kernelsOf(r) == std::vector<std::string>{"pool:maxpool2d", "halves:split"});
  CHECK(op(r, 1).at("outputs").at("results") == Json::array({"a", "b"}));
  Model used = m;
  used.output("idx");
  CHECK_THAT(failureOf([&] { used.import(); }).message,
             Contains("its Indices output is used; tapestry pools give values only"));
}

TEST_CASE("a graph output that repeats another value keeps its own name", "[onnx]") {
  Model m;
  m.input("x", {2, 3}).input("flag", {2, 3}, ::onnx::TensorProto::BOOL);
  m.node("Identity", {"x"}, {"same"}, "id");
  m.node("Relu", {"x"}, {"r"}, "act");
  m.node("Identity", {"r"}, {"r2"}, "id2");
  m.node("Identity", {"flag"}, {"flag_out"}, "id3");
  m.output("same").output("r2").output("flag_out").output("r");
  const ImportResult r = m.import();
  CHECK(r.graph.at("outputs") == Json::array({"same", "r2", "flag_out", "r"}));
  REQUIRE(r.graph.at("operations").size() == 4);
  CHECK(op(r, 1).at("kernel") == "reshape");
  CHECK(op(r, 1).at("inputs").at("input") == "x");
  CHECK(op(r, 1).at("outputs").at("result") == "same");
  CHECK(op(r, 1).at("params").at("shape") == Json::array({2, 3}));
  CHECK(op(r, 2).at("inputs").at("input") == "r");
  CHECK(op(r, 3).at("inputs").at("input") == "flag");
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.outputs.size() == 4);
}

TEST_CASE("symbolic dims are bound with --dim, and must be", "[onnx]") {
  Model m;
  m.input("x", {"batch", 4});
  m.node("Relu", {"x"}, {"y"}, "act");
  m.output("y");
  ImportOptions options;
  options.dims["batch"] = 3;
  const ImportResult r = m.import(options);
  CHECK(r.graph.at("tensors").at("x").at("shape") == Json::array({3, 4}));
  CHECK(failureOf([&] { m.import(); }).message ==
        "graph input x has the symbolic dim batch (dim 0); bind it with --dim batch=N");
  ImportOptions wrong;
  wrong.dims["seq"] = 3;
  const testing::Failure f = failureOf([&] { m.import(wrong); });
  CHECK(f.code == ExitCode::Usage);
  CHECK(f.message == "--dim seq=3: no input of the model has a dim named seq (its symbolic dims: "
                     "batch)");
}

TEST_CASE("bad models are errors that say what is wrong", "[onnx]") {
  Model m;
  m.input("a", {2, 3}).input("b", {3, 4});
  m.node("Einsum", {"a", "b"}, {"c"}, "contract");
  m.output("c");
  const testing::Failure unsupported = failureOf([&] { m.import(); });
  CHECK(unsupported.code == ExitCode::InvalidInput);
  CHECK_THAT(unsupported.message,
             Contains("unsupported ONNX operator Einsum (node contract); tapestry imports: Abs, "));
  CHECK_THAT(unsupported.message, Contains(", Add, ") && Contains(", AveragePool, "));
  const std::string bytes = m.bytes();
  const testing::Failure truncated =
      failureOf([&] { importModel(bytes.substr(0, bytes.size() / 2), "m.onnx", {}); });
  CHECK(truncated.location == "m.onnx");
  CHECK_THAT(truncated.message, Contains("not an ONNX model"));
  CHECK_THAT(failureOf([&] { importModel("", "m.onnx", {}); }).message,
             Contains("not an ONNX model"));
  Model empty;
  empty.input("x", {2});
  empty.output("x");
  CHECK(failureOf([&] { empty.import(); }).message == "the model's graph has no nodes");
}

TEST_CASE("Gemm with alpha, beta and a 2-D C is matmul, scalings and an add", "[onnx]") {
  Model m;
  m.input("a", {3, 4}).input("b", {5, 3}).input("c", {4, 5});
  ::onnx::NodeProto& n = m.node("Gemm", {"a", "b", "c"}, {"y"}, "g");
  setInt(n, "transA", 1);
  setInt(n, "transB", 1);
  setFloat(n, "alpha", 2.0f);
  setFloat(n, "beta", 0.5f);
  m.output("y");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels == std::vector<std::string>{"g:matmul", "g/alpha:mul_scalar", "g/beta:mul_scalar",
                                            "g/add_C:add"});
  CHECK(op(r, 0).at("params") == Json{{"transpose_x", true}, {"transpose_w", true}});
  CHECK(op(r, 1).at("params").at("value") == 2.0);
  CHECK(op(r, 2).at("params").at("value") == 0.5);
  CHECK(op(r, 3).at("outputs").at("result") == "y");
  CHECK(expandImported(r).findTensor("y")->type.shape == std::vector<std::int64_t>{4, 5});
}

TEST_CASE("pools, global pooling, batchnorm and depthwise convolution", "[onnx]") {
  Model m;
  m.input("x", {1, 4, 8, 8}).input("dw", {4, 1, 3, 3});
  m.input("s", {4}).input("b", {4}).input("mu", {4}).input("var", {4});
  ::onnx::NodeProto& conv = m.node("Conv", {"x", "dw"}, {"c"}, "depthwise");
  setInt(conv, "group", 4);
  setString(conv, "auto_pad", "SAME_UPPER");
  setFloat(m.node("BatchNormalization", {"c", "s", "b", "mu", "var"}, {"n"}, "bn"), "epsilon",
           1e-3f);
  ::onnx::NodeProto& mp = m.node("MaxPool", {"n"}, {"p"}, "pool");
  setInts(mp, "kernel_shape", {2, 2});
  setInts(mp, "strides", {2, 2});
  ::onnx::NodeProto& ap = m.node("AveragePool", {"p"}, {"q"}, "avg");
  setInts(ap, "kernel_shape", {3, 3});
  setInts(ap, "pads", {1, 1, 1, 1});
  setInt(ap, "count_include_pad", 1);
  m.node("GlobalAveragePool", {"q"}, {"y"}, "gap");
  m.output("y");
  const ImportResult r = m.import();
  REQUIRE(r.graph.at("operations").size() == 5);
  CHECK(op(r, 0).at("params") == Json::parse(R"({"stride": [1, 1], "padding": [1, 1],
                                                 "dilation": [1, 1], "groups": 4})"));
  CHECK(op(r, 1).at("kernel") == "batchnorm");
  CHECK(op(r, 1).at("inputs").at("var") == "var");
  CHECK(op(r, 2).at("kernel") == "maxpool2d");
  CHECK(op(r, 2).at("params") == Json::parse(R"({"kernel": [2, 2], "stride": [2, 2],
                                                 "padding": [0, 0], "dilation": [1, 1]})"));
  CHECK(op(r, 3).at("kernel") == "avgpool2d");
  CHECK(op(r, 3).at("params").at("count_include_pad") == true);
  CHECK(op(r, 4).at("kernel") == "global_avgpool");

  // ceil_mode: the output size rounds up (5 -> 3 with a window of 2 at stride 2).
  Model ceil;
  ceil.input("x", {1, 1, 5, 5});
  ::onnx::NodeProto& c = ceil.node("MaxPool", {"x"}, {"y"}, "pool");
  setInts(c, "kernel_shape", {2, 2});
  setInts(c, "strides", {2, 2});
  setInt(c, "ceil_mode", 1);
  ceil.output("y");
  const ImportResult rc = ceil.import();
  CHECK(op(rc, 0).at("params").at("ceil_mode") == true);
  CHECK(expandImported(rc).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 1, 3, 3});

  // An average whose divisor counts padding, where rounding up adds windows
  // that reach past it: refused, naming the node.
  Model avg;
  avg.input("x", {1, 1, 4, 4});
  ::onnx::NodeProto& a = avg.node("AveragePool", {"x"}, {"y"}, "avg");
  setInts(a, "kernel_shape", {3, 3});
  setInts(a, "strides", {2, 2});
  setInt(a, "ceil_mode", 1);
  setInt(a, "count_include_pad", 1);
  avg.output("y");
  const ImportResult ra = avg.import();
  CHECK_THAT(failureOf([&] { (void)expandImported(ra); }).message,
             Contains("ceil_mode with count_include_pad is supported only where the output size "
                      "is the same rounded down"));
}

TEST_CASE("1-D convolutions and pools run as 2-D ones of height 1", "[onnx]") {
  // Conv1d (a constant weight, reshaped once into a constant), then a max
  // pool with padding, on [N, C, L] tensors.
  Model m;
  m.input("x", {2, 3, 10}).floats("w", {4, 3, 3}, std::vector<float>(36, 0.5f));
  ::onnx::NodeProto& conv = m.node("Conv", {"x", "w"}, {"c"}, "conv");
  setInts(conv, "strides", {2});
  setInts(conv, "pads", {1, 1});
  ::onnx::NodeProto& mp = m.node("MaxPool", {"c"}, {"y"}, "pool");
  setInts(mp, "kernel_shape", {2});
  setInts(mp, "pads", {1, 1});
  m.output("y");
  const ImportResult r = m.import();
  const Json& ops = r.graph.at("operations");
  std::vector<std::string> kernels;
  for (const Json& o : ops) {
    kernels.push_back(o.at("kernel").get<std::string>());
  }
  CHECK(kernels == std::vector<std::string>{"reshape", "conv2d", "reshape", "reshape", "maxpool2d",
                                            "reshape"});
  CHECK(op(r, 1).at("params") == Json::parse(R"({"stride": [1, 2], "padding": [0, 1],
                                                 "dilation": [1, 1]})"));
  CHECK(op(r, 1).at("inputs").at("weight") == "w/2d");
  CHECK(r.graph.at("tensors").at("w/2d").at("shape") == Json::parse("[4, 3, 1, 3]"));
  CHECK_FALSE(r.graph.at("tensors").contains("w"));
  CHECK(op(r, 4).at("params").at("kernel") == Json::parse("[1, 2]"));
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.findTensor("c")->type.shape == std::vector<std::int64_t>{2, 4, 5});
  CHECK(g.findTensor("y")->type.shape == std::vector<std::int64_t>{2, 4, 6}); // stride 1

  // A max pool's pads that are not symmetric: -infinity padded on first.
  Model lower;
  lower.input("x", {1, 1, 6});
  ::onnx::NodeProto& mx = lower.node("MaxPool", {"x"}, {"y"}, "max");
  setInts(mx, "kernel_shape", {2});
  setInts(mx, "pads", {1, 0});
  lower.output("y");
  const ImportResult rl = lower.import();
  CHECK(op(rl, 1).at("kernel") == "concat");
  CHECK(op(rl, 1).at("params").at("axis") == 3);
  CHECK(expandImported(rl).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 1, 6});
  // An average that does not count padding cannot be padded first.
  Model bad;
  bad.input("x", {1, 1, 6});
  ::onnx::NodeProto& ap = bad.node("AveragePool", {"x"}, {"y"}, "avg");
  setInts(ap, "kernel_shape", {3});
  setInts(ap, "pads", {1, 0});
  bad.output("y");
  CHECK_THAT(failureOf([&] { bad.import(); }).message,
             Contains("node avg (AveragePool): pads that are not symmetric with "
                      "count_include_pad 0 are not supported"));

  // 3-D is still refused, saying what is supported.
  Model vol;
  vol.input("x", {1, 1, 4, 4, 4});
  setInts(vol.node("MaxPool", {"x"}, {"y"}, "pool3d"), "kernel_shape", {2, 2, 2});
  vol.output("y");
  CHECK_THAT(failureOf([&] { vol.import(); }).message,
             Contains("only 1-D and 2-D windows over [N, C, L] and [N, C, H, W] inputs are "
                      "supported"));
}

TEST_CASE("ConvTranspose is a stride-1 convolution of the spread input by the flipped weight",
          "[onnx]") {
  // Depthwise, stride 2, kernel 3, no pads: the input spread out ([1, 2, 3,
  // 3] -> [1, 2, 6, 6], each element first in a 2 x 2 block of zeros), padded
  // by kernel - 1 = 2 rows and columns before and 1 after (the spread's own
  // trailing zero is the other), convolved by the weight flipped: made once,
  // as a constant, from the constant weight.
  Model m;
  std::vector<float> w(18);
  std::iota(w.begin(), w.end(), 1.0f);
  m.input("x", {1, 2, 3, 3}).floats("w", {2, 1, 3, 3}, w);
  ::onnx::NodeProto& dw = m.node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  setInts(dw, "strides", {2, 2});
  setInt(dw, "group", 2);
  m.output("y");
  const ImportResult r = m.import();
  CHECK(kernelsOf(r) == std::vector<std::string>{"up/cells:reshape", "up/spread_cells:where",
                                                 "up/spread:reshape", "up/pad_rows:concat",
                                                 "up/pad_columns:concat", "up:conv2d"});
  CHECK(op(r, 5).at("params") == Json::parse(R"({"stride": [1, 1], "padding": [1, 1],
                                                 "dilation": [1, 1], "groups": 2})"));
  CHECK_FALSE(r.graph.at("tensors").contains("w"));
  const auto [fshape, flipped] = floatConstant(r, "w/flipped");
  CHECK(fshape == std::vector<std::int64_t>{2, 1, 3, 3});
  CHECK(flipped ==
        std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1, 18, 17, 16, 15, 14, 13, 12, 11, 10});
  CHECK(expandImported(r).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 2, 7, 7});

  // A weight that is a graph input: gathered in reverse along KH and KW and
  // transposed by operations; pads past the kernel's reach crop the input.
  Model in;
  in.input("x", {1, 2, 4, 4}).input("w", {2, 3, 2, 2});
  setInts(in.node("ConvTranspose", {"x", "w"}, {"y"}, "up"), "pads", {2, 0, 1, 0});
  in.output("y");
  const ImportResult ri = in.import();
  CHECK(kernelsOf(ri) == std::vector<std::string>{"up/crop:slice", "up/weight_flip2:gather",
                                                  "up/weight_flip3:gather",
                                                  "up/weight_transposed:transpose", "up:conv2d"});
  CHECK(op(ri, 0).at("params") == Json::parse(R"({"starts": [0, 0, 1, 0], "ends": [1, 2, 4, 4]})"));
  CHECK(expandImported(ri).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 3, 2, 5});
}

TEST_CASE("ConvTranspose of one group and a stride runs as the stride's phases", "[onnx]") {
  // Kernel 5 of stride 3 (1-D), no pads: output u = 3q + a reads x[q - j]
  // through the kernel tap a + 3j (j < ceil(5 / 3) = 2), so one convolution
  // of the input (padded by one each side: q runs 0-3 for the 11 outputs) to
  // O * 3 channels by 2 taps, channel (o, a) phase a's, the taps flipped and
  // zero past the kernel; then the channels moved into place and the twelfth
  // output cut off.
  std::vector<float> w10(10);
  std::iota(w10.begin(), w10.end(), 1.0f);
  Model line;
  line.input("x", {1, 1, 3}).floats("w", {1, 2, 5}, w10);
  setInts(line.node("ConvTranspose", {"x", "w"}, {"y"}, "up"), "strides", {3});
  line.output("y");
  const ImportResult rl = line.import();
  CHECK(kernelsOf(rl) == std::vector<std::string>{"up/input_2d:reshape", "up/phases:conv2d",
                                                  "up/phase_cells:reshape", "up/placed:transpose",
                                                  "up/interleaved:reshape", "up/cut:slice",
                                                  "up:reshape"});
  CHECK(op(rl, 1).at("params") == Json::parse(R"({"stride": [1, 1], "padding": [0, 1],
                                                  "dilation": [1, 1]})"));
  CHECK(op(rl, 5).at("params") ==
        Json::parse(R"({"starts": [0, 0, 0, 0], "ends": [1, 2, 1, 11]})"));
  const auto [lshape, lphases] = floatConstant(rl, "w/phases");
  CHECK(lshape == std::vector<std::int64_t>{6, 1, 1, 2});
  CHECK(lphases == std::vector<float>{4, 1, 5, 2, 0, 3, 9, 6, 10, 7, 0, 8});
  CHECK(expandImported(rl).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 2, 11});

  // Kernel 3 of stride 2: output row u = 2q + a reads x[q - j] through the
  // kernel row a + 2j (j < ceil(3 / 2) = 2), so one convolution of the input
  // (padded by one each side: q runs 0-3 for the 7 rows) to O * 2 * 2
  // channels by 2 x 2 taps, channel (o, a, b) phase (a, b)'s, the taps flipped
  // and zero past the kernel; then the channels moved into place and the
  // eighth row and column cut off.
  std::vector<float> w(18);
  std::iota(w.begin(), w.end(), 1.0f);
  Model ph;
  ph.input("x", {1, 1, 3, 3}).floats("w", {1, 2, 3, 3}, w);
  setInts(ph.node("ConvTranspose", {"x", "w"}, {"y"}, "up"), "strides", {2, 2});
  ph.output("y");
  const ImportResult rp = ph.import();
  CHECK(kernelsOf(rp) == std::vector<std::string>{"up/phases:conv2d", "up/phase_cells:reshape",
                                                  "up/placed:transpose", "up/interleaved:reshape",
                                                  "up:slice"});
  CHECK(op(rp, 0).at("params") == Json::parse(R"({"stride": [1, 1], "padding": [1, 1],
                                                  "dilation": [1, 1]})"));
  CHECK(op(rp, 4).at("params") == Json::parse(R"({"starts": [0, 0, 0, 0], "ends": [1, 2, 7, 7]})"));
  const auto [pshape, phases] = floatConstant(rp, "w/phases");
  CHECK(pshape == std::vector<std::int64_t>{8, 1, 2, 2});
  CHECK(phases == std::vector<float>{9,  7,  3,  1,  0, 8,  0, 2,  0, 0, 6,  4,  0, 0, 0, 5,
                                     18, 16, 12, 10, 0, 17, 0, 11, 0, 0, 15, 13, 0, 0, 0, 14});
  CHECK(expandImported(rp).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 2, 7, 7});

  // Kernel 2 of stride 2 (U-Net's): one tap per phase, so a 1 x 1
  // convolution to O * 2 * 2 channels, then the channels moved into their
  // blocks; the weight [C, O, 2, 2] made [O * 4, C, 1, 1], the bias repeated;
  // nothing to cut.
  Model tiled;
  std::vector<float> w8(8);
  std::iota(w8.begin(), w8.end(), 1.0f);
  tiled.input("x", {1, 2, 3, 3}).floats("w", {2, 1, 2, 2}, w8).floats("b", {1}, {0.5f});
  setInts(tiled.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "up"), "strides", {2, 2});
  tiled.output("y");
  const ImportResult rt = tiled.import();
  CHECK(kernelsOf(rt) == std::vector<std::string>{"up/phases:conv2d", "up/phase_cells:reshape",
                                                  "up/placed:transpose", "up:reshape"});
  const auto [tshape, tiles] = floatConstant(rt, "w/phases");
  CHECK(tshape == std::vector<std::int64_t>{4, 2, 1, 1});
  CHECK(tiles == std::vector<float>{1, 5, 2, 6, 3, 7, 4, 8});
  CHECK(floatConstant(rt, "b/phases").second == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
  CHECK(expandImported(rt).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 1, 6, 6});

  // The same with a weight that is a graph input: moved by a transpose and
  // a reshape.
  Model moved;
  moved.input("x", {1, 2, 3, 3}).input("w", {2, 1, 2, 2});
  setInts(moved.node("ConvTranspose", {"x", "w"}, {"y"}, "up"), "strides", {2, 2});
  moved.output("y");
  CHECK(kernelsOf(moved.import()) ==
        std::vector<std::string>{"up/weight_moved:transpose", "up/weight_phases:reshape",
                                 "up/phases:conv2d", "up/phase_cells:reshape",
                                 "up/placed:transpose", "up:reshape"});
}

TEST_CASE("Conv refuses a group that does not divide its channels", "[onnx]") {
  // 3 groups of a weight with 4 output channels: refused before any kernel.
  Model badConv;
  badConv.input("x", {1, 6, 3, 3}).floats("w", {4, 2, 1, 1}, std::vector<float>(8, 1.0f));
  setInt(badConv.node("Conv", {"x", "w"}, {"y"}, "c"), "group", 3);
  badConv.output("y");
  const auto refused = failureOf([&] { badConv.import(); });
  CHECK(refused.code == ExitCode::InvalidInput);
  CHECK_THAT(refused.message,
             Contains("node c (Conv): group 3 does not divide the weight's 4 output channels, or "
                      "the input's 6 channels are not group x the weight's 2"));
}

TEST_CASE("ConvTranspose refuses other groups, 3-D, and pads or strides past its bounds",
          "[onnx]") {
  // A group count that does not divide the input channels, a grouped weight
  // that is not constant (other than depthwise), and 3-D are refused.
  Model uneven;
  uneven.input("x", {1, 4, 3, 3}).floats("w", {4, 2, 1, 1}, std::vector<float>(8, 1.0f));
  setInt(uneven.node("ConvTranspose", {"x", "w"}, {"y"}, "g"), "group", 3);
  uneven.output("y");
  CHECK_THAT(failureOf([&] { uneven.import(); }).message,
             Contains("node g (ConvTranspose): group 3 with 4 input channels and a weight of 4: "
                      "the group count must divide the input channels, which the weight's "
                      "first dim must equal"));
  Model varying;
  varying.input("x", {1, 4, 3, 3}).input("w", {4, 2, 1, 1});
  setInt(varying.node("ConvTranspose", {"x", "w"}, {"y"}, "v"), "group", 2);
  varying.output("y");
  CHECK_THAT(failureOf([&] { varying.import(); }).message,
             Contains("node v (ConvTranspose): a grouped ConvTranspose needs a constant weight"));
  // An output_shape that would pad the input by millions: refused
  // before anything is made.
  Model huge;
  huge.input("x", {1, 1, 3, 3}).input("w", {1, 1, 2, 2});
  setInts(huge.node("ConvTranspose", {"x", "w"}, {"y"}, "h"), "output_shape", {5000000, 4});
  huge.output("y");
  CHECK_THAT(failureOf([&] { huge.import(); }).message,
             Contains("its pads or output_shape would pad the input by 2499999 along "
                      "spatial dim 0 (at most 65536)"));
  // Pads longer than any output could be: refused before any arithmetic on
  // them.
  Model far;
  far.input("x", {1, 1, 3, 3}).input("w", {1, 1, 2, 2});
  setInts(far.node("ConvTranspose", {"x", "w"}, {"y"}, "f"), "pads",
          {std::int64_t{1} << 50, 0, 0, 0});
  far.output("y");
  CHECK_THAT(failureOf([&] { far.import(); }).message,
             Contains("node f (ConvTranspose): its output along spatial dim 0 or its pads would "
                      "be longer than 2^40"));
  // A kernel_shape that is not the weight's, and strides whose spread would
  // not fit.
  Model kshape;
  kshape.input("x", {1, 1, 3, 3}).input("w", {1, 1, 2, 2});
  setInts(kshape.node("ConvTranspose", {"x", "w"}, {"y"}, "k"), "kernel_shape", {3, 3});
  kshape.output("y");
  CHECK_THAT(failureOf([&] { kshape.import(); }).message,
             Contains("kernel_shape [3, 3] is not the weight's spatial shape"));
  Model wide;
  wide.input("x", {1, 1, 3, 3}).input("w", {1, 1, 2, 2});
  setInts(wide.node("ConvTranspose", {"x", "w"}, {"y"}, "s"), "strides", {1000, 1000});
  wide.output("y");
  CHECK_THAT(failureOf([&] { wide.import(); }).message,
             Contains("strides [1000, 1000] spread each input element over 1000000 cells (at "
                      "most 65536)"));
  Model vol;
  vol.input("x", {1, 1, 2, 2, 2}).input("w", {1, 1, 2, 2, 2});
  vol.node("ConvTranspose", {"x", "w"}, {"y"}, "v");
  vol.output("y");
  CHECK_THAT(failureOf([&] { vol.import(); }).message,
             Contains("only 1-D and 2-D transposed convolutions"));
}

TEST_CASE("layernorm, split, gather, where, clip, cast, concat, flatten", "[onnx]") {
  Model m;
  m.input("x", {2, 6}).input("ids", {3}, ::onnx::TensorProto::INT64);
  m.input("cond", {2, 6}, ::onnx::TensorProto::BOOL);
  m.floats("gamma", {6}, {1, 1, 1, 1, 1, 1}).floats("table", {10, 6}, std::vector<float>(60, 0.5f));
  m.floats("lo", {}, {0}).floats("hi", {}, {6}).ints("parts", {2}, {2, 4});
  m.node("LayerNormalization", {"x", "gamma"}, {"ln"}, "norm");
  setInt(m.node("Split", {"ln", "parts"}, {"s0", "s1"}, "split"), "axis", 1);
  m.node("Gather", {"table", "ids"}, {"emb"}, "lookup");
  m.node("Where", {"cond", "x", "ln"}, {"w"}, "mask");
  m.node("Clip", {"w", "lo", "hi"}, {"c"}, "relu6");
  setInt(m.node("Cast", {"ids"}, {"ids32"}, "cast"), "to", ::onnx::TensorProto::INT32);
  setInt(m.node("Concat", {"s1", "s0"}, {"cat"}, "cat"), "axis", 1);
  m.node("Flatten", {"emb"}, {"flat"}, "flatten");
  for (const char* o : {"c", "ids32", "cat", "flat"}) {
    m.output(o);
  }
  const ImportResult r = m.import();
  REQUIRE(r.graph.at("operations").size() == 8);
  CHECK(op(r, 0).at("kernel") == "layernorm");
  CHECK(op(r, 0).at("inputs").at("beta") == "norm/beta"); // a zero constant
  CHECK(op(r, 1).at("params") == Json::parse(R"({"axis": 1, "sections": [2, 4]})"));
  CHECK(op(r, 1).at("outputs").at("results") == Json::array({"s0", "s1"}));
  CHECK(op(r, 2).at("kernel") == "embedding");
  CHECK(op(r, 3).at("inputs") == Json::parse(R"({"condition": "cond", "X": "x", "Y": "ln"})"));
  CHECK(op(r, 4).at("params") == Json::parse(R"({"min": 0.0, "max": 6.0})"));
  CHECK(op(r, 5).at("params").at("dtype") == "int32");
  CHECK(op(r, 6).at("inputs").at("tensors") == Json::array({"s1", "s0"}));
  CHECK(op(r, 7).at("params").at("shape") == Json::array({3, 6}));
  std::vector<std::string> names;
  for (const TensorData& t : r.constants) {
    names.push_back(t.name);
  }
  CHECK(names == std::vector<std::string>{"gamma", "norm/beta", "table"});
}

TEST_CASE("Sum is a chain of adds, HardSigmoid and HardSwish one kernel each", "[onnx]") {
  Model m;
  m.input("a", {2, 3}).input("b", {3}).input("c", {2, 1});
  m.node("Sum", {"a", "b", "c"}, {"s"}, "sum");
  ::onnx::NodeProto& hs = m.node("HardSigmoid", {"s"}, {"h"}, "hsig");
  setFloat(hs, "alpha", 0.25f);
  m.node("HardSwish", {"h"}, {"y"}, "hswish");
  m.output("y");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels == std::vector<std::string>{"sum/add1:add", "sum:add", "hsig:hard_sigmoid",
                                            "hswish:hard_swish"});
  CHECK(op(r, 2).at("params") == Json::parse(R"({"alpha": 0.25, "beta": 0.5})"));
  CHECK(op(r, 3).at("inputs") == Json::parse(R"({"input": "h"})"));
  CHECK(r.graph.at("outputs") == Json::array({"y"}));
}
