// Tests for core/json: the strict located parser, JSON pointers, and the Value view.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "core/json/json.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::json;
using tapestry::testing::Failure;
using tapestry::testing::failureOf;

namespace {

Document parseText(std::string text, const ParseOptions& options = {}) {
  return Document::parse(SourceFile("f.json", std::move(text)), options);
}

// "FILE:LINE:COL: MESSAGE" of the parse error, or "no error".
std::string parseError(std::string text, const ParseOptions& options = {}) {
  try {
    parseText(std::move(text), options);
  } catch (const Error& e) {
    return e.diagnostic().location.toString() + ": " + e.message();
  }
  return "no error";
}

// The full formatted diagnostic (what the CLI prints).
std::string parseErrorText(std::string text) {
  try {
    parseText(std::move(text));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

template <typename F> std::string errorOf(F&& f) {
  const Failure failure = failureOf(f);
  if (failure.code == ExitCode::Ok) {
    return "no error";
  }
  return failure.internal ? "internal error" : failure.location + ": " + failure.message;
}

} // namespace

TEST_CASE("Parses scalars, arrays and objects", "[json]") {
  CHECK(parseText("null").root().is_null());
  CHECK(parseText("true").root() == Json(true));
  CHECK(parseText(" false ").root() == Json(false));
  CHECK(parseText("\"hi\"").root() == Json("hi"));
  CHECK(parseText("[]").root() == Json::array());
  CHECK(parseText("{}").root() == Json::object());
  CHECK(parseText(" [ 1 , [ ] , { } , \"x\" ] ").root().dump() == R"([1,[],{},"x"])");
  Json nested = parseText(R"({"a": {"b": [1, {"c": null}]}, "d": [[[]]]})").root();
  CHECK(nested.dump() == R"({"a":{"b":[1,{"c":null}]},"d":[[[]]]})");
}

TEST_CASE("Object key order is preserved", "[json]") {
  Json root = parseText(R"({"zeta": 1, "alpha": 2, "mid": 3})").root();
  CHECK(root.dump() == R"({"zeta":1,"alpha":2,"mid":3})");
  std::vector<std::string> keys;
  for (const auto& [key, value] : Value(parseText(R"({"b":1,"a":2,"c":3})")).members()) {
    keys.push_back(key);
  }
  CHECK(keys == std::vector<std::string>{"b", "a", "c"});
}

TEST_CASE("Numbers: int64 integers, doubles, and big integers as doubles", "[json]") {
  Json root = parseText("[0, -0, 42, -7, 9223372036854775807, -9223372036854775808, "
                        "9223372036854775808, 2.5, 3.0, 1e3, -1.5E-2, 1e-400, 0.0]")
                  .root();
  CHECK(root[0].is_number_integer());
  CHECK(root[1].get<std::int64_t>() == 0);
  CHECK(root[2].get<std::int64_t>() == 42);
  CHECK(root[3].get<std::int64_t>() == -7);
  CHECK(root[4].get<std::int64_t>() == INT64_MAX);
  CHECK(root[4].is_number_integer());
  CHECK(root[5].get<std::int64_t>() == INT64_MIN);
  CHECK(root[6].is_number_float());
  CHECK(root[6].get<double>() == 9223372036854775808.0);
  CHECK(root[7].get<double>() == 2.5);
  CHECK(root[8].is_number_float());
  CHECK(root[9].is_number_float());
  CHECK(root[9].get<double>() == 1000.0);
  CHECK(root[10].get<double>() == -0.015);
  CHECK(root[11].get<double>() == 0.0); // underflow rounds to zero
  CHECK(root[12].is_number_float());
}

TEST_CASE("Number syntax errors", "[json]") {
  CHECK(parseError("01") == "f.json:1:1: leading zeros are not allowed in numbers");
  CHECK(parseError("[-012]") == "f.json:1:3: leading zeros are not allowed in numbers");
  CHECK(parseError("[00]") == "f.json:1:2: leading zeros are not allowed in numbers");
  CHECK(parseError("1.") == "f.json:1:3: expected a digit after the decimal point");
  CHECK(parseError("[1.e5]") == "f.json:1:4: expected a digit after the decimal point");
  CHECK(parseError("1e") == "f.json:1:3: expected a digit in the exponent");
  CHECK(parseError("1e+") == "f.json:1:4: expected a digit in the exponent");
  CHECK(parseError("[-]") == "f.json:1:3: expected a digit after '-'");
  CHECK(parseError("[+1]") ==
        "f.json:1:2: expected a JSON value, got '+' (numbers must start with a digit or '-')");
  CHECK(parseError("[.5]") ==
        "f.json:1:2: expected a JSON value, got '.' (numbers must start with a digit or '-')");
  CHECK(parseError("[1, 1e400]") == "f.json:1:5: number out of range: 1e400");
  CHECK(parseError("-1e400") == "f.json:1:1: number out of range: -1e400");
  CHECK(parseError("[0x10]") == "f.json:1:3: expected ',' or ']' after array element");
}

TEST_CASE("NaN, Infinity and unknown words are rejected", "[json]") {
  CHECK(parseError("NaN") == "f.json:1:1: NaN is not allowed in JSON");
  CHECK(parseError("[1, Infinity]") == "f.json:1:5: Infinity is not allowed in JSON");
  CHECK(parseError("[-Infinity]") == "f.json:1:2: -Infinity is not allowed in JSON");
  CHECK(parseError("True") ==
        "f.json:1:1: expected a JSON value, got 'True' (JSON literals are lowercase: true)");
  CHECK(parseError("[nul]") == "f.json:1:2: expected a JSON value, got 'nul'");
  CHECK(parseError("[truex]") == "f.json:1:2: expected a JSON value, got 'truex'");
  CHECK(parseError("{\"a\": }") == "f.json:1:7: expected a JSON value, got '}'");
  CHECK(parseError("[,1]") == "f.json:1:2: expected a JSON value, got ','");
  CHECK(parseError("[\x01]") == "f.json:1:2: expected a JSON value, got byte 0x01");
}

TEST_CASE("Empty input and trailing content", "[json]") {
  CHECK(parseError("") == "f.json:1:1: empty file: expected a JSON value");
  CHECK(parseError("  \n\t \n") == "f.json:1:1: empty file: expected a JSON value");
  CHECK(parseError("{} x") == "f.json:1:4: unexpected content after the JSON value");
  CHECK(parseError("1 2") == "f.json:1:3: unexpected content after the JSON value");
  CHECK(parseError("{}\n}") == "f.json:2:1: unexpected content after the JSON value");
  CHECK(parseError("[1]\n\n  ") == "no error");
}

TEST_CASE("Structural errors say what was expected", "[json]") {
  CHECK(parseError(R"({"a" 1})") == "f.json:1:6: expected ':' after object key");
  CHECK(parseError(R"({a: 1})") == "f.json:1:2: expected a string key");
  CHECK(parseError(R"({"a": 1, 2: 3})") == "f.json:1:10: expected a string key");
  CHECK(parseError(R"({"a": 1 "b": 2})") == "f.json:1:9: expected ',' or '}' after object member");
  CHECK(parseError("[1 2]") == "f.json:1:4: expected ',' or ']' after array element");
  CHECK(parseError("[1}") == "f.json:1:3: expected ',' or ']' after array element");
  // At the end of input the caret goes just after the last token, not on an empty line.
  CHECK(parseError("{\"a\": 1\n\n") == "f.json:1:8: expected ',' or '}' after object member");
  CHECK(parseError("[1,\n") == "f.json:1:4: expected a JSON value, got end of input");
  CHECK(parseError("{\"a\"") == "f.json:1:5: expected ':' after object key");
  CHECK(parseError("{") == "f.json:1:2: expected a string key");
}

TEST_CASE("Trailing commas, comments and single quotes are rejected", "[json]") {
  CHECK(parseError("[1, 2,]") == "f.json:1:6: trailing comma before ']' is not allowed");
  CHECK(parseError("{\"a\": 1,\n}") == "f.json:1:8: trailing comma before '}' is not allowed");
  CHECK(parseError("// hi\n{}") == "f.json:1:1: comments are not allowed in JSON");
  CHECK(parseError("[1, /* x */ 2]") == "f.json:1:5: comments are not allowed in JSON");
  CHECK(parseError("{} // done") == "f.json:1:4: comments are not allowed in JSON");
  CHECK(parseError("{\"a\": 1 // x\n}") == "f.json:1:9: comments are not allowed in JSON");
  CHECK(parseError("['a']") == "f.json:1:2: strings must use double quotes, not single quotes");
  CHECK(parseError("{'a': 1}") == "f.json:1:2: strings must use double quotes, not single quotes");
}

TEST_CASE("String errors: unterminated, control characters, escapes", "[json]") {
  CHECK(parseError("\"abc") == "f.json:1:1: unterminated string");
  CHECK(parseError("[1, \"abc\\") == "f.json:1:5: unterminated string");
  CHECK(parseError("[\"ab\ncd\"]") ==
        "f.json:1:5: unterminated string: line break before the closing quote");
  CHECK(parseError("\"a\tb\"") == "f.json:1:3: unescaped control character 0x09 in string");
  CHECK(parseError("\"a\\xb\"") == "f.json:1:3: invalid escape '\\x' in string");
  CHECK(parseError("\"a\\'\"") == "f.json:1:3: invalid escape '\\'' in string");
  CHECK(parseError("\"\\u12G4\"") == "f.json:1:2: invalid \\u escape: expected four hex digits");
  CHECK(parseError("\"\\u12\"") == "f.json:1:2: invalid \\u escape: expected four hex digits");
}

TEST_CASE("Escapes and surrogate pairs decode to UTF-8", "[json]") {
  Json root =
      parseText(R"(["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u65e5", "\uD83D\uDE00", "\u0000"])").root();
  CHECK(root[0] == Json("\"\\/\b\f\n\r\t"));
  CHECK(root[1] == Json("A\xC3\xA9\xE6\x97\xA5"));
  CHECK(root[2] == Json("\xF0\x9F\x98\x80"));
  CHECK(root[3].get<std::string>() == std::string(1, '\0'));
  CHECK(parseError(R"("\uD800")") ==
        "f.json:1:2: unpaired high surrogate \\uD800 in string (expected a low surrogate "
        "\\uDC00-\\uDFFF after it)");
  CHECK(parseError(R"("x\ud800\u0041")") ==
        "f.json:1:3: unpaired high surrogate \\ud800 in string (expected a low surrogate "
        "\\uDC00-\\uDFFF after it)");
  CHECK(parseError(R"("\uDC00")") == "f.json:1:2: unpaired low surrogate \\uDC00 in string");
}

TEST_CASE("Valid multi-byte UTF-8 round-trips in strings and keys", "[json]") {
  std::string text = "{\"cl\xC3\xA9\": \"h\xC3\xA9llo \xE2\x86\x92 \xE6\x97\xA5\xE6\x9C\xAC "
                     "\xF0\x9F\x98\x80\"}";
  Document doc = parseText(text);
  CHECK(doc.root().dump() == text.substr(0, 8) + text.substr(9));
  CHECK(doc.root().at("cl\xC3\xA9") == Json("h\xC3\xA9llo \xE2\x86\x92 \xE6\x97\xA5\xE6\x9C\xAC "
                                            "\xF0\x9F\x98\x80"));
  CHECK(doc.locate("/cl\xC3\xA9").column == 10);
}

TEST_CASE("Invalid UTF-8 is reported at the bad byte", "[json]") {
  CHECK(parseError("\"a\xff\"") == "f.json:1:3: invalid UTF-8 byte 0xff");
  CHECK(parseError("[\"caf\xe9\"]") == "f.json:1:6: invalid UTF-8 byte 0xe9");        // Latin-1
  CHECK(parseError("\"\xc0\xaf\"") == "f.json:1:2: invalid UTF-8 byte 0xc0");         // overlong
  CHECK(parseError("\"\xe0\x80\x80\"") == "f.json:1:2: invalid UTF-8 byte 0xe0");     // overlong
  CHECK(parseError("\"\xed\xa0\x80\"") == "f.json:1:2: invalid UTF-8 byte 0xed");     // surrogate
  CHECK(parseError("\"\xf4\x90\x80\x80\"") == "f.json:1:2: invalid UTF-8 byte 0xf4"); // > U+10FFFF
  CHECK(parseError("\"\x80\"") == "f.json:1:2: invalid UTF-8 byte 0x80");
  CHECK(parseError("\"\xe2\x82") == "f.json:1:2: invalid UTF-8 byte 0xe2"); // truncated
  CHECK(parseError("[1,\n \xfe]") == "f.json:2:2: invalid UTF-8 byte 0xfe");
  CHECK(parseError("{}\xff") == "f.json:1:3: invalid UTF-8 byte 0xff");
  CHECK(parseError("{\"a\": 1\xc3}") == "f.json:1:8: invalid UTF-8 byte 0xc3");
  // Valid UTF-8 outside a string is just an unexpected character.
  CHECK(parseError("[\xC3\xA9]") == "f.json:1:2: expected a JSON value, got '\xC3\xA9'");
}

TEST_CASE("A byte order mark at the start is skipped", "[json]") {
  Document doc = parseText("\xEF\xBB\xBF{\"a\": 1}");
  CHECK(doc.root() == Json{{"a", 1}});
  CHECK(parseError("\xEF\xBB\xBF") == "f.json:1:1: empty file: expected a JSON value");
  CHECK(parseError("[\xEF\xBB\xBF]") ==
        "f.json:1:2: expected a JSON value, got '\xEF\xBB\xBF'"); // only at the start
}

TEST_CASE("Duplicate keys are errors at the second occurrence", "[json]") {
  CHECK(parseError("{\n  \"a\": 1,\n  \"a\": 2\n}") ==
        "f.json:3:3: duplicate key \"a\" (first defined at line 2, column 3)");
  CHECK(parseError(R"({"x": {"a": 1, "b": {"a": 2}, "a": 3}})") ==
        "f.json:1:31: duplicate key \"a\" (first defined at line 1, column 8)");
  // Large objects use a hash index; the first position is still reported.
  std::string big = "{";
  for (int i = 0; i < 50; ++i) {
    big += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  }
  CHECK(parseText(big + "\"last\": 0}").root().size() == 51);
  CHECK(parseError(big + "\"k7\": 0}") ==
        "f.json:1:" + std::to_string(big.size() + 1) +
            ": duplicate key \"k7\" (first defined at line 1, column 65)");
  CHECK(parseError(big + "\"k49\": 0}").find("duplicate key \"k49\"") != std::string::npos);
  // Keys that differ only after escapes decoding are duplicates too.
  CHECK(parseError(R"({"a": 1, "\u0061": 2})") ==
        "f.json:1:10: duplicate key \"a\" (first defined at line 1, column 2)");
}

TEST_CASE("Duplicate keys can be allowed: the last value wins in the first place", "[json]") {
  ParseOptions options;
  options.rejectDuplicateKeys = false;
  Document doc = parseText(R"({"a": 1, "b": 2, "a": [3]})", options);
  CHECK(doc.root().dump() == R"({"a":[3],"b":2})");
  CHECK(doc.locate("/a").column == 23);
  Document replaced = parseText(R"({"a": {"x": 1}, "a": {"y": 2}})", options);
  CHECK(replaced.root().dump() == R"({"a":{"y":2}})");
  CHECK(replaced.locate("/a/y").column == 28);
  CHECK(replaced.locate("/a/x").column == 22); // the replaced value's members are gone
}

TEST_CASE("Nesting depth is limited without using the stack", "[json]") {
  std::string deep(200000, '[');
  auto start = std::chrono::steady_clock::now();
  CHECK(parseError(deep) == "f.json:1:257: nesting deeper than 256 levels");
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed < std::chrono::seconds(1));

  std::string ok = std::string(256, '[') + std::string(256, ']');
  CHECK(parseError(ok) == "no error");
  std::string tooDeep = std::string(257, '[') + std::string(257, ']');
  CHECK(parseError(tooDeep) == "f.json:1:257: nesting deeper than 256 levels");
  std::string objects;
  for (int i = 0; i < 257; ++i) {
    objects += "{\"a\":";
  }
  CHECK(parseError(objects) ==
        "f.json:1:" + std::to_string(256 * 5 + 1) + ": nesting deeper than 256 levels");

  ParseOptions options;
  options.maxDepth = 3;
  CHECK(parseError("[[[1]]]", options) == "no error");
  CHECK(parseError("[[[[1]]]]", options) == "f.json:1:4: nesting deeper than 3 levels");
}

TEST_CASE("Very deep documents parse and destroy when the limit allows", "[json]") {
  const int depth = 100000;
  ParseOptions options;
  options.maxDepth = depth;
  std::string text;
  for (int i = 0; i < depth; ++i) {
    text += i % 2 == 0 ? "[" : "{\"k\":";
  }
  text += "1";
  for (int i = depth - 1; i >= 0; --i) {
    text += i % 2 == 0 ? "]" : "}";
  }
  {
    Document doc = parseText(text, options);
    CHECK(doc.root().is_array());
    CHECK(doc.locate("/0/k/0/k").column == 13);
  } // destroying the document must not recurse 100000 deep
}

TEST_CASE("Errors format with the source line and a caret", "[json]") {
  CHECK(parseErrorText("{\n  \"a\": 1,\n  \"b\": [1, 2,]\n}\n") ==
        "f.json:3:13: error: trailing comma before ']' is not allowed\n"
        "  \"b\": [1, 2,]\n"
        "            ^\n");
  CHECK(parseErrorText("{\n  \"a\": 1,\n  \"a\": 2\n}") ==
        "f.json:3:3: error: duplicate key \"a\" (first defined at line 2, column 3)\n"
        "  \"a\": 2\n"
        "  ^\n");
  CHECK(parseErrorText("[\n\t1 2\n]") ==
        "f.json:2:4: error: expected ',' or ']' after array element\n"
        "\t1 2\n"
        "\t  ^\n");
  try {
    parseText("[1,]");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
  }
}

TEST_CASE("Keys with ~ and / are located through their escaped pointers", "[json]") {
  Document doc = parseText(R"({"~01": 1, "~1": 2, "/": {"~": 3}})");
  CHECK(doc.locate("/~001").column == 9); // the key "~01"
  CHECK(doc.locate("/~01").column == 18); // the key "~1"
  CHECK(doc.locate("/~1/~0").column == 32);
  CHECK(doc.locate("/~1").column == 26); // the key "/", then "~"
  CHECK(Value(doc).member("/").member("~").pointer() == "/~1/~0");
}

TEST_CASE("JSON pointer tokens escape ~ and /", "[json]") {
  CHECK(escapePointerToken("plain") == "plain");
  CHECK(escapePointerToken("a/b") == "a~1b");
  CHECK(escapePointerToken("m~n") == "m~0n");
  CHECK(escapePointerToken("~/") == "~0~1");
  CHECK(escapePointerToken("") == "");
}

TEST_CASE("locate finds nested values and falls back to the nearest ancestor", "[json]") {
  Document doc = parseText("{\n"
                           "  \"a/b\": {\"c~d\": [10, 20]},\n"
                           "  \"list\": [\n"
                           "    {\"x\": true}\n"
                           "  ],\n"
                           "  \"\": 5\n"
                           "}\n");
  auto where = [&](const std::string& pointer) { return doc.locate(pointer).toString(); };
  CHECK(where("") == "f.json:1:1");
  CHECK(where("/a~1b") == "f.json:2:10");
  CHECK(where("/a~1b/c~0d") == "f.json:2:18");
  CHECK(where("/a~1b/c~0d/1") == "f.json:2:23");
  CHECK(where("/list/0") == "f.json:4:5");
  CHECK(where("/list/0/x") == "f.json:4:11");
  CHECK(where("/") == "f.json:6:7"); // the empty key
  CHECK(where("/list/7/y") == "f.json:3:11");
  CHECK(where("/nope") == "f.json:1:1");
  CHECK(where("/list/00") == "f.json:3:11"); // "00" is not an array index
  CHECK(where("/a~1b/c~0d/x") == "f.json:2:18");
  CHECK(where("no-slash") == "f.json:1:1");
  CHECK(doc.locate("/list/0/x").pointer == "/list/0/x");
  CHECK(doc.locate("/list/7/y").pointer == "/list/7/y");
}

TEST_CASE("errorAt prefixes the pointer and attaches the snippet", "[json]") {
  Document doc = parseText("{\n"
                           "  \"operations\": [\n"
                           "{\"kernel\": \"matmull\"}\n"
                           "  ]\n"
                           "}\n");
  Error e = doc.errorAt("/operations/0/kernel", "unknown kernel \"matmull\"");
  CHECK(std::string(e.what()) ==
        "f.json:3:12: error: at /operations/0/kernel: unknown kernel \"matmull\"\n"
        "{\"kernel\": \"matmull\"}\n"
        "           ^\n");
  CHECK(e.diagnostic().location.pointer == "/operations/0/kernel");
  CHECK(e.exitCode() == ExitCode::InvalidInput);
  Error root = doc.errorAt("", "no graph", ExitCode::CheckFailed);
  CHECK(root.message() == "no graph");
  CHECK(root.diagnostic().location.toString() == "f.json:1:1");
  CHECK(root.exitCode() == ExitCode::CheckFailed);
  CHECK(doc.source().name() == "f.json");
}

TEST_CASE("Value typed accessors", "[json]") {
  Document doc = parseText(R"({"i": -3, "d": 2.5, "b": true, "s": "hi", "n": null, "big": 1e30,
    "huge": 12345678901234567890, "f3": 3.0, "shape": [1, "x"], "low": -99999999999999999999})");
  Value root(doc);
  CHECK(root.isObject());
  CHECK(root.pointer().empty());
  CHECK(root.member("i").asInt64() == -3);
  CHECK(root.member("i").asDouble() == -3.0);
  CHECK(root.member("d").asDouble() == 2.5);
  CHECK(root.member("b").asBool());
  CHECK(root.member("s").asString() == "hi");
  CHECK(root.member("n").isNull());
  CHECK(root.member("i").isInteger());
  CHECK(root.member("d").isNumber());
  CHECK_FALSE(root.member("d").isInteger());

