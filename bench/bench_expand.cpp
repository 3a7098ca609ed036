// Graph expansion throughput (issue 4): generates a deep stack of pre-norm
// transformer blocks (the 24 operations of testdata/graphs/transformer_block.json
// per layer) as graph/v1 JSON text, then times what `tapestry expand` does:
// parse, decode + expand, write expanded/v1, and re-expanding that output (the
// path `optimize`/`render`/`run` take for an expanded file). Prints operations/s
// and the peak resident memory. Target: >= 20,000 operations/s for parse +
// expand in a release build.
//
//   bench_expand [OPERATIONS]   (default 10000)
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include <sys/resource.h>
#include <time.h>

#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/graph/writer.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"

using namespace tapestry;

namespace {

constexpr int kOpsPerLayer = 24;

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// CPU time of this process: unlike wall time, not inflated by other load.
double cpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Peak resident set size of this process in MiB (ru_maxrss is KiB on Linux).
double peakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

std::string tensor(const std::string& name, const std::string& shape) {
  return "    \"" + name + "\": {\"dtype\": \"float32\", \"shape\": " + shape + "},\n";
}

// One decoder block reading `in` and writing `p + "y"`.
void layer(std::string& tensors, std::string& ops, const std::string& p, const std::string& in) {
  for (const char* w : {"wq", "wk", "wv", "wo"}) {
    tensors += tensor(p + w, "[256, 256]");
  }
  for (const char* b : {"bq", "bk", "bv", "bo", "ln1_g", "ln1_b", "ln2_g", "ln2_b", "b_down"}) {
    tensors += tensor(p + b, "[256]");
  }
  tensors += tensor(p + "w_up", "[256, 1024]") + tensor(p + "b_up", "[1024]") +
             tensor(p + "w_down", "[1024, 256]");
  auto op = [&](const std::string& name, const std::string& kernel, const std::string& params,
                const std::string& inputs, const std::string& out) {
    ops += "    {\"name\": \"" + p + name + "\", \"kernel\": \"" + kernel + "\", " +
           (params.empty() ? "" : "\"params\": " + params + ", ") + "\"inputs\": " + inputs +
           ", \"outputs\": {\"result\": \"" + p + out + "\"}},\n";
  };
  auto t = [&](const std::string& name) { return "\"" + p + name + "\""; };
  op("ln1", "layernorm", "",
     "{\"input\": \"" + in + "\", \"gamma\": " + t("ln1_g") + ", \"beta\": " + t("ln1_b") + "}",
     "h");
  for (const char* x : {"q", "k", "v"}) {
    std::string s(x);
    op(s + "_proj", "linear", "",
       "{\"X\": " + t("h") + ", \"W\": " + t("w" + s) + ", \"bias\": " + t("b" + s) + "}", s);
    op(s + "_split", "reshape", "{\"shape\": [8, 128, 4, 64]}", "{\"input\": " + t(s) + "}",
       s + "4");
    op(s + "_heads", "transpose",
       s == "k" ? "{\"perm\": [0, 2, 3, 1]}" : "{\"perm\": [0, 2, 1, 3]}",
       "{\"input\": " + t(s + "4") + "}", s + "h");
  }
  op("scores", "matmul", "", "{\"X\": " + t("qh") + ", \"W\": " + t("kh") + "}", "s");
  op("scale", "mul", "", "{\"A\": " + t("s") + ", \"B\": \"attn_scale\"}", "ss");
  op("mask", "add", "", "{\"A\": " + t("ss") + ", \"B\": \"causal_mask\"}", "sm");
  op("probs", "softmax", "{\"axis\": -1}", "{\"input\": " + t("sm") + "}", "p");
  op("attend", "matmul", "", "{\"X\": " + t("p") + ", \"W\": " + t("vh") + "}", "c");
  op("merge_heads", "transpose", "{\"perm\": [0, 2, 1, 3]}", "{\"input\": " + t("c") + "}", "c4");
  op("merge", "reshape", "{\"shape\": [8, 128, 256]}", "{\"input\": " + t("c4") + "}", "ctx");
  op("out_proj", "linear", "",
     "{\"X\": " + t("ctx") + ", \"W\": " + t("wo") + ", \"bias\": " + t("bo") + "}", "attn");
  op("residual1", "add", "", "{\"A\": \"" + in + "\", \"B\": " + t("attn") + "}", "r1");
  op("ln2", "layernorm", "",
     "{\"input\": " + t("r1") + ", \"gamma\": " + t("ln2_g") + ", \"beta\": " + t("ln2_b") + "}",
     "h2");
  op("up", "linear", "",
     "{\"X\": " + t("h2") + ", \"W\": " + t("w_up") + ", \"bias\": " + t("b_up") + "}", "u");
  op("gelu", "gelu", "", "{\"input\": " + t("u") + "}", "g");
  op("down", "linear", "",
     "{\"X\": " + t("g") + ", \"W\": " + t("w_down") + ", \"bias\": " + t("b_down") + "}", "m");
  op("residual2", "add", "", "{\"A\": " + t("r1") + ", \"B\": " + t("m") + "}", "y");
}

std::string stackJson(int layers) {
  std::string tensors = tensor("x", "[8, 128, 256]") + tensor("causal_mask", "[128, 128]") +
                        tensor("attn_scale", "[]");
  std::string ops;
  std::string in = "x";
  for (int i = 0; i < layers; ++i) {
    std::string p = "layer" + std::to_string(i) + ".";
    layer(tensors, ops, p, in);
    in = p + "y";
  }
  tensors.resize(tensors.size() - 2); // the last ",\n"
  ops.resize(ops.size() - 2);
  return "{\n  \"tapestry\": \"graph/v1\",\n  \"name\": \"transformer_stack\",\n  \"tensors\": "
         "{\n" +
         tensors + "\n  },\n  \"operations\": [\n" + ops + "\n  ],\n  \"outputs\": [\"" + in +
         "\"]\n}\n";
}

} // namespace

