// The fuzz target without libFuzzer: every file named on the command line (a directory: every
// file in it, sorted) given once to LLVMFuzzerTestOneInput, as `case_reader_fuzz FILE...` does.
// Built with the ordinary test suite, so that `make test` and `make asan` (ASan + UBSan) run the
// seed corpus and the hostile program files in CI, bounded by their count; `make fuzz` is the
// coverage-guided search (clang, libFuzzer) run by hand.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p = argv[i];
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "fuzz_replay: cannot read %s\n", f.c_str());
      return 2;
    }
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("fuzz_replay: %zu inputs, none crashed\n", files.size());
  return files.empty() ? 1 : 0;
}
