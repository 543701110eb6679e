// Every file meshrun touches is safe (issue 19), one test case per class of the issue: no output
// replaces an input (1) or another output (2), an empty name is never "off" (3), --update blesses
// only what it computed (4), `check` keeps the program commands' promises (5), signals leave no
// temporary file and a FIFO never hangs an open (6). Class 7 (JUnit's non-characters) is in
// reports_test, class 8 (MPI) in tests/mpi/cli_test.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "io/case_reader.hpp"
#include "io/expected_patch.hpp"
#include "io/npy.hpp"
#include "io/signal_cleanup.hpp"
#include "support/run_meshrun.hpp"

namespace {

namespace fs = std::filesystem;
using meshrun::testing::has;
using meshrun::testing::names;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::run_with;
using meshrun::testing::RunOptions;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

const std::string kExample = "cases/dp-step/example1.json";
const std::string kResult = "{\"w\":[[1.11]],\"b\":[0.2],\"loss\":121.0}\n";

// dp-step's example 1 laid out as `bench programs` lays a case out: every array in a .npy file
// beside it, named after its input -- so `w.npy` and `b.npy` are also what --save-npy writes.
struct NpyCase {
  TempDir dir;
  std::string json;
  std::vector<std::string> arrays{"w.npy", "b.npy", "x.npy", "y.npy"};
  NpyCase() {
    using meshrun::Tensor;
    std::vector<float> x, y;
    for (int i = 1; i <= 8; ++i) {
      x.push_back(static_cast<float>(i));
      y.push_back(static_cast<float>(2 * i + 1));
    }
    dir.write("w.npy", meshrun::npy_bytes(Tensor({1, 1}, {0.0f})));
    dir.write("b.npy", meshrun::npy_bytes(Tensor({1}, {0.0f})));
    dir.write("x.npy", meshrun::npy_bytes(Tensor({8, 1}, x)));
    dir.write("y.npy", meshrun::npy_bytes(Tensor({8, 1}, y)));
    json = dir.write("c.json",
                     R"({"problem":"dp-step","name":"npy","input":{"w":{"npy":"w.npy"},)"
                     R"("b":{"npy":"b.npy"},"x":{"npy":"x.npy"},"y":{"npy":"y.npy"},"lr":0.01},)"
                     R"("expected":{"w":[[1.11]],"b":[0.2],"loss":121.0}})");
  }
  std::vector<std::string> bytes() const {
    std::vector<std::string> out;
    for (const std::string& a : arrays) out.push_back(slurp(dir / a));
    return out;
  }
};

void dir_write_back(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void expect_refused(const Result& r, const std::string& line) {
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.out == "");
  BOOST_TEST(r.err == "meshrun: " + line + "\n");
}

}  // namespace

// ---- 1. outputs never alias inputs -------------------------------------------------------------

BOOST_AUTO_TEST_CASE(no_output_flag_replaces_an_input_the_case_reads) {
  NpyCase c;
  const std::vector<std::string> before = c.bytes();
  BOOST_TEST(run({"dp-step", c.json}).out == kResult);  // the layout itself runs
  const std::string d = c.dir.path;
  expect_refused(run({"dp-step", c.json, "--save-npy", d}),
                 "--save-npy: " + d +
                     "/w.npy is the .npy file input.w reads; refusing to "
                     "overwrite it");
  expect_refused(run({"dp-step", c.json, "-o", d + "/x.npy"}),
                 "--output: " + d +
                     "/x.npy is the .npy file input.x reads; refusing to "
                     "overwrite it");
  expect_refused(run({"dp-step", c.json, "--trace=" + d + "/y.npy"}),
                 "--trace: " + d +
                     "/y.npy is the .npy file input.y reads; refusing to "
                     "overwrite it");
  expect_refused(run({"dp-step", c.json, "--profile", d + "/./b.npy"}),
                 "--profile: " + d +
                     "/./b.npy is the .npy file input.b reads; refusing to "
                     "overwrite it");
  // check's reports: the case's inputs are known once it is read; no report is written then.
  const Result r = run({"check", "--json", d + "/w.npy", c.json});
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err == "meshrun: --json: " + d + "/w.npy is the .npy file input.w of " + c.json +
                          " reads; refusing to overwrite it\n");
  BOOST_TEST(run({"check", "--junit", c.json, c.json}).code == 2);
  BOOST_TEST(c.bytes() == before);
  // Nor does stdout, when it is an input (`>> case.json`, `>> x.npy`).
  const std::string json = slurp(c.json);
  for (const std::string& input : {c.json, d + "/x.npy"}) {
    RunOptions o;
    o.stdout_path = input;
    o.stdout_append = true;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"dp-step", c.json}, {"check", c.json}}) {
      const Result s = run_with(args, o);
      BOOST_TEST(s.code == 2, s.err);
      BOOST_TEST(has(s.err, "meshrun: stdout: is "), s.err);
    }
  }
  BOOST_TEST(slurp(c.json) == json);
  // Nor stderr, when --trace, --show-sharding or --timings write there (`2>> case.json`): only
  // the refusal's own line lands in it, stderr being where the user sent errors.
  for (const std::string flag : {"--trace", "--show-sharding", "--timings"}) {
    RunOptions o;
    o.stderr_append = c.json;
    BOOST_TEST(run_with({"dp-step", c.json, flag}, o).code == 2, flag);
  }
  BOOST_TEST(slurp(c.json) == json.substr(0, json.size()) + "meshrun: stderr: is " + c.json +
                                  ", the case file being read; refusing to write into it\n" +
                                  "meshrun: stderr: is " + c.json +
                                  ", the case file being read; refusing to write into it\n" +
                                  "meshrun: stderr: is " + c.json +
                                  ", the case file being read; refusing to write into it\n");
  dir_write_back(c.json, json);
  BOOST_TEST(names(d) == (std::vector<std::string>{"b.npy", "c.json", "w.npy", "x.npy", "y.npy"}));
}