int main(int argc, char** argv) {
  long requested = argc > 1 ? std::atol(argv[1]) : 10000;
  int layers = static_cast<int>((std::max(requested, 1L) + kOpsPerLayer - 1) / kOpsPerLayer);
  try {
    metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
    std::string text = stackJson(layers);
    std::cout << "graph: " << layers << " transformer layers, " << text.size() / 1024
              << " KiB of graph/v1 JSON\n";

    double cpu0 = cpuSeconds();
    auto t0 = std::chrono::steady_clock::now();
    json::Document doc = json::Document::parse(SourceFile("stack.json", text));
    auto t1 = std::chrono::steady_clock::now();
    graph::ExpandedGraph expanded = graph::expand(graph::decodeGraph(json::Value(doc)), library);
    auto t2 = std::chrono::steady_clock::now();
    std::string written = graph::writeExpanded(expanded);
    auto t3 = std::chrono::steady_clock::now();
    double cpu3 = cpuSeconds();
    json::Document again = json::Document::parse(SourceFile("stack.expanded.json", written));
    graph::ExpandedGraph reexpanded =
        graph::expand(graph::decodeGraph(json::Value(again)), library);
    auto t4 = std::chrono::steady_clock::now();
    if (graph::writeExpanded(reexpanded) != written) {
      std::cerr << "error: re-expanding the expanded graph changed it\n";
      return 1;
    }

    auto n = static_cast<double>(expanded.operations.size());
    auto rate = [&](double s) { return static_cast<std::int64_t>(n / s); };
    double parse = seconds(t1 - t0), expand = seconds(t2 - t1), write = seconds(t3 - t2);
    double reexpand = seconds(t4 - t3);
    std::cout << "operations: " << expanded.operations.size()
              << ", tensors: " << expanded.tensors.size()
              << ", expanded/v1 output: " << written.size() / 1024 << " KiB\n";
    std::cout << "parse:                 " << parse << " s\n";
    std::cout << "decode + expand:       " << expand << " s\n";
    std::cout << "write expanded/v1:     " << write << " s\n";
    std::cout << "parse + expand:        " << rate(parse + expand)
              << " operations/s (target >= 20000)\n";
    std::cout << "parse + expand + write: " << rate(parse + expand + write) << " operations/s ("
              << rate(cpu3 - cpu0) << " per CPU second)\n";
    std::cout << "re-expand expanded/v1: " << rate(reexpand) << " operations/s (parse + check)\n";
    std::cout << "peak RSS: " << peakRssMiB() << " MiB\n";
  } catch (const Error& e) {
    std::cerr << e.what();
    return static_cast<int>(e.exitCode());
  }
  return 0;
}
