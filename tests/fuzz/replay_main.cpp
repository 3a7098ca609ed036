// Runs a fuzz target's LLVMFuzzerTestOneInput on files, without libFuzzer: every
// regular build (GCC, release and ASan) replays the seed corpora and every kept
// crasher through the same entry point the fuzzer uses.
//   fuzz_replay_NAME FILE_OR_DIR...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void replay(const std::filesystem::path& path, int& count) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  ++count;
}

} // namespace

int main(int argc, char** argv) {
  int count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg)) {
        if (entry.is_regular_file()) {
          files.push_back(entry.path());
        }
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        replay(f, count);
      }
    } else if (std::filesystem::is_regular_file(arg)) {
      replay(arg, count);
    } else {
      std::fprintf(stderr, "fuzz replay: no such file or directory: %s\n", argv[i]);
      return 2;
    }
  }
  if (count == 0) {
    std::fprintf(stderr, "fuzz replay: no inputs\n");
    return 2;
  }
  std::printf("replayed %d inputs\n", count);
  return 0;
}
