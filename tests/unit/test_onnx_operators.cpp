// Tests for core/onnx's operator handlers added for ONNX's backend test suite
// (issue 34): reductions, indexing and shape operators, LayerNormalization on
// any axis, values given at import, constant outputs, Pow's dtypes, old opsets,
// function bodies, refusals by feature, GatherElements, and the elementwise
// operators. Models are built in memory (onnx_model.hpp).
#include <limits>

#include "tests/unit/onnx_model.hpp"

TEST_CASE("ReduceMin, ReduceProd and the composite reductions: steps around a sum chain",
          "[onnx]") {
  Model m;
  m.input("x", {2, 3, 4});
  setInts(m.node("ReduceMin", {"x"}, {"lo"}, "lo"), "axes", {0});
  setInt(m.node("ReduceProd", {"x"}, {"pr"}, "pr"), "keepdims", 0);
  setInts(m.node("ReduceL2", {"x"}, {"l2"}, "l2"), "axes", {-1, 1});
  setInts(m.node("ReduceLogSumExp", {"x"}, {"lse"}, "lse"), "axes", {2});
  m.node("ReduceL1", {"x"}, {"l1"}, "l1");
  m.output("lo").output("pr").output("l2").output("lse").output("l1");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels == std::vector<std::string>{"lo:min", "pr/axis2:prod", "pr/axis1:prod", "pr:prod",
                                            "l2/mul:mul", "l2/axis2:sum", "l2/axis1:sum", "l2:sqrt",
                                            "lse/exp:exp", "lse/axis2:sum", "lse:log", "l1/abs:abs",
                                            "l1/axis2:sum", "l1/axis1:sum", "l1:sum"});
  CHECK(op(r, 4).at("inputs") == Json::parse(R"({"A": "x", "B": "x"})"));
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.findTensor("lo")->type.shape == std::vector<std::int64_t>{1, 3, 4});
  CHECK(g.findTensor("pr")->type.shape == std::vector<std::int64_t>{});
  CHECK(g.findTensor("l2")->type.shape == std::vector<std::int64_t>{2, 1, 1});
  CHECK(g.findTensor("lse")->type.shape == std::vector<std::int64_t>{2, 3, 1});
  CHECK(g.findTensor("l1")->type.shape == std::vector<std::int64_t>{1, 1, 1});
}

TEST_CASE("ArgMax and ArgMin are argmax and argmin with int64 results", "[onnx]") {
  Model m;
  m.input("x", {2, 3, 4});
  ::onnx::NodeProto& a = m.node("ArgMax", {"x"}, {"i"}, "amax");
  setInt(a, "axis", -1);
  setInt(a, "keepdims", 0);
  setInt(a, "select_last_index", 1);
  m.node("ArgMin", {"x"}, {"j"}, "amin");
  m.output("i").output("j");
  const ImportResult r = m.import();
  REQUIRE(r.graph.at("operations").size() == 2);
  CHECK(op(r, 0).at("kernel") == "argmax");
  CHECK(op(r, 0).at("params") ==
        Json::parse(R"({"axis": -1, "keepdims": false, "select_last_index": true})"));
  CHECK(op(r, 1).at("kernel") == "argmin");
  CHECK(op(r, 1).at("params") ==
        Json::parse(R"({"axis": 0, "keepdims": true, "select_last_index": false})"));
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.findTensor("i")->type.shape == std::vector<std::int64_t>{2, 3});
  CHECK(g.findTensor("i")->type.dtype == "int64");
  CHECK(g.findTensor("j")->type.shape == std::vector<std::int64_t>{1, 3, 4});
}