// ---- 2. outputs never alias each other ----------------------------------------------------------

BOOST_AUTO_TEST_CASE(two_outputs_naming_one_file_by_any_spelling_are_refused) {
  TempDir dir;
  const std::string d = dir.path;
  fs::create_directory(dir / "sub");
  fs::create_directory_symlink(dir / "sub", dir / "link");  // link/.. is d, not sub/..'s d
  // --save-npy DIR writes DIR/NAME.npy for every output, also into a directory not there yet.
  expect_refused(
      run({"dp-step", kExample, "--save-npy", d + "/arrays", "-o", d + "/arrays/loss.npy"}),
      "--save-npy: " + d +
          "/arrays/loss.npy is also the --output file; refusing to "
          "write both to it");
  expect_refused(run({"check", "--junit", d + "/F", "--json", d + "/./F", kExample}),
                 "--json: " + d + "/./F is also the --junit file; refusing to write both to it");
  // Resolved through the link, not lexically: link/../r.json is sub/../r.json is d/r.json.
  expect_refused(
      run({"dp-step", kExample, "-o", d + "/link/../r.json", "--profile", d + "/r.json"}),
      "--profile: " + d +
          "/r.json is also the --output file; refusing to write both to "
          "it");
  // --save-npy's files are opened before the run: a DIR that cannot be made is exit 2 first.
  dir.write("plain", "");
  expect_refused(run({"dp-step", kExample, "--save-npy", d + "/plain/sub"}),
                 "--save-npy: cannot create " + d + "/plain/sub: Not a directory");
  fs::remove(dir / "plain");
  // check's reports are files: `-` would be mixed into the lines on stdout.
  BOOST_TEST(run({"check", "--json", "-", kExample}).code == 2);
  // A device has nothing to replace: two outputs may both be /dev/null.
  BOOST_TEST(run({"dp-step", kExample, "-o", "/dev/null", "--profile", "/dev/null"}).code == 0);
  // A hard link is the same file.
  dir.write("a.txt", "keep");
  fs::create_hard_link(dir / "a.txt", dir / "b.txt");
  expect_refused(run({"dp-step", kExample, "--trace=" + d + "/a.txt", "--profile", d + "/b.txt"}),
                 "--profile: " + d +
                     "/b.txt is also the --trace file; refusing to write both to "
                     "it");
  BOOST_TEST(slurp(dir / "a.txt") == "keep");
  // A dangling link is kept: the file it names is created. /dev/fd/N writes at N's own offset.
  fs::create_symlink("target.json", dir / "dangling");
  BOOST_TEST(run({"dp-step", kExample, "-o", d + "/dangling"}).code == 0);
  BOOST_TEST(fs::is_symlink(dir / "dangling"));
  BOOST_TEST(slurp(dir / "target.json") == kResult);
  fs::remove(dir / "dangling");
  fs::remove(dir / "target.json");
  BOOST_TEST(names(d) == (std::vector<std::string>{"a.txt", "b.txt", "link", "sub"}));
  BOOST_TEST(names(dir / "sub").empty());
}

