// libFuzzer target for the case reader (issue #4, item 6), the program reader (issue #22) and the
// interpreter (issue #31):
// whatever bytes a case file holds, read_case either returns a Case or throws InputError -- never
// crashes, leaks, hangs, overflows the stack or throws anything else. Built by `make fuzz` (clang,
// -fsanitize=fuzzer,address, undefined; see tests/fuzz/CMakeLists.txt), seeded from
// tests/fuzz/corpus.
//
// read_case takes a path, so each input is written to an in-memory file (memfd) and read back
// through /proc/self/fd/N: no disk traffic, nothing left behind.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "interp/eval.hpp"
#include "mesh/mesh.hpp"
#include "grade/load.hpp"
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
// shape binds -- checked equation by equation against a 16-row input per argument, then (issue
// #31) run by the interpreter on a mesh of the export's shape when the check passed and the
// program is small (the cost bound of a run is the run's own limit, not this target's).
// Bad input may end in any of meshrun's typed errors but an internal one; anything else -- an
// InternalError, another exception, a crash, a hang -- is a finding.
void read_program(const std::string& path, std::uint64_t max_bytes) {
  try {
    const auto lp =
        meshrun::interp::load_program(path, max_bytes, std::chrono::milliseconds(100), "");
    std::vector<meshrun::Shape> shapes;
    for (const auto& in : lp->file.inputs) shapes.push_back(meshrun::Shape(in.shape.size(), 16));
    const std::uint64_t flops = meshrun::interp::check_export(
        lp->file, meshrun::interp::bind(lp->file, lp->def.mesh, shapes, {}));
    if (flops > (std::uint64_t{1} << 24)) return;
    std::vector<meshrun::Tensor> inputs;
    for (const auto& in : lp->def.inputs) {
      const meshrun::Shape shape(in.dims.size(), 16);
      inputs.emplace_back(shape, std::vector<float>(meshrun::shape_size(shape), 1.0f));
    }
    meshrun::MeshOptions options;
    options.timeout = std::chrono::seconds(2);
    meshrun::Mesh mesh(lp->def.mesh, options);
    (void)meshrun::shard_map(mesh, lp->def, inputs, nullptr);
  } catch (const meshrun::InternalError& e) {
    std::fprintf(stderr, "the program reader or interpreter broke an invariant: %s\n", e.what());
    std::abort();
  } catch (const meshrun::Error&) {
    // The documented outcomes for bad input (InputError), a mesh failure, a non-finite result.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "the program reader or interpreter threw something untyped: %s\n",
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
  // Within the fuzzer's -max_len, 1 MiB; the hostile files `make fuzz` runs once are larger.
  read_program(path, std::max<std::uint64_t>(std::uint64_t{1} << 20, size));
  return 0;
}