TEST_CASE("Trilu, CumSum, DepthToSpace, SpaceToDepth and Tile from standard kernels", "[onnx]") {
  Model m;
  m.input("x", {2, 3, 4}).ints("k", {}, {1}).ints("axis", {}, {1}).ints("reps", {3}, {1, 2, 3});
  m.input("img", {1, 8, 2, 3});
  m.node("Trilu", {"x", "k"}, {"upper"}, "triu");
  m.node("CumSum", {"x", "axis"}, {"sums"}, "cumsum");
  ::onnx::NodeProto& d2s = m.node("DepthToSpace", {"img"}, {"d2s"}, "d2s");
  setInt(d2s, "blocksize", 2);
  setString(d2s, "mode", "CRD");
  setInt(m.node("SpaceToDepth", {"d2s"}, {"s2d"}, "s2d"), "blocksize", 2);
  m.node("Tile", {"x", "reps"}, {"tiled"}, "tile");
  setInt(m.node("DepthToSpace", {"img"}, {"dcr"}, "dcr"), "blocksize", 2);
  m.output("upper").output("sums").output("s2d").output("tiled").output("dcr");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels ==
        std::vector<std::string>{"triu:where", "cumsum/axis_last:transpose", "cumsum/sums:matmul",
                                 "cumsum:transpose", "d2s/blocks:reshape", "d2s/moved:transpose",
                                 "d2s:reshape", "s2d/blocks:reshape", "s2d/moved:transpose",
                                 "s2d:reshape", "tile/axis1:concat", "tile:concat",
                                 "dcr/blocks:reshape", "dcr/moved:transpose", "dcr:reshape"});
  // the kept triangle: col - row >= 1
  const TensorData* mask = nullptr;
  const TensorData* prefix = nullptr;
  for (const TensorData& c : r.constants) {
    mask = c.name == "triu/mask" ? &c : mask;
    prefix = c.name == "cumsum/prefix" ? &c : prefix;
  }
  REQUIRE(mask != nullptr);
  REQUIRE(mask->bytes.size() == 12);
  CHECK(mask->bytes == std::string("\0\1\1\1\0\0\1\1\0\0\0\1", 12));
  REQUIRE(prefix != nullptr);
  REQUIRE(prefix->bytes.size() == 9 * sizeof(float));
  std::vector<float> t(9);
  std::memcpy(t.data(), prefix->bytes.data(), prefix->bytes.size());
  CHECK(t == std::vector<float>{1, 1, 1, 0, 1, 1, 0, 0, 1});
  CHECK(op(r, 1).at("params").at("perm") == Json::parse("[0, 2, 1]"));
  CHECK(op(r, 5).at("params").at("perm") == Json::parse("[0, 1, 4, 2, 5, 3]"));
  CHECK(op(r, 13).at("params").at("perm") == Json::parse("[0, 3, 4, 1, 5, 2]"));
  CHECK(op(r, 10).at("inputs").at("tensors") == Json::parse(R"(["x", "x"])"));
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.findTensor("upper")->type.shape == std::vector<std::int64_t>{2, 3, 4});
  CHECK(g.findTensor("sums")->type.shape == std::vector<std::int64_t>{2, 3, 4});
  CHECK(g.findTensor("s2d")->type.shape == std::vector<std::int64_t>{1, 8, 2, 3});
  CHECK(g.findTensor("tiled")->type.shape == std::vector<std::int64_t>{2, 6, 12});
  CHECK(g.findTensor("dcr")->type.shape == std::vector<std::int64_t>{1, 2, 4, 6});
}

TEST_CASE("Hardmax, Expand and Pad from standard kernels", "[onnx]") {
  Model m;
  m.input("x", {2, 3}).ints("shape", {3}, {4, 2, 3}).ints("pads", {4}, {1, -1, 0, 2});
  m.node("Hardmax", {"x"}, {"h"}, "hmax");
  m.node("Expand", {"x", "shape"}, {"big"}, "expand");
  ::onnx::NodeProto& p = m.node("Pad", {"x", "pads"}, {"padded"}, "pad");
  setString(p, "mode", "edge");
  m.output("h").output("big").output("padded");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels == std::vector<std::string>{"hmax/argmax:argmax", "hmax/cast:cast", "hmax/sub:sub",
                                            "hmax/abs:abs", "hmax/clip:clip", "hmax:rsub_scalar",
                                            "expand:where", "pad/cut:slice", "pad/axis0_at0:slice",
                                            "pad/axis0:concat", "pad/axis1_at1:slice",
                                            "pad:concat"});
  CHECK(op(r, 7).at("params") == Json::parse(R"({"starts": [0, 1], "ends": [2, 3]})"));
  CHECK(op(r, 9).at("inputs").at("tensors") == Json::parse(R"(["pad/axis0_at0", "pad/cut"])"));
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.findTensor("h")->type.shape == std::vector<std::int64_t>{2, 3});
  CHECK(g.findTensor("big")->type.shape == std::vector<std::int64_t>{4, 2, 3});
  CHECK(g.findTensor("padded")->type.shape == std::vector<std::int64_t>{3, 4});

  // Pads of zero (DenseNet's before each average pool) are no operation.
  Model none;
  none.input("x", {2, 3}).ints("pads", {4}, {0, 0, 0, 0});
  none.node("Pad", {"x", "pads"}, {"padded"}, "pad");
  none.node("Relu", {"padded"}, {"y"}, "relu");
  none.output("y");
  const ImportResult alias = none.import();
  CHECK(kernelsOf(alias) == std::vector<std::string>{"relu:relu"});
  CHECK(op(alias, 0).at("inputs").at("input") == "x");
}

