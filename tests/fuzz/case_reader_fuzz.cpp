// libFuzzer target for the case reader (issue #4, item 6) and the program reader (issue #22):
// whatever bytes a case file holds, read_case either returns a Case or throws InputError -- never
// crashes, leaks, hangs, overflows the stack or throws anything else. Built by `make fuzz` (clang,
// -fsanitize=fuzzer,address, undefined; see tests/fuzz/CMakeLists.txt), seeded from
// tests/fuzz/corpus.
//
// read_case takes a path, so each input is written to an in-memory file (memfd) and read back
// through /proc/self/fd/N: no disk traffic, nothing left behind.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "interp/eval.hpp"
#include "interp/program.hpp"
#include "io/case_reader.hpp"
#include "programs/program.hpp"
#include "support/errors.hpp"

namespace {

int memfd() {
  static const int fd = [] {
    const int f = memfd_create("meshrun-fuzz-case", MFD_CLOEXEC);
    if (f < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    return f;
  }();
  return fd;
}

void write_all(int fd, const std::uint8_t* data, std::size_t size) {
  if (ftruncate(fd, 0) != 0) std::abort();
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
}

void read_one(const std::string& path, const meshrun::ProgramDef* program, int devices) {
  try {
    (void)meshrun::read_case(path, program, devices);
  } catch (const meshrun::InputError&) {
    // The documented outcome for bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "read_case threw something other than InputError: %s\n", e.what());
    std::abort();
  }
}

// As `meshrun run PROG.json` reads a program file: read, built into a program, and -- when a
// shape binds -- checked equation by equation against a 16-row f32 input per argument.
void read_program(const std::string& path) {
  try {
    const auto lp = meshrun::interp::load_program(path, std::uint64_t{1} << 20,
                                                  std::chrono::milliseconds(100), "");
    std::vector<meshrun::Shape> shapes;
    for (const auto& in : lp->file.inputs) shapes.push_back(meshrun::Shape(in.shape.size(), 16));
    meshrun::interp::check_export(lp->file,
                                  meshrun::interp::bind(lp->file, lp->def.mesh, shapes, {}));
  } catch (const meshrun::InputError&) {
    // The documented outcome for bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "the program reader threw something other than InputError: %s\n",
                 e.what());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd();
  write_all(fd, data, size);
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  // As `meshrun check` reads it: the case names its program.
  read_one(path, nullptr, 8);
  // As `meshrun <program> CASE --devices N` reads it: a bare input object is accepted too. The
  // program and device count follow from the length, so mutations reach every combination.
  static const int kDevices[] = {1, 2, 3, 8};
  const auto& programs = meshrun::all_programs();
  if (!programs.empty()) {
    read_one(path, programs[size % programs.size()], kDevices[(size / 2) % 4]);
  }
  read_program(path);
  return 0;
}
