// The body evaluator's numbers through its block operations (core/expr/body.hpp,
// BlockOps): the host float64 implementation must give, bit for bit, the
// numbers the evaluator gave before its arithmetic moved behind the interface.
// The checksums below were computed by the evaluator as it was (commit
// "tests: checksums of every standard body's float64 numbers"), over every
// standard kernel with a body, each example, whole and halved shards. matmul's
// and linear's were recomputed when their transpose_x / transpose_w examples
// were added (their earlier examples still gave the old sums bit for bit).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/body_kernel.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "backends/dtype.hpp"
#include "core/metakernel/shard_body.hpp"
#include "tests/unit/body_cases.hpp"

using namespace tapestry;
using namespace tapestry::testing;

namespace {

void roundTo(std::string_view dtype, std::span<double> values) {
  backend::dispatchWithBool(backend::parseDType(dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (double& v : values) {
      v = backend::cpu::convertValue<double>(backend::cpu::convertValue<T>(v));
    }
  });
}

// Per output port, per tensor: the block's float64 numbers.
std::vector<std::vector<std::vector<double>>> evaluateCase(const BodyCase& c,
                                                           std::uint64_t& state) {
  const auto sels = inputSelections(c);
  metakernel::BlockData inputs(sels.size());
  for (std::size_t p = 0; p < sels.size(); ++p) {
    for (std::size_t t = 0; t < sels[p].size(); ++t) {
      const std::string& dtype = c.app.inputs[p].tensors[t].dtype;
      if (sels[p][t].isEmpty()) {
        inputs[p].push_back(nullptr);
        continue;
      }
      inputs[p].push_back(expr::hostBlock(randomBlock(
          dtype, sels[p][t].size(), state, [&](std::vector<double>& v) { roundTo(dtype, v); })));
    }
  }
  const auto values = metakernel::evaluateShardBody(c.app, c.kernel, c.shard, &inputs,
                                                    &backend::cpu::hostBodyOps());
  std::vector<std::vector<std::vector<double>>> out;
  for (const auto& port : values) {
    std::vector<std::vector<double>> blocks;
    for (const expr::BodyValue& v : port) {
      blocks.push_back(v.data ? expr::hostValues(v) : std::vector<double>{});
    }
    out.push_back(std::move(blocks));
  }
  return out;
}

std::uint64_t fnv(std::uint64_t h, const std::vector<double>& values) {
  for (double v : values) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; ++i) {
      h = (h ^ ((bits >> (8 * i)) & 0xFFu)) * 0x100000001B3ull;
    }
  }
  return h;
}

} // namespace