TEST_CASE("LayerNormalization over several dims reads rows, and gives Mean and InvStdDev",
          "[onnx]") {
  Model m;
  m.input("x", {2, 3, 4}).input("scale", {3, 4}).input("bias", {3, 4});
  ::onnx::NodeProto& n =
      m.node("LayerNormalization", {"x", "scale", "bias"}, {"y", "mean", "inv_std"}, "norm");
  setInt(n, "axis", 1);
  setFloat(n, "epsilon", 0.5f);
  m.output("y").output("mean").output("inv_std");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels == std::vector<std::string>{
                       "norm/rows:reshape", "norm/scale:reshape", "norm/bias:reshape",
                       "norm:layernorm", "norm/shape:reshape", "norm/mean:mean",
                       "norm/mean_shape:reshape", "norm/centered:sub", "norm/squared:mul",
                       "norm/variance:mean", "norm/variance_eps:add_scalar", "norm/stddev:sqrt",
                       "norm/inv_stddev:reciprocal", "norm/inv_stddev_shape:reshape"});
  CHECK(op(r, 0).at("params").at("shape") == Json::array({2, 12}));
  CHECK(op(r, 1).at("params").at("shape") == Json::array({12}));
  CHECK(op(r, 3).at("params").at("eps") == 0.5);
  CHECK(op(r, 4).at("params").at("shape") == Json::array({2, 3, 4}));
  CHECK(op(r, 5).at("params") == Json::parse(R"({"axis": 1, "keepdims": true})"));
  CHECK(op(r, 6).at("params").at("shape") == Json::array({2, 1, 1}));
  CHECK(op(r, 10).at("params").at("value") == 0.5);
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.outputs.size() == 3);

  // The last axis alone: one layernorm, no reshapes; a broadcast scale is refused.
  Model last;
  last.input("x", {2, 4}).input("scale", {4});
  last.node("LayerNormalization", {"x", "scale"}, {"y"}, "norm");
  last.output("y");
  const ImportResult one = last.import();
  REQUIRE(one.graph.at("operations").size() == 1);
  CHECK(op(one, 0).at("kernel") == "layernorm");
  Model broadcast;
  broadcast.input("x", {2, 3, 4}).input("scale", {4});
  setInt(broadcast.node("LayerNormalization", {"x", "scale"}, {"y"}, "norm"), "axis", 1);
  broadcast.output("y");
  CHECK_THAT(failureOf([&] { broadcast.import(); }).message,
             Contains("its scale input has 4 elements, not one per normalized element (12)"));
}

TEST_CASE("a graph input import needs as a constant can be given its value", "[onnx]") {
  Model m;
  m.input("x", {4, 6}).input("starts", {1}, ::onnx::TensorProto::INT64);
  m.ints("ends", {1}, {5}).ints("axes", {1}, {1});
  m.node("Slice", {"x", "starts", "ends", "axes"}, {"y"}, "cut");
  m.output("y");
  CHECK_THAT(failureOf([&] { m.import(); }).message,
             Contains("node cut (Slice): its starts input starts is not a constant; tapestry "
                      "needs it at import (a graph input's value can be given with import "
                      "--values)"));
  std::vector<std::string> asked;
  ImportOptions options;
  options.inputValue = [&](const std::string& name) -> std::optional<TensorData> {
    asked.push_back(name);
    const std::int64_t two = 2;
    return TensorData{name, "int64", {1}, std::string(reinterpret_cast<const char*>(&two), 8)};
  };
  const ImportResult r = m.import(options);
  CHECK(asked == std::vector<std::string>{"starts"}); // x is never asked for
  REQUIRE(r.graph.at("operations").size() == 1);
  CHECK(op(r, 0).at("params").at("starts") == Json::array({0, 2}));
  CHECK(op(r, 0).at("params").at("ends") == Json::array({4, 5}));
  CHECK(r.graph.at("tensors").contains("x"));
  CHECK_FALSE(r.graph.at("tensors").contains("starts"));

  // A value that does not match the declaration is an error naming it.
  options.inputValue = [](const std::string& name) -> std::optional<TensorData> {
    return TensorData{name, "int32", {1}, std::string(4, '\0')};
  };
  CHECK_THAT(failureOf([&] { m.import(options); }).message,
             Contains("--values: the value of graph input starts is int32 [1], which does not "
                      "match the model's declaration of it"));
  // No value: the error as without --values.
  options.inputValue = [](const std::string&) { return std::optional<TensorData>(); };
  CHECK_THAT(failureOf([&] { m.import(options); }).message,
             Contains("its starts input starts is not a constant"));
}

TEST_CASE("constant graph outputs, Mean and Size, and zero-size tensors", "[onnx]") {
  Model m;
  m.input("a", {2, 3}).input("b", {2, 3}).input("c", {3});
  m.floats("k", {2}, {1.5f, 2.5f});
  m.node("Mean", {"a", "b", "c"}, {"avg"}, "avg");
  m.node("Size", {"a"}, {"n"}, "count");
  m.node("Identity", {"k"}, {"k_out"}, "id");
  m.output("avg").output("n").output("k_out").output("k");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels == std::vector<std::string>{"avg/add1:add", "avg/add2:add", "avg:mul_scalar",
                                            "n/output:reshape", "k_out/output:reshape",
                                            "k/output:reshape"});
  CHECK(op(r, 2).at("params").at("value") == Approx(1.0 / 3));
  CHECK(op(r, 3).at("params").at("shape") == Json::array());
  CHECK(op(r, 4).at("inputs").at("input") == "k_out/value"); // Identity on a constant folds
  CHECK(op(r, 5).at("inputs").at("input") == "k/value");     // the output has the constant's name
  CHECK(r.graph.at("tensors").at("k/value").at("constant") == true);
  CHECK(r.graph.at("outputs") == Json::array({"avg", "n", "k_out", "k"}));
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.outputs.size() == 4);

  Model empty;
  empty.input("x", {3, std::int64_t{0}});
  empty.node("Relu", {"x"}, {"y"}, "act");
  empty.output("y");
  CHECK_THAT(failureOf([&] { empty.import(); }).message,
             Contains("node act (Relu): tensor x has a zero-size dim ([3, 0]); tapestry tensors "
                      "have at least one element along every dim"));
}

