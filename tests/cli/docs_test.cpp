// The transcripts in README.md and docs/*.md are what meshrun prints: every indented
//     $ meshrun ARGS            (optionally ending in `; echo "exit $?"`)
//     <the lines it printed>
// whose command is self-contained (a case under cases/, no shell: no pipe, redirection, files made
// by an earlier step such as check's demo folders, no timings) is run here and its stdout and
// stderr lines compared with the lines shown (as sets of lines in order within each stream: a
// terminal interleaves them). A transcript abbreviated with "..." is skipped, and so is a stall on
// a 2-D mesh, whose line depends on which group's deadline passes first. Issue 20: no
// statement in the docs that contradicts the code.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"

namespace fs = std::filesystem;
using meshrun::testing::kSource;
using meshrun::testing::run;
using meshrun::testing::slurp;

namespace {

struct Transcript {
  std::string file;
  std::vector<std::string> args;
  bool echo_exit = false;
  std::vector<std::string> shown;
};

using meshrun::testing::lines_of;

std::vector<Transcript> transcripts() {
  std::vector<std::string> files = {"README.md"};
  for (const auto& e : fs::directory_iterator(kSource + "/docs"))
    if (e.path().extension() == ".md") files.push_back("docs/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  const std::regex command(R"(^    \$ meshrun (.*)$)");
  const std::regex shell(
      R"([|<>&`*~$#]|--timings|--profile|--trace|--show|--save|-o |bench|check)");
  const std::string echo = "; echo \"exit $?\"";
  std::vector<Transcript> out;
  for (const std::string& file : files) {
    const std::vector<std::string> lines = lines_of(slurp(kSource + "/" + file));
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::smatch m;
      if (!std::regex_match(lines[i], m, command)) continue;
      Transcript t{file, {}, false, {}};
      std::string cmd = m[1];
      if (cmd.ends_with(echo)) {
        t.echo_exit = true;
        cmd.resize(cmd.size() - echo.size());
      }
      std::size_t j = i + 1;
      for (; j < lines.size() && lines[j].starts_with("    ") && !lines[j].starts_with("    $ ");
           ++j)
        t.shown.push_back(lines[j].substr(4));
      const bool abbreviated = std::any_of(t.shown.begin(), t.shown.end(), [](const auto& s) {
        return s.find("...") != std::string::npos;
      });
      if (std::regex_search(cmd, shell) || abbreviated || t.shown.empty()) continue;
      std::istringstream words(cmd);
      for (std::string w; words >> w;) t.args.push_back(w);
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_self_contained_transcript_is_what_meshrun_prints) {
  const std::vector<Transcript> all = transcripts();
  // README's examples of each program and the failure pages' lines, at the least.
  BOOST_TEST(all.size() >= 12u);
  for (const Transcript& t : all) {
    const auto r = run(t.args);
    std::vector<std::string> got = lines_of(r.out);
    for (const std::string& line : lines_of(r.err)) got.push_back(line);
    if (t.echo_exit) got.push_back("exit " + std::to_string(r.code));
    std::vector<std::string> shown = t.shown;
    std::sort(got.begin(), got.end());
    std::sort(shown.begin(), shown.end());
    std::string cmd;
    for (const std::string& a : t.args) cmd += " " + a;
    BOOST_TEST(got == shown, t.file << ": $ meshrun" << cmd << "\nprinted:\n"
                                    << r.out << r.err << "exit " << r.code);
  }
}
