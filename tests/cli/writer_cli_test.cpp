// The one checked file writer (io/output.hpp, issue #12): OutputFile in place and atomic, directly
// and through every flag that writes a file -- --output, --trace, --profile, --junit/--json,
// --save-npy, check --update -- and `bench allreduce`'s table on the checked stdout. Each failure
// is exit 6 (or 2 when the path is refused up front) with one line naming the flag and the file; an
// atomic write that fails leaves the old file as it was and no temporary file behind.
#include <sys/stat.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "io/output.hpp"
#include "support/run_meshrun.hpp"
#include "support/errors.hpp"

namespace fs = std::filesystem;

namespace {

using meshrun::InputError;
using meshrun::OutputError;
using meshrun::OutputFile;
using meshrun::testing::has;
using meshrun::testing::names;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::run_with;
using meshrun::testing::RunOptions;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

constexpr auto kAtomic = OutputFile::Mode::kAtomic;
const std::string kExample = "cases/dp-step/example1.json";

// The message of what `f` throws as E; "" when it throws nothing.
template <class E, class F>
std::string thrown(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

// /dev/full must still be the device after a test wrote to it (an atomic writer must never rename
// a file over it).
void expect_dev_full_intact() {
  struct stat st {};
  BOOST_TEST(stat("/dev/full", &st) == 0);
  BOOST_TEST(S_ISCHR(st.st_mode));
}

}  // namespace

// ---- OutputFile
// ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(atomic_replaces_the_target_only_at_commit) {
  TempDir dir;
  const std::string target = dir.write("r.json", "old");
  {
    OutputFile f(target, "--json", kAtomic);
    f.write("new ");
    BOOST_TEST(slurp(target) == "old");  // nothing seen before the commit
    f.commit("text");
  }
  BOOST_TEST(slurp(target) == "new text");
  BOOST_TEST(names(dir.path) == std::vector<std::string>{"r.json"});
  // Never committed (an error ended the run): the old file stays, the temporary file goes.
  {
    OutputFile f(target, "--json", kAtomic);
    f.write("half");
    // The temporary file has no name until the commit (O_TMPFILE): nothing a kill could leave.
    BOOST_TEST(names(dir.path) == std::vector<std::string>{"r.json"});
  }
  BOOST_TEST(slurp(target) == "new text");
  BOOST_TEST(names(dir.path) == std::vector<std::string>{"r.json"});
}

BOOST_AUTO_TEST_CASE(atomic_resolves_a_link_and_keeps_the_permission_bits_asked) {
  TempDir dir;
  const std::string real = dir.write("real.json", "old");
  fs::create_symlink(real, dir / "link.json");
  OutputFile f(dir / "link.json", "--json", kAtomic);
  f.set_mode(0640);
  f.commit("new");
  BOOST_TEST(fs::is_symlink(dir / "link.json"));
  BOOST_TEST(slurp(real) == "new");
  struct stat st {};
  BOOST_TEST(stat(real.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0640u);
  BOOST_TEST(names(dir.path) == (std::vector<std::string>{"link.json", "real.json"}));
}

BOOST_AUTO_TEST_CASE(a_path_that_cannot_be_written_is_refused_when_opened) {
  for (const auto mode : {OutputFile::Mode::kInPlace, kAtomic}) {
    BOOST_TEST(thrown<InputError>([&] { OutputFile("/nonexistent-dir/r.xml", "--junit", mode); }) ==
               "--junit: cannot write /nonexistent-dir/r.xml: No such file or directory");
  }
  TempDir dir;
  BOOST_TEST(thrown<InputError>([&] { OutputFile(dir.path, "--json", kAtomic); }) ==
             "--json: cannot write " + dir.path + ": Is a directory");
}

// A device is written in place in both modes -- there is no file to replace -- and its errors
// are the writer's: flag, file, the OS's reason.
BOOST_AUTO_TEST_CASE(a_full_device_is_written_in_place_and_fails_at_the_write) {
  for (const auto mode : {OutputFile::Mode::kInPlace, kAtomic}) {
    OutputFile f("/dev/full", "--profile", mode);
    BOOST_TEST(thrown<OutputError>([&] { f.commit("x"); }) ==
               "--profile: cannot write /dev/full: No space left on device");
  }
  expect_dev_full_intact();
}

// ---- through the binary ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(every_file_flag_to_a_full_device_is_exit_6_with_one_line) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> runs = {
      {{"dp-step", kExample, "--output", "/dev/full"}, "--output"},
      {{"dp-step", kExample, "--trace=/dev/full"}, "--trace"},
      {{"dp-step", kExample, "--profile", "/dev/full"}, "--profile"},
      {{"check", "--json", "/dev/full", kExample}, "--json"},
      {{"check", "--junit", "/dev/full", kExample}, "--junit"},
  };
  for (const auto& [args, flag] : runs) {
    const Result r = run(args);
    BOOST_TEST(r.code == 6, flag << ": " << r.err);
    BOOST_TEST(r.err == "meshrun: " + flag + ": cannot write /dev/full: No space left on device\n");
  }
  expect_dev_full_intact();
}