TEST_CASE("Pow with an integer base or an exponent of another dtype computes in float64",
          "[onnx]") {
  Model m;
  m.input("x", {3}).input("k", {3}, ::onnx::TensorProto::INT64);
  m.input("i", {3}, ::onnx::TensorProto::INT32).input("d", {3}, ::onnx::TensorProto::DOUBLE);
  m.input("y", {3});
  m.node("Pow", {"x", "k"}, {"xk"}, "mixed");
  m.node("Pow", {"i", "i"}, {"ii"}, "ints");
  m.node("Pow", {"d", "x"}, {"dx"}, "wide");
  m.node("Pow", {"x", "y"}, {"xy"}, "same");
  m.output("xk").output("ii").output("dx").output("xy");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels == std::vector<std::string>{"mixed/base_f64:cast", "mixed/exponent_f64:cast",
                                            "mixed/power:pow", "mixed:cast", "ints/base_f64:cast",
                                            "ints/exponent_f64:cast", "ints/power:pow", "ints:cast",
                                            "wide/exponent_f64:cast", "wide:pow", "same:pow"});
  CHECK(op(r, 3).at("params").at("dtype") == "float32");
  CHECK(op(r, 7).at("params").at("dtype") == "int32");
  CHECK(op(r, 9).at("inputs") == Json::parse(R"({"A": "d", "B": "wide/exponent_f64"})"));
  const graph::ExpandedGraph g = expandImported(r);
  CHECK(g.outputs.size() == 4);
}

TEST_CASE("a model of an opset below 13 is converted to opset 13", "[onnx]") {
  // Opset 9, IR 3: Unsqueeze takes its axes as an attribute (an input from 13),
  // and the initializer w is not a graph input (below IR 4 shape inference
  // would not see it without the IR bump).
  ::onnx::ModelProto model;
  model.set_ir_version(3);
  ::onnx::OperatorSetIdProto* o = model.add_opset_import();
  o->set_domain("");
  o->set_version(9);
  ::onnx::GraphProto* g = model.mutable_graph();
  g->set_name("old");
  ::onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
  ::onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(3);
  for (float v : {1.0f, 2.0f, 3.0f}) {
    w->add_float_data(v);
  }
  ::onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input("w");
  add->add_output("s");
  ::onnx::NodeProto* unsqueeze = g->add_node();
  unsqueeze->set_op_type("Unsqueeze");
  unsqueeze->add_input("s");
  unsqueeze->add_output("y");
  setInts(*unsqueeze, "axes", {0});
  g->add_output()->set_name("y");

  const ImportResult r = importModel(model.SerializeAsString(), "old.onnx", {});
  CHECK_THAT(r.graph.at("doc").get<std::string>(), Contains("opset 9 converted to 13"));
  const graph::ExpandedGraph e = expandImported(r);
  const graph::Tensor* y = e.findTensor("y");
  REQUIRE(y != nullptr);
  CHECK(y->type.shape == std::vector<std::int64_t>{1, 3});
}

TEST_CASE("operators ONNX defines by a function body are inlined", "[onnx]") {
  Model m;
  m.input("x", {2, 3});
  setInt(m.node("LogSoftmax", {"x"}, {"y"}, "lsm"), "axis", 1);
  m.output("y");
  const ImportResult r = m.import();
  for (const Json& o : r.graph.at("operations")) {
    CHECK(o.at("kernel") != "log_softmax");
  }
  CHECK(r.graph.at("operations").size() >= 4); // reduce_max, sub, exp, sum, log, sub
  CHECK(expandImported(r).findTensor("y") != nullptr);
}

TEST_CASE("an attribute reference a function node does not set is dropped, not 0", "[onnx]") {
  // NegativeLogLikelihoodLoss's body refers to ignore_index; libonnx 1.12
  // leaves the unset reference as an attribute of no type.
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  ::onnx::OperatorSetIdProto* o = model.add_opset_import();
  o->set_domain("");
  o->set_version(13);
  ::onnx::GraphProto* g = model.mutable_graph();
  auto input = [&](const std::string& name, int type, const std::vector<std::int64_t>& dims) {
    ::onnx::ValueInfoProto* v = g->add_input();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    for (std::int64_t d : dims) {
      v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    }
  };
  input("x", ::onnx::TensorProto::FLOAT, {2, 3});
  input("t", ::onnx::TensorProto::INT64, {2});
  ::onnx::NodeProto* n = g->add_node();
  n->set_op_type("NegativeLogLikelihoodLoss");
  n->set_name("nll");
  n->add_input("x");
  n->add_input("t");
  n->add_output("loss");
  g->add_output()->set_name("loss");

  std::map<std::string, std::string> origin;
  REQUIRE(detail::expandFunctions(model, 13, {}, origin, "m.onnx"));
  REQUIRE(model.graph().node_size() > 1);
  for (const ::onnx::NodeProto& inner : model.graph().node()) {
    CHECK(origin.at(inner.name()) == "NegativeLogLikelihoodLoss");
    for (const ::onnx::AttributeProto& a : inner.attribute()) {
      CHECK(a.type() != ::onnx::AttributeProto::UNDEFINED);
    }
  }
}