// ---- 3. an empty name is never "off" ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(every_file_flag_refuses_an_empty_name) {
  const std::vector<std::vector<std::string>> runs = {
      {"check", "--json", "", kExample},       {"check", "--junit", "", kExample},
      {"dp-step", "-o", "", kExample},         {"dp-step", "--profile", "", kExample},
      {"dp-step", "--save-npy", "", kExample}, {"dp-step", "--trace=", kExample},
  };
  for (const auto& args : runs) {
    const Result r = run(args);
    BOOST_TEST(r.code == 2, args[1] << ": " << r.err);
    BOOST_TEST(r.out == "");
    BOOST_TEST((has(r.err, "must name a") || has(r.err, "gives no value")), r.err);
    BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // `--json=$REPORT` with REPORT unset: CLI11 would take the next word -- a case -- for the file.
  TempDir dir;
  const std::string a = dir.write("a.json", slurp(meshrun::testing::kSource + "/" + kExample));
  for (const std::string flag : {"--json", "--junit"}) {
    const Result r = run({"check", flag + "=", a, kExample});
    BOOST_TEST(r.code == 2, r.out << r.err);
    BOOST_TEST(r.err == "meshrun: " + flag + ": '" + flag + "=' gives no value\n");
  }
  for (const std::string flag : {"--output", "--profile", "--save-npy"}) {
    const Result r = run({"dp-step", flag + "=", a, kExample});
    BOOST_TEST(r.code == 2, r.out << r.err);
    BOOST_TEST(r.out == "");
  }
  BOOST_TEST(slurp(a) == slurp(meshrun::testing::kSource + "/" + kExample));
  // --trace takes its file only as --trace=FILE: `--trace "$FILE"` with FILE unset leaves an
  // empty word, which the message shows (it printed nothing after the colon).
  const Result t = run({"dp-step", kExample, "--trace", ""});
  BOOST_TEST(t.code == 2, t.out << t.err);
  BOOST_TEST(t.out == "");
  BOOST_TEST(t.err ==
                 "meshrun: The following argument was not expected: '' ('' is an empty "
                 "argument)\n",
             t.err);
}

// ---- 4. --update blesses only what it computed -------------------------------------------------

namespace {
std::string stale_case() {
  std::string text = slurp(meshrun::testing::kSource + "/" + kExample);
  text.replace(text.find("\"loss\":121.0"), 12, "\"loss\":120.0");
  return text;
}
}  // namespace

// The compare-and-swap itself: the file is replaced only while it still holds the bytes the run
// read. (Through the binary the window is a run's length, which a test cannot hit on purpose.)
BOOST_AUTO_TEST_CASE(update_writes_only_the_bytes_that_were_run) {
  TempDir dir;
  const std::string ran = stale_case();
  const std::string c = dir.write("c.json", ran);
  const std::string edited = dir.write("c.json", ran + "\n");  // an editor's save meanwhile
  BOOST_TEST(meshrun::rewrite_expected(c, ran, "{\"loss\":1.0}", 1 << 20) ==
             "changed during the run; not blessed (run --update again)");
  BOOST_TEST(slurp(edited) == ran + "\n");
  dir.write("c.json", ran);
  BOOST_TEST(meshrun::rewrite_expected(c, ran, "{\"loss\":1.0}", 1 << 20) == "");
  BOOST_TEST(has(slurp(c), "\"expected\":{\"loss\":1.0}"));
  // The .npy files the run read are compared too: by file, size and times, as they were mapped.
  const std::string x = dir.write("x.npy", "old");
  const meshrun::NpyFile read{"input.x", x, meshrun::file_stamp(x)};
  const std::string now = slurp(c);
  BOOST_TEST(meshrun::rewrite_expected(c, now, "{\"loss\":2.0}", 1 << 20, {read}) == "");
  dir.write("x.npy.new", "new");
  fs::rename(dir / "x.npy.new", x);  // a `git checkout` of the array
  BOOST_TEST(meshrun::rewrite_expected(c, slurp(c), "{\"loss\":3.0}", 1 << 20, {read}) ==
             "input.x's " + x + " changed during the run; not blessed (run --update again)");
  BOOST_TEST(has(slurp(c), "\"expected\":{\"loss\":2.0}"));
  BOOST_TEST(names(dir.path) == (std::vector<std::string>{"c.json", "x.npy"}));
}