  CHECK(root.member("i").typeName() == "integer");
  CHECK(root.member("d").typeName() == "number");
  CHECK(root.member("b").typeName() == "boolean");
  CHECK(root.member("s").typeName() == "string");
  CHECK(root.member("n").typeName() == "null");
  CHECK(root.member("shape").typeName() == "array");
  CHECK(root.typeName() == "object");

  CHECK(errorOf([&] { root.member("shape").at(1).asInt64(); }) ==
        "f.json:2:59: at /shape/1: expected an integer, got string \"x\"");
  CHECK(errorOf([&] { root.member("big").asInt64(); }) ==
        "f.json:1:61: at /big: integer out of int64 range: 1e30");
  CHECK(errorOf([&] { root.member("huge").asInt64(); }) ==
        "f.json:2:13: at /huge: integer out of int64 range: 12345678901234567890");
  CHECK(errorOf([&] { root.member("low").asInt64(); }) ==
        "f.json:2:72: at /low: integer out of int64 range: -99999999999999999999");
  CHECK(errorOf([&] { root.member("d").asInt64(); }) ==
        "f.json:1:16: at /d: expected an integer, got number 2.5");
  CHECK(errorOf([&] { root.member("f3").asInt64(); }) ==
        "f.json:2:41: at /f3: expected an integer, got number 3.0");
  CHECK(errorOf([&] { root.member("b").asInt64(); }) ==
        "f.json:1:26: at /b: expected an integer, got boolean true");
  CHECK(errorOf([&] { root.member("n").asString(); }) ==
        "f.json:1:48: at /n: expected a string, got null");
  CHECK(errorOf([&] { root.member("s").asDouble(); }) ==
        "f.json:1:37: at /s: expected a number, got string \"hi\"");
  CHECK(errorOf([&] { root.member("i").asBool(); }) ==
        "f.json:1:7: at /i: expected a boolean, got integer -3");
  CHECK(errorOf([&] { root.member("shape").expectObject(); }) ==
        "f.json:2:55: at /shape: expected an object, got array");
  CHECK(errorOf([&] { root.expectArray(); }) == "f.json:1:1: expected an array, got object");
  CHECK(errorOf([&] { root.member("s").member("x"); }) ==
        "f.json:1:37: at /s: expected an object, got string \"hi\"");
}