TEST_CASE("control flow, sequences and random numbers are refused by name", "[onnx]") {
  Model random;
  random.input("x", {2});
  random.node("RandomUniformLike", {"x"}, {"r"}, "draw");
  random.node("Add", {"x", "r"}, {"y"}, "add");
  random.output("y");
  const testing::Failure f = failureOf([&] { random.import(); });
  CHECK(f.code == ExitCode::InvalidInput);
  CHECK_THAT(f.message, Contains("node draw (RandomUniformLike) needs random numbers"));

  Model unique;
  unique.input("x", {4});
  unique.node("Unique", {"x"}, {"y"}, "u");
  unique.output("y");
  CHECK_THAT(failureOf([&] { unique.import(); }).message,
             Contains("(Unique) needs data-dependent output shapes"));

  CHECK(detail::outOfScopeFeature("If") == "control flow");
  CHECK(detail::outOfScopeFeature("SequenceAt") == "sequences");
  CHECK(detail::outOfScopeFeature("Add") == std::nullopt);
}

TEST_CASE("a model of no default-domain opset names the domains it imports", "[onnx]") {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  ::onnx::OperatorSetIdProto* o = model.add_opset_import();
  o->set_domain("ai.onnx.preview.training");
  o->set_version(1);
  model.mutable_graph()->add_node()->set_op_type("Adagrad");
  CHECK_THAT(failureOf([&] { importModel(model.SerializeAsString(), "t.onnx", {}); }).message,
             Contains("no opset of the default ONNX domain (only ai.onnx.preview.training"));
}

TEST_CASE("GatherElements is a compare with positions, a where and a sum", "[onnx]") {
  Model m;
  m.input("data", {3, 5}).input("idx", {2, 4}, ::onnx::TensorProto::INT64);
  setInt(m.node("GatherElements", {"data", "idx"}, {"y"}, "pick"), "axis", 0);
  m.output("y");
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  CHECK(kernels == std::vector<std::string>{"pick/cut:slice", "pick/moved:transpose",
                                            "pick/rows:reshape", "pick/wrapped:mod",
                                            "pick/column:reshape", "pick/mask:equal",
                                            "pick/picked:where", "pick:sum"});
  CHECK(op(r, 0).at("params").at("ends") == Json::array({3, 4})); // the axis keeps its length
  CHECK(op(r, 1).at("params").at("perm") == Json::array({1, 0}));
  CHECK(op(r, 2).at("params").at("shape") == Json::array({1, 4, 3}));
  CHECK(op(r, 7).at("params") == Json::parse(R"({"axis": 2, "keepdims": false})"));
  CHECK(r.graph.at("tensors").at("pick/positions").at("shape") == Json::array({1, 1, 3}));
  const graph::ExpandedGraph g = expandImported(r);
  REQUIRE(g.outputs.size() == 1);

  Model crop;
  crop.input("x", {1, 1, 2, 2})
      .floats("roi", {8}, {0, 0, 0, std::nanf(""), 1, 1, 1, 1})
      .ints("z", {4}, {1, 1, 3, 3});
  ::onnx::NodeProto& cn = crop.node("Resize", {"x", "roi", "", "z"}, {"y"}, "crop");
  setString(cn, "mode", "linear");
  setString(cn, "coordinate_transformation_mode", "tf_crop_and_resize");
  crop.output("y");
  CHECK_THAT(failureOf([&] { crop.import(); }).message,
             Contains("tf_crop_and_resize needs a roi input of 2 finite values per axis"));
  Model wide;
  wide.input("data", {2, 3}).input("idx", {2, 5}, ::onnx::TensorProto::INT64);
  setInt(wide.node("GatherElements", {"data", "idx"}, {"y"}, "pick"), "axis", 0);
  wide.output("y");
  CHECK_THAT(failureOf([&] { wide.import(); }).message,
             Contains("indices' dim 1 (5) is larger than data's (3)"));
}

TEST_CASE("the supported operator list is sorted and names the mapped operators", "[onnx]") {
  const std::vector<std::string> ops = supportedOperators();
  CHECK(std::is_sorted(ops.begin(), ops.end()));
  for (const char* o : {"Conv", "Gemm", "MatMul", "LayerNormalization", "Softmax", "Where"}) {
    CHECK(std::find(ops.begin(), ops.end(), o) != ops.end());
  }
}