BOOST_AUTO_TEST_CASE(update_keeps_a_bom_and_refuses_what_it_must_not_replace) {
  TempDir dir;
  // A UTF-8 byte order mark: graded by check, so blessed by --update, and kept.
  const std::string bom = dir.write("bom.json", "\xEF\xBB\xBF" + stale_case());
  Result r = run({"check", "--update", bom});
  BOOST_TEST(r.code == 0, r.out << r.err);
  BOOST_TEST(has(r.out, "UPDATED " + bom));
  BOOST_TEST(slurp(bom).compare(0, 3, "\xEF\xBB\xBF") == 0);
  BOOST_TEST(run({"check", "--atol", "0", "--rtol", "0", bom}).code == 0);

  // Read-only (also for root), and hard-linked: REFUSED, untouched, exit 6 (a file not written).
  const std::string ro = dir.write("ro.json", stale_case());
  ::chmod(ro.c_str(), 0444);
  r = run({"check", "--update", ro});
  BOOST_TEST(r.code == 6, r.out << r.err);
  BOOST_TEST(r.out == "REFUSED " + ro +
                          ": read-only (mode 0444); not blessed: make it writable first\n"
                          "0 updated, 0 unchanged, 1 refused\n");
  BOOST_TEST(slurp(ro) == stale_case());
  const std::string linked = dir.write("linked.json", stale_case());
  fs::create_hard_link(linked, dir / "other.json");
  r = run({"check", "--update", linked});
  BOOST_TEST(r.code == 6, r.out << r.err);
  BOOST_TEST(has(r.out, "REFUSED " + linked + ": has 2 hard links"));
  BOOST_TEST(slurp(linked) == stale_case());

  // Owner and group are kept (root could otherwise take the file over).
  if (::geteuid() == 0) {
    const std::string owned = dir.write("owned.json", stale_case());
    BOOST_REQUIRE(::chown(owned.c_str(), 4321, 4322) == 0);
    BOOST_TEST(run({"check", "--update", owned}).code == 0);
    struct stat st {};
    BOOST_REQUIRE(::stat(owned.c_str(), &st) == 0);
    BOOST_TEST(st.st_uid == 4321u);
    BOOST_TEST(st.st_gid == 4322u);
    BOOST_TEST(slurp(owned) != stale_case());
  }
}

// ---- 5. check keeps the program commands' promises ---------------------------------------------

BOOST_AUTO_TEST_CASE(check_refuses_an_injection_that_never_fired_and_malformed_flags) {
  Result r = run({"dp-step", kExample, "--inject", "fail:3@9"});
  BOOST_TEST(r.code == 2);
  const std::string why = "--inject: fail:3@9 never fired: device 3 entered only 1 collective(s)";
  BOOST_TEST(r.err == "meshrun: " + why + "\n");
  r = run({"check", "--inject", "fail:3@9", kExample});
  BOOST_TEST(r.code == 2, r.out << r.err);
  BOOST_TEST(r.out == "ERROR " + kExample + ": " + why + "\n0 passed, 1 failed\n");
  r = run({"check", "--update", "--inject", "fail:3@9", kExample});
  BOOST_TEST(r.code == 2, r.out << r.err);
  BOOST_TEST(has(r.out, "REFUSED " + kExample + ": " + why));
  // Each --inject takes one spec: the PATH after it stays a PATH.
  r = run({"check", "--inject", "fail:3@9", kExample, kExample});
  BOOST_TEST(r.code == 2, r.out << r.err);
  BOOST_TEST(std::count(r.out.begin(), r.out.end(), '\n') == 3);
  r = run({"check", "--devices", "2", "--mesh", "data=2", kExample});
  BOOST_TEST(r.code == 2, r.out << r.err);
  BOOST_TEST(r.err == "meshrun: --devices: give either --devices or --mesh, not both\n");
  // One usage error before any case, not one ERROR line per case.
  for (const std::vector<std::string>& flag :
       {std::vector<std::string>{"--mesh", "bogus"}, {"--inject", "bogus"}}) {
    for (const bool update : {false, true}) {
      std::vector<std::string> args{"check"};
      if (update) args.emplace_back("--update");
      args.insert(args.end(), flag.begin(), flag.end());
      args.insert(args.end(), {"cases/dp-step", "cases/tp-mlp"});
      r = run(args);
      BOOST_TEST(r.code == 2, flag[0] << ": " << r.out << r.err);
      BOOST_TEST(r.out == "");
      BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
      BOOST_TEST(has(r.err, "meshrun: " + flag[0] + ": "), r.err);
    }
  }
}