// A report asked for on stderr (--trace, --show-sharding, --timings) that stderr refuses -- a
// full device, or a stderr closed at the start (`2>&-`, where meshrun keeps /dev/null so that no
// file it opens takes descriptor 2) -- is exit 6: its message, on the same stderr, is lost too,
// so the exit status is what says it. The trace and the sharding come before the result, which is
// then not printed; --timings after it. A run that asks for no report succeeds.
BOOST_AUTO_TEST_CASE(a_report_to_a_full_or_closed_stderr_is_exit_6) {
  const std::string want = R"({"w":[[1.11]],"b":[0.2],"loss":121.0})"
                           "\n";
  RunOptions full, closed;
  full.stderr_append = "/dev/full";
  closed.stderr_closed = true;
  const std::vector<std::pair<std::string, std::string>> reports = {
      {"--trace", ""}, {"--show-sharding", ""}, {"--timings", want}};
  for (const auto& [flag, out] : reports) {
    for (const RunOptions* o : {&full, &closed}) {
      const Result r = run_with({"dp-step", kExample, flag}, *o);
      BOOST_TEST(r.code == 6, flag << (o == &full ? " 2>/dev/full" : " 2>&-"));
      BOOST_TEST(r.out == out, flag);
    }
    const Result r = run({"dp-step", kExample, flag});  // the same run on a stderr that takes it
    BOOST_TEST(r.code == 0, flag << ": " << r.err);
    BOOST_TEST(r.out == want, flag);
    BOOST_TEST(!r.err.empty(), flag);
  }
  for (const RunOptions* o : {&full, &closed}) {
    const Result r = run_with({"dp-step", kExample}, *o);
    BOOST_TEST(r.code == 0);
    BOOST_TEST(r.out == want);
  }
  expect_dev_full_intact();
}

// --output FILE: the result there instead of stdout, whole or not at all, graded as on stdout
// (a mismatch still writes it, exit 1); the file is opened before the run, so a bad path or the
// case file itself is exit 2 before anything runs; past the file size limit the old file stays.
BOOST_AUTO_TEST_CASE(output_writes_the_result_to_a_file_whole_or_not_at_all) {
  TempDir dir;
  const std::string want = R"({"w":[[1.11]],"b":[0.2],"loss":121.0})"
                           "\n";
  Result r = run({"dp-step", "-o", dir / "r.json", kExample});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == "");
  BOOST_TEST(slurp(dir / "r.json") == want);
  r = run({"dp-step", "--output", "-", kExample});  // `-` is stdout
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == want);

  std::string text = slurp(meshrun::testing::kSource + "/" + kExample);
  text.replace(text.find("\"loss\":121.0"), 12, "\"loss\":120.0");
  const std::string wrong = dir.write("wrong.json", text);
  r = run({"dp-step", "--output", dir / "w.json", wrong});
  BOOST_TEST(r.code == 1, r.err);
  BOOST_TEST(slurp(dir / "w.json") == want);

  r = run({"dp-step", "--output", dir / "no-dir/r.json", kExample});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: --output: cannot write " + dir / "no-dir/r.json" +
                          ": No such file or directory\n");
  r = run({"dp-step", "--output", wrong, wrong});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: --output: " + wrong +
                          " is the case file being read; refusing to overwrite it\n");
  BOOST_TEST(slurp(wrong) == text);

  const std::string old = dir.write("old.json", "old");
  RunOptions o;
  o.file_size_limit = 200;  // the result is 288 bytes; the error line on stderr fits
  r = run_with({"tp-mlp", "--output", old, "cases/tp-mlp/example3.json"}, o);
  BOOST_TEST(r.code == 6, r.err);
  BOOST_TEST(r.err == "meshrun: --output: cannot write " + old + ": File too large\n");
  BOOST_TEST(slurp(old) == "old");
  BOOST_TEST(names(dir.path) ==
             (std::vector<std::string>{"old.json", "r.json", "w.json", "wrong.json"}));
}