TEST_CASE("elementwise operators of issue 34: Max/Min chains, tests, logic, Mod, activations",
          "[onnx][issue34]") {
  Model m;
  m.input("a", {2, 3}).input("b", {3}).input("c", {2, 1});
  m.input("i", {4}, ::onnx::TensorProto::INT64).input("j", {4}, ::onnx::TensorProto::INT64);
  m.node("Max", {"a", "b", "c"}, {"mx"}, "max");
  m.node("Min", {"a", "b"}, {"mn"}, "min");
  m.node("Greater", {"mx", "mn"}, {"gt"}, "gt");
  m.node("Not", {"gt"}, {"ng"}, "not");
  m.node("Xor", {"gt", "ng"}, {"x"}, "xor");
  m.node("Mod", {"i", "j"}, {"r"}, "mod");
  setInt(m.node("Mod", {"i", "j"}, {"f"}, "fmod"), "fmod", 1);
  setFloat(m.node("LeakyRelu", {"a"}, {"lr"}, "leaky"), "alpha", 0.25f);
  m.node("Selu", {"a"}, {"se"}, "selu");
  m.node("PRelu", {"a", "b"}, {"pr"}, "prelu");
  setInt(m.node("IsInf", {"a"}, {"inf"}, "isinf"), "detect_negative", 0);
  m.node("Asinh", {"a"}, {"as"}, "asinh");
  m.node("Max", {"a"}, {"one"}, "max1");
  for (const char* o : {"x", "r", "f", "lr", "se", "pr", "inf", "as", "one"}) {
    m.output(o);
  }
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  // The one-input Max is an alias; as a graph output it gets its own name by a reshape.
  REQUIRE(kernels.size() == 16);
  CHECK_THAT(kernels[15], Catch::Matchers::EndsWith(":reshape"));
  CHECK(std::vector<std::string>(kernels.begin(), kernels.begin() + 15) ==
        std::vector<std::string>{"max/maximum1:maximum", "max:maximum", "min:minimum", "gt:greater",
                                 "not:logical_not", "xor:logical_xor", "mod:mod", "fmod:fmod",
                                 "leaky:leaky_relu", "selu:selu", "prelu:prelu",
                                 "isinf/isinf:isinf", "isinf/sign:greater", "isinf:logical_and",
                                 "asinh:asinh"});
  CHECK(op(r, 0).at("inputs") == Json::parse(R"({"A": "a", "B": "b"})"));
  CHECK(op(r, 1).at("inputs").at("B") == "c");
  CHECK(op(r, 8).at("params").at("alpha") == 0.25);
  CHECK(op(r, 9).at("params").at("alpha").get<double>() ==
        static_cast<double>(1.67326319217681884765625f));
  CHECK(op(r, 10).at("inputs") == Json::parse(R"({"X": "a", "slope": "b"})"));
  const graph::ExpandedGraph g = expandImported(r);
  auto dtypeOf = [&](const std::string& name) {
    REQUIRE(g.findTensor(name) != nullptr);
    return g.findTensor(name)->type.dtype;
  };
  CHECK(dtypeOf("x") == "bool");
  CHECK(dtypeOf("inf") == "bool");
  CHECK(dtypeOf("r") == "int64");
  REQUIRE(g.findTensor("mx") != nullptr);
  CHECK(g.findTensor("mx")->type.shape == std::vector<std::int64_t>{2, 3});
}

TEST_CASE("Clip with constant bounds is clip, with tensor bounds or integers, maximum/minimum",
          "[onnx][issue34]") {
  Model m;
  m.input("x", {2, 3}).input("lo", {3}).input("n", {4}, ::onnx::TensorProto::INT64);
  m.floats("hi", {}, {6}).ints("top", {}, {3});
  m.node("Clip", {"x", "", "hi"}, {"c"}, "const");
  m.node("Clip", {"x", "lo", "hi"}, {"t"}, "tensor");
  m.node("Clip", {"n", "", "top"}, {"k"}, "ints");
  m.node("Clip", {"x"}, {"none"}, "none");
  for (const char* o : {"c", "t", "k", "none"}) {
    m.output(o);
  }
  const ImportResult r = m.import();
  const std::vector<std::string> kernels = kernelsOf(r);
  REQUIRE(kernels.size() >= 4);
  CHECK(std::vector<std::string>(kernels.begin(), kernels.begin() + 4) ==
        std::vector<std::string>{"const:clip", "tensor/min:maximum", "tensor:minimum",
                                 "ints:minimum"});
  CHECK(op(r, 0).at("params").at("max") == 6.0);
  CHECK(op(r, 1).at("inputs") == Json::parse(R"({"A": "x", "B": "lo"})"));
  CHECK(op(r, 2).at("inputs") == Json::parse(R"({"A": "tensor/clip_min", "B": "hi"})"));
  CHECK(op(r, 3).at("inputs") == Json::parse(R"({"A": "n", "B": "top"})"));
  const graph::ExpandedGraph g = expandImported(r);
  REQUIRE(g.findTensor("k") != nullptr);
  CHECK(g.findTensor("k")->type.dtype == "int64");
}

namespace {

// The float32 or int64 values of the constant whose name ends with `suffix`.
template <typename T>
std::vector<T> constantValues(const ImportResult& r, const std::string& suffix) {
  for (const onnx_import::TensorData& t : r.constants) {
    if (t.name.size() >= suffix.size() &&
        t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      std::vector<T> v(t.bytes.size() / sizeof(T));
      std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(T));
      return v;
    }
  }
  FAIL("no constant named *" + suffix);
  return {};
}

} // namespace