// ---- 6. signals and blocking files -------------------------------------------------------------

// A FIFO with nobody at the other end: an output waits at most --timeout for a reader, a case for
// a writer; `check` grades regular files only. Every one ends promptly with one line.
BOOST_AUTO_TEST_CASE(a_fifo_nobody_opens_never_hangs) {
  TempDir dir;
  const std::string fifo = dir / "fifo";
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string wait = "no process opened the FIFO for reading within 1 s (--timeout)";
  Result r = run({"dp-step", kExample, "--timeout", "1", "-o", fifo});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: --output: cannot write " + fifo + ": " + wait + "\n");
  BOOST_TEST(r.seconds < 20);
  r = run({"check", "--timeout", "1", "--json", fifo, kExample});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: --json: cannot write " + fifo + ": " + wait + "\n");
  r = run({"dp-step", "--timeout", "1", "--trace=" + fifo, kExample});
  BOOST_TEST(r.code == 2);
  r = run({"dp-step", "--timeout", "1", fifo});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: " + fifo +
                          ": cannot read: no process wrote to the FIFO within 1 s (--timeout)\n");
  r = run({"check", fifo});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.out == "ERROR " + fifo + ": not a regular file\n0 passed, 1 failed\n");
  BOOST_TEST(!r.killed);

  // With a reader, a FIFO is an output like any other.
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(in), {});
  });
  r = run({"dp-step", kExample, "-o", fifo});
  reader.join();
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(got == kResult);
}

// SIGTERM (a CI job's timeout), SIGINT (Ctrl-C): the reports being written leave no temporary
// file, and the old report stays whole. meshrun dies of the signal, as the shell expects.
BOOST_AUTO_TEST_CASE(a_signal_leaves_no_temporary_file_and_the_old_report) {
  for (const int sig : {SIGTERM, SIGINT}) {
    TempDir dir;
    const std::string report = dir.write("r.json", "old");
    RunOptions o;
    o.meanwhile = [&](pid_t pid) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      ::kill(pid, sig);
    };
    // Every case stalls until the 1 s timeout: the run is still going when the signal comes.
    const Result r = run_with({"check", "--timeout", "1", "--inject", "stall:0@1", "--json", report,
                               "--junit", dir / "r.xml", "cases/dp-step"},
                              o);
    BOOST_TEST(r.code == 128 + sig, r.err);
    BOOST_TEST(slurp(report) == "old");
    BOOST_TEST(names(dir.path) == std::vector<std::string>{"r.json"});
  }
}

// Where a file system has no O_TMPFILE the temporary file has a name: the handler removes it,
// then meshrun dies of the signal.
BOOST_AUTO_TEST_CASE(the_handler_removes_a_named_temporary_file) {
  TempDir dir;
  const std::string temp = dir.write(".r.json.meshrun-abcdef", "half");
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    const meshrun::TempName name(temp);
    ::raise(SIGTERM);
    ::_exit(0);  // not reached
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  BOOST_TEST(WIFSIGNALED(status));
  BOOST_TEST(WTERMSIG(status) == SIGTERM);
  BOOST_TEST(names(dir.path).empty());
}

// A .npy input truncated while it is mapped: one line naming the input and the file, exit 2, not
// a crash.
BOOST_AUTO_TEST_CASE(an_input_truncated_while_mapped_is_an_input_error) {
  TempDir dir;
  std::vector<float> values(1 << 16, 1.0f);
  const std::string path =
      dir.write("x.npy", meshrun::npy_bytes(meshrun::Tensor({1 << 16, 1}, values)));
  int err[2];
  BOOST_REQUIRE(::pipe(err) == 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(err[1], STDERR_FILENO);
    const meshrun::NpyInput in = meshrun::map_npy(path, {"N", "D"}, "input.x");
    if (in.mapped.data == nullptr || ::truncate(path.c_str(), 0) != 0) ::_exit(100);
    volatile float sum = 0;
    for (std::size_t i = 0; i < values.size(); i += 1024) sum = sum + in.mapped.data[i];
    ::_exit(101);  // not reached: the first access past the new end faults
  }
  ::close(err[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  ::close(err[0]);
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 2);
  BOOST_TEST(text == "meshrun: input.x: cannot read " + path +
                         ": the file shrank while it was being read (SIGBUS)\n");
}