// A file flag naming stdout or stderr writes through a duplicate of that descriptor; when no
// descriptor is left for the duplicate (`ulimit -n 3`), the flag is refused before the run.
// Sanitizer builds link dynamically, and with no descriptor free the loader cannot even open
// libasan: the static release binary is the one this can test.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
BOOST_AUTO_TEST_CASE(a_stream_that_cannot_be_duplicated_is_refused_up_front) {
  RunOptions o;
  o.open_files_limit = 3;
  for (const auto& [flag, path] : std::vector<std::pair<std::string, std::string>>{
           {"--trace", "/dev/stderr"}, {"--output", "/dev/stdout"}}) {
    const Result r = run_with({"dp-step", flag + "=" + path, kExample}, o);
    BOOST_TEST(r.code == 2, flag << ": " << r.err);
    BOOST_TEST(r.out == "");
    BOOST_TEST(r.err == "meshrun: " + flag + ": cannot write " + path + ": Invalid argument\n");
  }
}
#endif

// Two file flags of one run naming the same file (by any spelling, or through a link) would
// replace or overwrite one another -- a result lost behind exit 0 -- so the second is refused
// before the run, as is the file stdin reads the case from and an empty name.
BOOST_AUTO_TEST_CASE(output_files_that_would_overwrite_each_other_or_the_case_are_refused) {
  TempDir dir;
  const std::string p = dir / "p.txt";
  const std::string dotted = dir.path + "/./sub/../p.txt";
  BOOST_REQUIRE(fs::create_directory(dir / "sub"));
  const std::vector<std::pair<std::vector<std::string>, std::string>> runs = {
      {{"-o", p, "--profile", p}, "--profile: " + p + " is also the --output file"},
      {{"-o", p, "--trace=" + dotted}, "--output: " + p + " is also the --trace file"},
      {{"--trace=" + p, "--profile", dotted}, "--profile: " + dotted + " is also the --trace file"},
  };
  for (const auto& [flags, message] : runs) {
    std::vector<std::string> args = {"dp-step"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(kExample);
    const Result r = run(args);
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(r.err == "meshrun: " + message + "; refusing to write both to it\n");
  }
  dir.write("p.txt", "old");
  fs::create_symlink(p, dir / "link.txt");
  const Result linked = run({"dp-step", "-o", dir / "link.txt", "--profile", p, kExample});
  BOOST_TEST(linked.code == 2, linked.err);
  BOOST_TEST(slurp(p) == "old");

  const std::string c = dir.write("c.json", slurp(meshrun::testing::kSource + "/" + kExample));
  const Result in = run({"dp-step", "-", "-o", c}, c);  // the case on stdin
  BOOST_TEST(in.code == 2);
  BOOST_TEST(in.err == "meshrun: --output: " + c +
                           " is the case file being read (on stdin); refusing to overwrite it\n");
  BOOST_TEST(slurp(c) == slurp(meshrun::testing::kSource + "/" + kExample));

  for (const std::string flag : {"--output", "--profile", "--save-npy"}) {
    const Result empty = run({"dp-step", flag, "", kExample});
    BOOST_TEST(empty.code == 2, flag);
    BOOST_TEST(empty.err == "meshrun: " + flag + ": must name a " +
                                (flag == "--save-npy" ? "directory" : "file") + "\n");
  }
}

// A run that ends without a result (a device failed: exit 3; a non-finite result: exit 7) leaves
// the --output file as it was, with no temporary file beside it; a file it replaces keeps its
// permission bits.
BOOST_AUTO_TEST_CASE(output_is_untouched_without_a_result_and_keeps_its_mode) {
  TempDir dir;
  const std::string out = dir.write("r.json", "old");
  Result r = run({"dp-step", "-o", out, "--inject", "fail:1@1", kExample});
  BOOST_TEST(r.code == 3, r.err);
  BOOST_TEST(slurp(out) == "old");
  std::string text = slurp(meshrun::testing::kSource + "/" + kExample);
  text.replace(text.find("\"lr\":0.01"), 9, "\"lr\":1e38");
  const std::string overflow = dir.write("overflow.json", text);
  r = run({"dp-step", "-o", out, overflow});
  BOOST_TEST(r.code == 7, r.err);
  BOOST_TEST(slurp(out) == "old");
  BOOST_TEST(names(dir.path) == (std::vector<std::string>{"overflow.json", "r.json"}));

  BOOST_REQUIRE(::chmod(out.c_str(), 0600) == 0);
  r = run({"dp-step", "-o", out, kExample});
  BOOST_TEST(r.code == 0, r.err);
  struct stat st {};
  BOOST_REQUIRE(::stat(out.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 07777) == 0600u);
}

// `check --json /dev/stdout > out.txt` (and `>> out.txt`): the report goes to the file the shell
// redirected stdout to, after the verdict lines and what the file held before -- the same file
// (inode), neither emptied by a second open nor replaced by a new file renamed over it (which
// would have left the shell's redirection writing to a file no longer in the directory). The
// report may also name that file itself rather than /dev/stdout.
BOOST_AUTO_TEST_CASE(a_report_to_where_stdout_goes_follows_the_verdict_lines) {
  for (const bool append : {false, true}) {
    for (const bool by_name : {false, true}) {
      BOOST_TEST_CONTEXT((append ? ">> " : "> ") << (by_name ? "by its name" : "/dev/stdout")) {
        TempDir dir;
        const std::string out = dir.write("out.txt", "earlier line\n");
        struct stat before {};
        BOOST_REQUIRE(stat(out.c_str(), &before) == 0);
        RunOptions o;
        o.stdout_path = out;
        o.stdout_append = append;
        const Result r = run_with({"check", "--json", by_name ? out : "/dev/stdout", kExample}, o);
        BOOST_TEST(r.code == 0, r.err);
        struct stat after {};
        BOOST_REQUIRE(stat(out.c_str(), &after) == 0);
        BOOST_TEST(after.st_ino == before.st_ino);
        const std::string text = slurp(out);
        const std::string lines =
            std::string(append ? "earlier line\n" : "") + "PASS " + std::string(kExample) + ": ";
        BOOST_TEST(text.starts_with(lines), text);
        const std::size_t tally = text.find("\n1 passed, 0 failed\n{");
        BOOST_TEST(tally != std::string::npos, text);
        BOOST_TEST(text.find("\"passed\": 1") > tally, text);
        BOOST_TEST(text.ends_with("}\n"), text);
        BOOST_TEST(names(dir.path) == std::vector<std::string>{"out.txt"});
      }
    }
  }
}

// RLIMIT_FSIZE (`ulimit -f`) cuts a report short: exit 6 naming --json and the file, the old
// report kept whole, no temporary file left. The verdict lines on stdout are shorter than the
// limit and get through.
BOOST_AUTO_TEST_CASE(a_report_past_the_file_size_limit_keeps_the_old_one) {
  TempDir dir, out;
  const std::string report = dir.write("r.json", "old");
  RunOptions o;
  o.stdout_path = out / "stdout";
  o.file_size_limit = 200;
  const Result r = run_with({"check", "--json", report, kExample}, o);
  BOOST_TEST(r.code == 6, r.err);
  BOOST_TEST(r.err == "meshrun: --json: cannot write " + report + ": File too large\n");
  BOOST_TEST(has(slurp(o.stdout_path), "1 passed, 0 failed\n"));
  BOOST_TEST(slurp(report) == "old");
  BOOST_TEST(names(dir.path) == std::vector<std::string>{"r.json"});
}

BOOST_AUTO_TEST_CASE(save_npy_and_profile_past_the_file_size_limit_leave_nothing_half_written) {
  TempDir dir;
  RunOptions o;
  o.stdout_path = dir / "stdout";
  o.file_size_limit = 120;  // the result dict fits; an .npy (128-byte header) does not
  const Result npy = run_with({"dp-step", kExample, "--save-npy", dir / "arrays"}, o);
  BOOST_TEST(npy.code == 6, npy.err);
  BOOST_TEST(npy.err ==
             "meshrun: --save-npy: cannot write " + dir / "arrays" + "/w.npy: File too large\n");
  BOOST_TEST(names(dir / "arrays").empty());

  const std::string profile = dir.write("p.json", "old");
  const Result p = run_with({"dp-step", kExample, "--profile", profile}, o);
  BOOST_TEST(p.code == 6, p.err);
  BOOST_TEST(p.err == "meshrun: --profile: cannot write " + profile + ": File too large\n");
  BOOST_TEST(slurp(profile) == "old");
  BOOST_TEST(names(dir.path) == (std::vector<std::string>{"arrays", "p.json", "stdout"}));
}

BOOST_AUTO_TEST_CASE(update_past_the_file_size_limit_leaves_the_case_as_it_was) {
  TempDir dir;
  // dp-step's example 1 with a stale `expected`: --update must rewrite it, and cannot.
  std::string text = slurp(meshrun::testing::kSource + "/" + kExample);
  const auto at = text.find("1.11");
  BOOST_REQUIRE(at != std::string::npos);
  text.replace(at, 4, "9.25");
  const std::string c = dir.write("c.json", text);
  RunOptions o;
  o.file_size_limit = static_cast<long>(text.size()) - 1;
  const Result r = run_with({"check", "--update", c}, o);
  // The case is REFUSED, the others would still be blessed, and the exit code says a file was
  // not written (6), as the exit-code table does.
  BOOST_TEST(r.code == 6, r.err);
  BOOST_TEST(r.out == "REFUSED " + c + ": --update: cannot write " + c +
                          ": File too large\n0 updated, 0 unchanged, 1 refused\n");
  BOOST_TEST(r.err == "");
  BOOST_TEST(slurp(c) == text);
  BOOST_TEST(names(dir.path) == std::vector<std::string>{"c.json"});
}

// `bench allreduce`'s table goes through the checked stdout, as a program's result does.
BOOST_AUTO_TEST_CASE(bench_allreduce_to_a_full_stdout_is_exit_6) {
  RunOptions o;
  o.stdout_path = "/dev/full";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bench", "allreduce", "--devices", "2", "--max-bytes", "32",
                                 "--size-budget", "0.01"},
        {"bench", "allreduce", "--json", "--devices", "2", "--max-bytes", "32", "--size-budget",
         "0.01"}}) {
    const Result r = run_with(args, o);
    BOOST_TEST(r.code == 6, r.err);
    BOOST_TEST(r.err == "meshrun: stdout: No space left on device\n");
  }
}

// A row that cannot be written is printed on device 0's thread, inside the mesh: still exit 6 (not
// a device failure, exit 3), one line, and the table ends there.
BOOST_AUTO_TEST_CASE(bench_allreduce_row_past_the_file_size_limit_is_exit_6) {
  const std::vector<std::string> args = {"bench",       "allreduce", "--devices",     "2",
                                         "--max-bytes", "256",       "--size-budget", "0.01"};
  const Result whole = run(args);
  BOOST_REQUIRE(whole.code == 0);
  std::size_t header = 0;
  for (int line = 0; line < 3; ++line) header = whole.out.find('\n', header) + 1;
  BOOST_REQUIRE(header > 0 && header < whole.out.size());
  TempDir dir;
  RunOptions o;
  o.stdout_path = dir / "stdout";
  o.file_size_limit = static_cast<long>(header) + 10;  // the header, not the first row
  const Result r = run_with(args, o);
  BOOST_TEST(r.code == 6, r.err);
  BOOST_TEST(r.err == "meshrun: stdout: File too large\n");
  BOOST_TEST(slurp(o.stdout_path).size() <= header + 10);
}