TEST_CASE("Resize: nearest as gathers, linear and cubic as products with constant maps", "[onnx]") {
  // Nearest, asymmetric, x2 on both spatial axes of an int64 tensor: a gather
  // per axis, the last first, each index the source element (o / 2).
  Model m;
  m.input("x", {1, 2, 2, 3}, ::onnx::TensorProto::INT64).floats("s", {4}, {1, 1, 2, 2});
  setString(m.node("Resize", {"x", "", "s"}, {"y"}, "up"), "coordinate_transformation_mode",
            "asymmetric");
  m.output("y");
  const ImportResult r = m.import();
  CHECK(kernelsOf(r) == std::vector<std::string>{"up/axis3:gather", "up/axis2:gather"});
  CHECK(op(r, 0).at("params").at("axis") == 3);
  CHECK(constantValues<std::int64_t>(r, "index3") == std::vector<std::int64_t>{0, 0, 1, 1, 2, 2});
  CHECK(constantValues<std::int64_t>(r, "index2") == std::vector<std::int64_t>{0, 0, 1, 1});
  CHECK(expandImported(r).findTensor("y")->type.shape == std::vector<std::int64_t>{1, 2, 4, 6});

  // Linear, half_pixel, width 2 -> 4 by sizes: x @ A^T on the last axis, the
  // source points -0.25, 0.25, 0.75, 1.25 clamped to the edge; the height
  // (2 -> 2) is the identity and has no step. Along the channels (axis 1):
  // between two transposes.
  Model lin;
  lin.input("x", {1, 2, 2, 2}).ints("sz", {4}, {1, 2, 2, 4}).ints("sc", {4}, {1, 4, 2, 2});
  setString(lin.node("Resize", {"x", "", "", "sz"}, {"y"}, "w"), "mode", "linear");
  setString(lin.node("Resize", {"x", "", "", "sc"}, {"c"}, "c"), "mode", "linear");
  lin.output("y").output("c");
  const ImportResult rl = lin.import();
  CHECK(kernelsOf(rl) == std::vector<std::string>{"w/axis3:matmul", "c/moved1:transpose",
                                                  "c/axis1:matmul", "c/back1:transpose"});
  CHECK(op(rl, 0).at("params").at("transpose_w") == true);
  CHECK(constantValues<float>(rl, "w/weights3") ==
        std::vector<float>{1, 0, 0.75f, 0.25f, 0.25f, 0.75f, 0, 1});
  const graph::ExpandedGraph gl = expandImported(rl);
  CHECK(gl.findTensor("y")->type.shape == std::vector<std::int64_t>{1, 2, 2, 4});
  CHECK(gl.findTensor("c")->type.shape == std::vector<std::int64_t>{1, 4, 2, 2});

  // Cubic on the height: A @ x (the map is the product's left operand); each
  // row of the map sums to 1.
  Model cubic;
  cubic.input("x", {1, 1, 4, 4}).floats("s", {4}, {1, 1, 2, 1});
  setString(cubic.node("Resize", {"x", "", "s"}, {"y"}, "h"), "mode", "cubic");
  cubic.output("y");
  const ImportResult rc = cubic.import();
  CHECK(kernelsOf(rc) == std::vector<std::string>{"h/axis2:matmul"});
  CHECK(op(rc, 0).at("inputs").at("W") == "x");
  const std::vector<float> a = constantValues<float>(rc, "h/weights2");
  REQUIRE(a.size() == 32);
  for (std::size_t row = 0; row < 8; ++row) {
    CHECK(std::accumulate(a.begin() + 4 * row, a.begin() + 4 * row + 4, 0.0) ==
          Catch::Detail::Approx(1.0));
  }
}

TEST_CASE("Resize refusals name the node and the reason", "[onnx]") {
  auto refusal = [](const std::string& mode, int type, const std::string& attribute,
                    const std::string& value, bool sizesToo = false) {
    Model m;
    m.input("x", {1, 1, 2, 2}, type).floats("s", {4}, {1, 1, 2, 2}).ints("z", {4}, {1, 1, 4, 4});
    ::onnx::NodeProto& n = m.node("Resize", {"x", "", "s", sizesToo ? "z" : ""}, {"y"}, "resize");
    setString(n, "mode", mode);
    if (!attribute.empty()) {
      setString(n, attribute, value);
    }
    m.output("y");
    return failureOf([&] { m.import(); }).message;
  };
  CHECK_THAT(refusal("linear", ::onnx::TensorProto::INT32, "", ""),
             Contains("node resize (Resize): its input is int32; tapestry resizes float32 and "
                      "float64 tensors by linear (nearest without, every dtype)"));
  CHECK_THAT(refusal("area", ::onnx::TensorProto::FLOAT, "", ""),
             Contains("mode \"area\"; Resize's modes are nearest, linear and cubic"));
  CHECK_THAT(refusal("nearest", ::onnx::TensorProto::FLOAT, "coordinate_transformation_mode",
                     "half_pixel_symmetric"),
             Contains("coordinate_transformation_mode \"half_pixel_symmetric\" is not supported"));
  CHECK_THAT(refusal("nearest", ::onnx::TensorProto::FLOAT, "nearest_mode", "round"),
             Contains("nearest_mode \"round\" is not supported"));
  CHECK_THAT(refusal("nearest", ::onnx::TensorProto::FLOAT, "", "", true),
             Contains("exactly one of its scales and sizes inputs must hold values"));

  // Sizes past the limit, a scale that is no positive number, and a linear
  // map too large to hold: refused before anything is allocated.
  auto sized = [](const std::string& mode, const std::vector<float>& scales,
                  const std::vector<std::int64_t>& sizes) {
    Model m;
    m.input("x", {1, 1, 2, 2});
    if (scales.empty()) {
      m.ints("z", {4}, sizes);
    } else {
      m.floats("z", {4}, scales);
    }
    setString(m.node("Resize", {"x", "", scales.empty() ? "" : "z", scales.empty() ? "z" : ""},
                     {"y"}, "resize"),
              "mode", mode);
    m.output("y");
    return failureOf([&] { m.import(); }).message;
  };
  CHECK_THAT(sized("nearest", {}, {1, 1, 2, 1000000000}),
             Contains("axis 3 would resize from 2 to 1000000000 elements (1 to 1048576 are "
                      "supported)"));
  CHECK_THAT(sized("nearest", {1, 1, std::nanf(""), 1}, {}),
             Contains("of axis 2 is not a positive number"));
  Model wide;
  wide.input("x", {1, 1, 2, 32}).ints("z", {4}, {1, 1, 2, 1048576});
  setString(wide.node("Resize", {"x", "", "", "z"}, {"y"}, "resize"), "mode", "linear");
  wide.output("y");
  CHECK_THAT(failureOf([&] { wide.import(); }).message,
             Contains("axis 3 resizes 32 to 1048576 elements by linear: a product with a map of "
                      "33554432 entries (at most 16777216 are supported)"));
}