TEST_CASE("body numbers: every standard body gives the evaluator's float64 numbers bit for bit",
          "[body]") {
  std::map<std::string, std::uint64_t> sums;
  std::map<std::string, std::size_t> counts;
  for (const BodyCase& c : standardBodyCases()) {
    INFO(c.name());
    std::uint64_t state = 0x5EED0000u + counts[c.kernel]++;
    auto it = sums.try_emplace(c.kernel, 0xCBF29CE484222325ull).first;
    for (const auto& port : evaluateCase(c, state)) {
      for (const auto& block : port) {
        it->second = fnv(it->second, block);
      }
    }
  }
  const std::map<std::string, std::uint64_t> expected = {
      {"abs", 0x6fda9c657ed1743aull},
      {"add", 0xed59352812c2b507ull},
      {"add_scalar", 0x1bd1a53d43ce5e50ull},
      {"batchnorm", 0xe0fb6a67984e4ce3ull},
      {"cast", 0x52cd94840515e355ull},
      {"attention", 0xe5675cc2ab928333ull},
      {"attention_masked", 0xd55acf8fc3e232d7ull},
      {"attention_heads", 0xbf3f8aeb6423cb70ull},
      {"attention_heads_masked", 0x3fd104393fe9598ull},
      {"attention_heads_qkv", 0x1de86dbe03e6ab9ull},
      {"attention_heads_qkv_masked", 0xc8ba628b4ac3c570ull},
      {"attention_heads_seq_first", 0x1543a08dc02e0397ull},
      {"attention_heads_qkv_seq_first", 0x9714ba88cbdcceedull},
      {"clip", 0xca087c6754e42002ull},
      {"concat", 0x7cf522b6c43f08a4ull},
      {"div", 0xdaa2aa217548c384ull},
      {"div_scalar", 0xd300d4eca3f3b3ull},
      {"erf", 0x1942dc3607ea9d0ull},
      {"exp", 0xe3bf7953ffb2447bull},
      {"gelu", 0xbb1e1b303ff6f7eeull},
      {"gelu_tanh", 0x7a049f908d28fb43ull},
      {"global_avgpool", 0x35f2174cf4ac1bc1ull},
      {"layernorm", 0x7b86091b0458848cull},
      {"rmsnorm", 0x81e3a2c96e5b323dull},
      {"silu", 0x46c1e3de703eed03ull},
      {"linear", 0x9ce3bab3fb109fadull},
      {"log", 0xa3e15687ba438a2ull},
      {"matmul", 0xd4eb445270358759ull},
      {"max", 0x27cf0783187954ccull},
      {"mean", 0xb0bdef055a2dca39ull},
      {"mul", 0x90ce84e21821dcedull},
      {"mul_scalar", 0x586216278c32d821ull},
      {"neg", 0x1a7d85aa0a8ec43aull},
      {"pow", 0x90a0cb84ed4c0de6ull},
      {"pow_scalar", 0x69815271db4cf413ull},
      {"rdiv_scalar", 0x4b0c86e9233c2a6aull},
      {"reciprocal", 0x3432aca29629b98aull},
      {"relu", 0x54e7a9fd727b42b6ull},
      {"rope", 0xf3baf88d51b4a2a6ull},
      {"rsub_scalar", 0xca16f6ecd46090b2ull},
      {"sigmoid", 0xaf19ae8e44ec3950ull},
      {"slice", 0xe018738933e6ce7ull},
      {"softmax", 0x6d7c5f2bfba808e8ull},
      {"sqrt", 0x51e80f5add69e03full},
      {"sub", 0xe981a3e13c456fa0ull},
      {"sum", 0xc17050e2a596d8cull},
      {"tanh", 0xe58046b217614c6aull},
      {"transpose", 0x3bde1caff136b704ull},
      {"where", 0x490ea14ed510f6e9ull},
      // issue 34's elementwise kernels
      {"acos", 0x10c8d93697edd2f6ull},
      {"acosh", 0x7b16ecd01366bb9ull},
      {"asin", 0xad82b85d017040c2ull},
      {"asinh", 0x23f6faca09ab8e6dull},
      {"atan", 0xc7b1a116c6dae911ull},
      {"atanh", 0x161a095ebba90c8aull},
      {"ceil", 0x2f12347220e69205ull},
      {"celu", 0xc9a37fac004eebabull},
      {"cos", 0x462d5ceba8b5eb58ull},
      {"cosh", 0x9f88f72d3efc33c5ull},
      {"elu", 0xa9825a5551c7245bull},
      {"equal", 0xac5fe4403170cf25ull},
      {"floor", 0xabdbfc6f511d9105ull},
      {"fmod", 0xaf8c897fded18b55ull},
      {"greater", 0x6f41d7d5c4da5598ull},
      {"greater_equal", 0x6f41d7d5c4da5598ull},
      {"isinf", 0xac166a8db3dedf25ull},
      {"isnan", 0xac166a8db3dedf25ull},
      {"argmax", 0x251e46535333fe10ull},
      {"argmin", 0xe00448a15387fc4full},
      {"leaky_relu", 0x107150991e5e72f0ull},
      {"min", 0x504a3423b7d4d476ull},
      {"prod", 0xa5e9e0e37cc64b94ull},
      {"less", 0x5c0fb374dc7d8998ull},
      {"less_equal", 0x5c0fb374dc7d8998ull},
      {"logical_and", 0xcaaa78c6ff8cc7a5ull},
      {"logical_not", 0xacbf1631a15e18e5ull},
      {"logical_or", 0x57f8eea437d89098ull},
      {"logical_xor", 0x9d76182fb085ee58ull},
      {"maximum", 0x1047547d645043aaull},
      {"minimum", 0x801e230dfea7332eull},
      {"mod", 0x234ae8f0d374a64ull},
      {"prelu", 0xb5274a5eb6e3145eull},
      {"round", 0x9964136860d825f8ull},
      {"selu", 0xf23227117cf0bbe5ull},
      {"sign", 0xd8753315f6a0c25ull},
      {"sin", 0x2dee9242cc58abffull},
      {"sinh", 0x577ced13f830a97full},
      {"softplus", 0x57636236847261c5ull},
      {"softsign", 0x4273e0f1cb422808ull},
      {"tan", 0xaaee486c98257fb3ull},
      {"thresholded_relu", 0x50103cd6c8263037ull},
      {"hard_sigmoid", 0x6d6c4a1c9288edeull},
      {"hard_swish", 0x1acce8ce1e313f98ull},
  };
  CHECK(sums.size() == expected.size());
  for (const auto& [kernel, sum] : sums) {
    INFO(kernel);
    if (expected.count(kernel) == 0) { // say what to pin
      FAIL_CHECK("no pinned sum for {\"" << kernel << "\", 0x" << std::hex << sum << "ull}");
      continue;
    }
    CHECK(sum == expected.at(kernel));
  }
  CHECK(sums.size() == 93);
}