TEST_CASE("Value objects: member, find, has, members, expectKeys", "[json]") {
  Document doc = parseText("{\n"
                           "  \"range\": {\"stop\": 4},\n"
                           "  \"a/b\": {\"x\": 1, \"y\": 2}\n"
                           "}\n");
  Value root(doc);
  Value range = root.member("range");
  CHECK(range.pointer() == "/range");
  CHECK(range.location().toString() == "f.json:2:12");
  CHECK(range.has("stop"));
  CHECK_FALSE(range.has("start"));
  CHECK_FALSE(range.find("start").has_value());
  CHECK(range.find("stop")->asInt64() == 4);
  CHECK(errorOf([&] { range.member("start"); }) ==
        "f.json:2:12: at /range: missing required key \"start\"");
  try {
    range.member("start");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "f.json:2:12: error: at /range: missing required key \"start\"\n"
                                   "  \"range\": {\"stop\": 4},\n"
                                   "           ^\n");
    CHECK(e.diagnostic().location.pointer == "/range");
  }

  auto members = root.member("a/b").members();
  REQUIRE(members.size() == 2);
  CHECK(members[0].first == "x");
  CHECK(members[0].second.pointer() == "/a~1b/x");
  CHECK(members[1].second.pointer() == "/a~1b/y");
  CHECK(members[1].second.location().toString() == "f.json:3:24");
  CHECK(root.size() == 2);

  CHECK_NOTHROW(root.member("a/b").expectKeys({"x", "y", "z"}));
  CHECK(errorOf([&] {
          root.member("a/b").expectKeys({"x", "z"});
        }) == "f.json:3:24: at /a~1b/y: unknown key \"y\" (expected one of: x, z)");
  CHECK(errorOf([&] { root.member("range").expectKeys({}); }) ==
        "f.json:2:21: at /range/stop: unknown key \"stop\" (no keys are allowed here)");
}