TEST_CASE("Slice with steps above 1: windows reshaped to [m, step], one column picked", "[onnx]") {
  // Steps 2 and 3 that fit their dims: no window, no zeros.
  Model even;
  even.input("x", {2, 8, 6}).ints("st", {2}, {1, 0}).ints("en", {2}, {8, 6});
  even.ints("ax", {2}, {1, 2}).ints("sp", {2}, {2, 3});
  even.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}, "s");
  even.output("y");
  const ImportResult r = even.import();
  CHECK(kernelsOf(r) == std::vector<std::string>{"s/axis1_steps:reshape", "s/axis1_picked:slice",
                                                 "s/axis1_strided:reshape", "s/axis2_steps:reshape",
                                                 "s/axis2_picked:slice", "s:reshape"});
  CHECK(op(r, 0).at("params").at("shape") == Json::array({2, 4, 2, 6}));
  CHECK(op(r, 1).at("params").at("starts") == Json::array({0, 0, 1, 0}));
  CHECK(op(r, 1).at("params").at("ends") == Json::array({2, 4, 2, 6}));
  CHECK(op(r, 3).at("params").at("shape") == Json::array({2, 4, 2, 3}));
  CHECK(expandImported(r).findTensor("y")->type.shape == std::vector<std::int64_t>{2, 4, 2});

  // 0::2 of 5: three windows of 2 need one zero past the end.
  Model odd;
  odd.input("x", {5}).ints("st", {1}, {0}).ints("en", {1}, {5}).ints("ax", {1}, {0});
  odd.ints("sp", {1}, {2});
  odd.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}, "s");
  odd.output("y");
  const ImportResult ro = odd.import();
  CHECK(kernelsOf(ro) == std::vector<std::string>{"s/axis0_filled:concat", "s/axis0_steps:reshape",
                                                  "s/axis0_picked:slice", "s:reshape"});
  CHECK(floatConstant(ro, "s/axis0_zeros") ==
        std::pair{std::vector<std::int64_t>{1}, std::vector<float>{0}});
  CHECK(expandImported(ro).findTensor("y")->type.shape == std::vector<std::int64_t>{3});

  // A step-1 dim cut first; then 3:9:2 of 10, the window [3, 9).
  Model cut;
  cut.input("x", {4, 10}).ints("st", {2}, {1, 3}).ints("en", {2}, {3, 9});
  cut.ints("ax", {2}, {0, 1}).ints("sp", {2}, {1, 2});
  cut.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}, "s");
  cut.output("y");
  const ImportResult rc = cut.import();
  CHECK(kernelsOf(rc) == std::vector<std::string>{"s/cut:slice", "s/axis1_window:slice",
                                                  "s/axis1_steps:reshape", "s/axis1_picked:slice",
                                                  "s:reshape"});
  CHECK(op(rc, 0).at("params").at("starts") == Json::array({1, 0}));
  CHECK(op(rc, 1).at("params").at("starts") == Json::array({0, 3}));
  CHECK(op(rc, 1).at("params").at("ends") == Json::array({2, 9}));
  CHECK(expandImported(rc).findTensor("y")->type.shape == std::vector<std::int64_t>{2, 3});

  // A step past the range takes one element: a plain slice (no window of
  // step elements, however large the step).
  Model one;
  one.input("x", {6}).ints("st", {1}, {2}).ints("en", {1}, {6}).ints("ax", {1}, {0});
  one.ints("sp", {1}, {std::numeric_limits<std::int64_t>::max()});
  one.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}, "s");
  one.output("y");
  const ImportResult r1 = one.import();
  CHECK(kernelsOf(r1) == std::vector<std::string>{"s:slice"});
  CHECK(op(r1, 0).at("params").at("starts") == Json::array({2}));
  CHECK(op(r1, 0).at("params").at("ends") == Json::array({3}));

  // Negative steps (reversal) are refused.
  Model back;
  back.input("x", {4}).ints("st", {1}, {-1}).ints("en", {1}, {-5}).ints("ax", {1}, {0});
  back.ints("sp", {1}, {-1});
  back.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}, "s");
  back.output("y");
  CHECK_THAT(failureOf([&] { back.import(); }).message,
             Contains("node s (Slice): step -1; tapestry's slice takes positive steps only"));
}
