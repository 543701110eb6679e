// `meshrun bench programs`: a size sweep of every program, each case written twice -- inline JSON
// and with its arrays in .npy files -- and run as a whole meshrun process with --timings, the way a
// user runs it. One row per (program, size, input form) with the --timings fields of the best of
// --rounds runs (the machine is shared: the best is the least disturbed). bench/programs.sh runs
// numpy (../shared/peers/programs_numpy.py) on the same files beside it.
#include <array>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cli.hpp"

#include "commands.hpp"
#include "flag_checks.hpp"
#include "exit_codes.hpp"
#include "io/npy.hpp"
#include "io/output.hpp"
#include "programs/program.hpp"
#include "support/errors.hpp"

extern char** environ;

namespace meshrun {
namespace {

namespace fs = std::filesystem;

struct Size {
  std::string program;
  std::map<std::string, std::size_t> dims;  // symbolic dimension -> extent
  bool large;                               // skipped by --quick
};

// Multiples of 8 everywhere, so each program's default mesh divides them. (Built on first use,
// not at start-up: every meshrun process would pay for it.)
const std::vector<Size>& sizes() {
  static const std::vector<Size> kSizes = {
      {"dp-step", {{"N", 8192}, {"D", 64}, {"K", 16}}, false},
      {"dp-step", {{"N", 65536}, {"D", 64}, {"K", 16}}, true},
      {"tp-mlp", {{"B", 64}, {"D", 256}, {"H", 1024}, {"O", 64}}, false},
      {"tp-mlp", {{"B", 256}, {"D", 1024}, {"H", 4096}, {"O", 256}}, true},
      {"mlp-train", {{"B", 64}, {"D", 256}, {"H", 512}, {"O", 64}}, false},
      {"mlp-train", {{"B", 256}, {"D", 512}, {"H", 2048}, {"O", 128}}, true},
  };
  return kSizes;
}

constexpr std::array<const char*, 9> kFields = {"read_s",        "shard_s",   "compute_s",
                                                "collectives_s", "write_s",   "total_s",
                                                "gflops",        "read_MBps", "cpu_s"};

std::string size_label(const Size& s) {
  std::string label;
  for (const auto& [dim, n] : s.dims)
    label += (label.empty() ? "" : ",") + dim + "=" + std::to_string(n);
  return label;
}

// The program's inputs with values as gen_big_case.py makes them: uniform in [-1, 1) with 4
// significant digits, weights (inputs named w*) scaled by 1/sqrt(fan-in), lr 0.01.
std::vector<Tensor> make_inputs(const ProgramDef& program, const Size& size) {
  std::mt19937 rng(20261130);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<Tensor> inputs;
  for (const ArgDef& a : program.inputs) {
    Shape shape;
    for (const std::string& d : a.dims) shape.push_back(size.dims.at(d));
    if (shape.empty()) {
      inputs.push_back(Tensor::scalar(0.01f));
      continue;
    }
    Tensor t(shape);
    const float scale = a.name[0] == 'w' ? 1.0f / std::sqrt(static_cast<float>(shape[0])) : 1.0f;
    char text[32];
    for (float& v : t.data) {
      std::snprintf(text, sizeof text, "%.4g", static_cast<double>(uniform(rng) * scale));
      v = std::strtof(text, nullptr);
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

void append_json(std::string& out, const Tensor& t) {
  char text[32];
  auto number = [&](float v) {
    std::snprintf(text, sizeof text, "%.4g", static_cast<double>(v));
    out += text;
  };
  if (t.rank() == 0) return number(t.data[0]);
  const std::size_t cols = t.rank() == 1 ? t.size() : t.cols();
  const std::size_t rows = t.rank() == 1 ? 1 : t.rows();
  if (t.rank() == 2) out += '[';
  for (std::size_t i = 0; i < rows; ++i) {
    out += i ? ",[" : "[";
    for (std::size_t j = 0; j < cols; ++j) {
      if (j) out += ',';
      number(t.data[i * cols + j]);
    }
    out += ']';
  }
  if (t.rank() == 2) out += ']';
}

// A symbolic link at `path` removed (bench programs writes its own files, not the link's target).
void unlink_link(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) ::unlink(path.c_str());
}

// Writes the case twice under `dir`: inline.json, and npy/case.json with its arrays in npy/*.npy.
// Returns the two case paths.
std::pair<std::string, std::string> write_cases(const ProgramDef& program,
                                                const std::vector<Tensor>& inputs,
                                                const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir / "npy", ec);
  if (ec)
    throw InputError("--keep", "cannot create " + (dir / "npy").string() + ": " + ec.message());
  std::string inline_text = R"({"problem":")" + program.name + R"(","name":"bench","input":{)";
  std::string npy_text = inline_text;
  std::vector<std::string> array_names;
  std::vector<Tensor> arrays;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = program.inputs[i].name;
    const std::string key = (i ? "," : "") + std::string("\"") + name + "\":";
    inline_text += key;
    append_json(inline_text, inputs[i]);
    npy_text += key;
    if (inputs[i].rank() == 0) {
      append_json(npy_text, inputs[i]);
    } else {
      npy_text += R"({"npy":")" + name + R"(.npy"})";
      array_names.push_back(name);
      arrays.push_back(inputs[i]);
    }
  }
  inline_text += "}}\n";
  npy_text += "}}\n";
  const std::string inline_path = (dir / "inline.json").string();
  const std::string npy_path = (dir / "npy" / "case.json").string();
  // Its own files: a link left where one goes is removed, never written through.
  for (const std::string& name : array_names)
    unlink_link(meshrun::npy_path((dir / "npy").string(), name));
  for (const std::string* path : {&inline_path, &npy_path}) unlink_link(*path);
  NpyFiles((dir / "npy").string(), array_names, "--keep", OutputFile::kDefaultOpenWait)
      .commit(arrays);
  for (const auto& [path, text] : {std::pair{&inline_path, &inline_text}, {&npy_path, &npy_text}}) {
    OutputFile(*path, "--keep", OutputFile::Mode::kAtomic).commit(*text);
  }
  return {inline_path, npy_path};
}

// Runs `meshrun PROGRAM CASE --timings` (this very binary) with stdout to /dev/null; returns the
// --timings line it printed on stderr -- read through a pipe, so no file of the user's directory
// (a FIFO or a link named like a scratch file) is ever opened -- parsed, with "cpu_s": the CPU
// seconds (user + system, every thread) the process took, as wait4 reports them.
// `program_file` not empty: `meshrun run PROGRAM_FILE CASE`, the exported program interpreted.
nlohmann::json run_timed(const std::string& program, const std::string& case_path,
                         const std::string& program_file = "") {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) throw InternalError("bench programs: cannot make a pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  // In process even when the bench itself runs under mpirun: --timings times one process.
  std::vector<std::string> args = {self, program, case_path, "--timings", "--backend", "inprocess"};
  if (!program_file.empty()) args.insert(args.begin() + 1, {"run", program_file});
  if (!program_file.empty()) args.erase(args.begin() + 3);  // the program's name
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(err[1]);
  if (spawned != 0) {
    ::close(err[0]);
    throw InternalError("bench programs: cannot start " + self);
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(err[0]);
  int status = 0;
  pid_t waited = 0;
  rusage usage{};
  while ((waited = ::wait4(pid, &status, 0, &usage)) < 0 && errno == EINTR) {
  }
  if (waited != pid) throw InternalError("bench programs: lost track of meshrun " + program);
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) last = line;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw InternalError("bench programs: meshrun " + program + " " + case_path +
                        " failed: " + last);
  }
  nlohmann::json t = nlohmann::json::parse(last);
  const auto seconds = [](const timeval& v) {
    return static_cast<double>(v.tv_sec) + 1e-6 * static_cast<double>(v.tv_usec);
  };
  t["cpu_s"] = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  return t;
}

struct Flags {
  // Where the exported programs are (`meshrun run` rows beside the hand-written ones); "" none.
  std::string programs = "cases/programs";
  int rounds = 3;
  bool quick = false;
  bool json = false;
  std::string keep;  // "" : a temp directory, removed at the end
};

// The directory the cases go to: --keep's (created if missing; one that is not a directory is
// exit 2), else a fresh one from mkdtemp, removed at the end whatever ends the run.
class CaseDir {
 public:
  explicit CaseDir(const std::string& keep) {
    if (!keep.empty()) {
      std::error_code ec;
      fs::create_directories(keep, ec);
      if (ec || !fs::is_directory(keep)) {
        throw InputError("--keep", "cannot write " + keep + ": " +
                                       (ec ? ec.message() : std::string("Not a directory")));
      }
      root_ = keep;
      return;
    }
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    if (ec) throw InputError("TMPDIR", "no temporary directory: " + ec.message());
    std::string dir = (tmp / "meshrun-bench-programs.XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr)
      throw InputError("TMPDIR",
                       "cannot make a directory in " + tmp.string() + ": " + std::strerror(errno));
    root_ = dir;
    temporary_ = true;
  }
  ~CaseDir() {
    std::error_code ec;
    if (temporary_) fs::remove_all(root_, ec);
  }
  CaseDir(const CaseDir&) = delete;
  CaseDir& operator=(const CaseDir&) = delete;
  const fs::path& path() const { return root_; }

 private:
  fs::path root_;
  bool temporary_ = false;
};

void run_bench_programs(const Flags& flags) {
  const CaseDir cases(flags.keep);
  const fs::path& root = cases.path();
  nlohmann::json rows = nlohmann::json::array();
  if (!flags.json) {
    std::string head = "# meshrun bench programs: whole process, best of " +
                       std::to_string(flags.rounds) +
                       " runs by total_s (cpu_s: the median run's CPU seconds, every thread)\n#  "
                       "program    input  size" +
                       std::string(36, ' ');
    for (const std::string f : kFields) head += f + "  ";
    write_stdout(head + "\n");
  }
  for (const Size& size : sizes()) {
    if (flags.quick && size.large) continue;
    const ProgramDef* program = find_program(size.program);
    MESHRUN_CHECK(program != nullptr, "bench programs names a registered program");
    const fs::path dir = root / (size.program + "-" + size_label(size));
    const auto [inline_path, npy_path] = write_cases(*program, make_inputs(*program, size), dir);
    // The .npy case again through the exported program, when its file is there: "run" rows.
    const std::string exported =
        flags.programs.empty() ? "" : flags.programs + "/" + size.program + ".json";
    std::vector<std::tuple<const char*, std::string, std::string>> forms = {
        {"json", inline_path, ""}, {"npy", npy_path, ""}};
    if (!exported.empty() && fs::is_regular_file(exported))
      forms.emplace_back("run", npy_path, exported);
    for (const auto& [form, path, file] : forms) {
      nlohmann::json best;
      std::vector<double> cpu;
      for (int r = 0; r < flags.rounds; ++r) {
        nlohmann::json t = run_timed(size.program, path, file);
        cpu.push_back(t.at("cpu_s").get<double>());
        if (best.is_null() || t.at("total_s").get<double>() < best.at("total_s").get<double>())
          best = t;
      }
      // The CPU time is the median over the rounds (the lower middle one of an even count): on a
      // shared machine it moves less than the wall time, and the median less than the best.
      std::sort(cpu.begin(), cpu.end());
      best["cpu_s"] = cpu[(cpu.size() - 1) / 2];
      best["program"] = size.program;
      best["input"] = form;
      best["size"] = size_label(size);
      best["case"] = path;
      if (!flags.json) {
        char line[512];
        int n = std::snprintf(line, sizeof line, "  %-10s %-5s  %-40s", size.program.c_str(), form,
                              size_label(size).c_str());
        for (const std::string f : kFields) {
          n += std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), " %*.4g",
                             static_cast<int>(f.size() + 1), best.at(f).get<double>());
        }
        write_stdout(std::string(line) + "\n");
      }
      rows.push_back(std::move(best));
    }
  }
  if (flags.json) write_stdout(rows.dump(1) + "\n");
}

}  // namespace

void add_bench_programs_command(CLI::App& bench) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = bench.add_subcommand(
      "programs",
      "Run every program at several sizes, inline JSON and .npy inputs, as whole processes with "
      "--timings; one row per case (bench/programs.sh adds numpy beside it)");
  cmd->add_option("--rounds", flags->rounds, "Runs per case; the best is shown")
      ->transform(decimal_integer(1, 100))
      ->capture_default_str();
  cmd->add_flag("--quick", flags->quick, "Only the small sizes");
  cmd->add_option("--programs", flags->programs,
                  "Also run the .npy cases through DIR/<program>.json (meshrun run: input "
                  "\"run\"), where that file exists; \"\" for none")
      ->capture_default_str();
  cmd->add_flag("--json", flags->json, "One JSON array instead of the table");
  cmd->add_option("--keep", flags->keep, "Write the cases under this directory and keep them")
      ->check(path_to_write("DIR"));
  cmd->callback([flags] { run_bench_programs(*flags); });
}

}  // namespace meshrun
