#include "check/cases.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "io/json_text.hpp"
#include "support/errors.hpp"
#include "support/printable.hpp"

namespace meshrun {
namespace {

namespace fs = std::filesystem;

// Walks `dir` recursively in sorted order, following symbolic links to directories (each
// directory once, by device and inode, so a link cycle ends). Every *.json entry is a case: a
// dangling link or a non-file named *.json is kept as an ERROR, never skipped silently.
void walk(const fs::path& dir, std::size_t suite, std::set<std::pair<dev_t, ino_t>>& seen,
          std::vector<Found>& out) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second) return;
  std::error_code ec;
  std::vector<fs::path> entries;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    entries.push_back(it->path());
  }
  if (ec) throw InputError(dir.string(), "cannot list: " + ec.message());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    const fs::file_status target = fs::status(p, ec);  // follows links
    if (fs::is_directory(target)) {
      walk(p, suite, seen, out);
    } else if (p.extension() == ".json") {
      if (fs::is_regular_file(target)) {
        out.push_back({p.string(), "", suite});
      } else if (!fs::exists(target)) {
        out.push_back({p.string(),
                       fs::is_symlink(fs::symlink_status(p, ec)) ? "dangling symbolic link"
                                                                 : "cannot read: " + ec.message(),
                       suite});
      } else {
        out.push_back({p.string(), "not a regular file", suite});
      }
    }
  }
}

}  // namespace

std::vector<Found> collect_cases(const std::vector<std::string>& paths) {
  std::vector<Found> cases;
  for (std::size_t suite = 0; suite < paths.size(); ++suite) {
    const std::string& path = paths[suite];
    std::error_code ec;
    if (!fs::exists(path, ec)) throw InputError(path, "no such file or directory");
    if (!fs::is_directory(path, ec)) {
      // A FIFO or a device is no case file (as in a directory): reading one could wait forever.
      cases.push_back({path, fs::is_regular_file(path, ec) ? "" : "not a regular file", suite});
      continue;
    }
    std::set<std::pair<dev_t, ino_t>> seen;
    const std::size_t before = cases.size();
    walk(path, suite, seen, cases);
    if (cases.size() == before) {
      throw NoCasesError(printable(path) + ": no case files (*.json) in this directory");
    }
  }
  return cases;
}

RanCase run_case(const std::string& file, const RunFlags& flags, FileSet* files,
                 const ProgramDef* program) {
  RanCase ran;
  const MeshShape asked = flag_mesh(flags);
  const MeshOptions options = mesh_options(flags);
  ran.c = read_case(file, program, flags.devices, asked, flags.max_input_bytes, options.timeout);
  for (const NpyFile& npy : ran.c.npy_files) {
    if (files == nullptr) break;
    try {
      files->read("the .npy file " + npy.field + " of " + display_name(file) + " reads", npy.path);
    } catch (const InputError& e) {
      throw FileClash(e);
    }
  }
  ran.program = program != nullptr ? program : find_program(ran.c.problem);
  Mesh mesh(run_mesh(*ran.program, asked, ran.c.mesh, flags.devices), options);
  Trace trace;
  const std::vector<TensorRef> inputs = ran.c.input_refs();
  ran.outputs = shard_map(mesh, *ran.program, inputs, &trace);
  ran.structure = check_structure(ran.program->structure, trace, inputs, ran.outputs);
  // As a program run says it (exit 2): an injection that never fired tested nothing.
  for (const Injection& inj : mesh.unfired_injections()) {
    ran.unfired.push_back("--inject: " +
                          unfired_message(inj, mesh.collectives_entered(inj.device)));
  }
  return ran;
}

std::string case_error(const std::exception& e, const std::string& file) {
  if (dynamic_cast<const InputError*>(&e)) {
    const std::string prefix = display_name(file) + ": ";
    const std::string message = e.what();
    return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  }
  if (dynamic_cast<const CollectiveError*>(&e) || dynamic_cast<const DeviceError*>(&e)) {
    return e.what();
  }
  return "";
}

}  // namespace meshrun