TEST_CASE("Value arrays: size, at, elements", "[json]") {
  Document doc = parseText("[10, [20, 30], \"s\"]");
  Value root(doc);
  CHECK(root.size() == 3);
  CHECK(root.at(1).at(1).asInt64() == 30);
  CHECK(root.at(1).at(1).pointer() == "/1/1");
  auto elements = root.elements();
  REQUIRE(elements.size() == 3);
  CHECK(elements[0].pointer() == "/0");
  CHECK(elements[2].pointer() == "/2");
  CHECK(elements[2].location().toString() == "f.json:1:16");
  CHECK(elements[1].elements()[0].pointer() == "/1/0");
  CHECK_THROWS_AS(root.at(3), InternalError);
  CHECK(errorOf([&] { root.at(3); }) == "internal error");
  CHECK(errorOf([&] { root.at(2).elements(); }) ==
        "f.json:1:16: at /2: expected an array, got string \"s\"");
  CHECK(errorOf([&] { root.at(0).size(); }) ==
        "f.json:1:2: at /0: expected an array or an object, got integer 10");
}

TEST_CASE("In-memory values name the file and pointer but no position", "[json]") {
  Json json = {{"a", "x"}, {"list", {1, 2.5}}};
  Value value(json, "mem.json");
  CHECK(value.member("list").at(0).asInt64() == 1);
  Error e = value.member("a").error("bad");
  CHECK(std::string(e.what()) == "mem.json: error: at /a: bad\n");
  CHECK(e.diagnostic().location.file == "mem.json");
  CHECK(e.diagnostic().location.pointer == "/a");
  CHECK_FALSE(e.diagnostic().snippet.has_value());
  CHECK(errorOf([&] { value.member("list").at(1).asInt64(); }) ==
        "mem.json: at /list/1: expected an integer, got number 2.5");
  CHECK(errorOf([&] { value.member("b"); }) == "mem.json: missing required key \"b\"");
  CHECK(value.member("list").location().pointer == "/list");
  CHECK(value.member("list").location().line == 0);

  Json unsignedBig = std::uint64_t{18446744073709551615ULL};
  CHECK(errorOf([&] { Value(unsignedBig).asInt64(); }) ==
        ": integer out of int64 range: 18446744073709551615");
  Json unsignedSmall = std::uint64_t{7};
  CHECK(Value(unsignedSmall).asInt64() == 7);
  CHECK(Value(unsignedSmall).typeName() == "integer");
}

TEST_CASE("brief renders short quoted values and elides long ones", "[json]") {
  CHECK(brief(Json("a\"b\n")) == "\"a\\\"b\\n\"");
  CHECK(brief(Json(3)) == "3");
  CHECK(brief(Json(2.5)) == "2.5");
  CHECK(brief(Json(nullptr)) == "null");
  CHECK(brief(Json{1, 2}) == "[1,2]");
  std::string longText(100, 'x');
  std::string shown = brief(Json(longText));
  CHECK(shown == "\"" + std::string(36, 'x') + "...");
  CHECK(shown.size() == 40);
  // Never cuts a multi-byte character in half.
  std::string accents;
  for (int i = 0; i < 30; ++i) {
    accents += "\xC3\xA9";
  }
  std::string cut = brief(Json(accents));
  CHECK(cut == "\"" + accents.substr(0, 36) + "...");
  // briefText is the same cut on raw text (no quotes added).
  CHECK(briefText("abc") == "abc");
  CHECK(briefText(std::string(40, 'y')) == std::string(40, 'y'));
  CHECK(briefText(std::string(41, 'y')) == std::string(37, 'y') + "...");
  CHECK(briefText(accents) == accents.substr(0, 36) + "...");
}
