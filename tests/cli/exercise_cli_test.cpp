// An exercise is a folder (cases/exercises/<name>/exercise.json), not C++: a fourth exercise
// written in a temporary folder and given by `--exercise DIR` grades programs with no change to
// meshrun -- its rules built from their kinds, its reference program read from its file; a
// hostile exercise folder is refused with one line naming the file and the field (exit 2).
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>

#include "support/run_meshrun.hpp"

namespace {

namespace fs = std::filesystem;
using meshrun::testing::has;
using meshrun::testing::kSource;
using meshrun::testing::lines_of;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

// dp-step again as a folder of its own named `name`: the same inputs and rules, its reference
// the exported program file (no built-in program has this name, so the reference is read from
// the file), two of dp-step's cases renamed for it.
std::string fourth_exercise(const TempDir& tmp, const std::string& name) {
  fs::create_directories(tmp / (name + "/cases"));
  std::string text = slurp(kSource + "/cases/exercises/dp-step/exercise.json");
  text = replaced(text, "\"name\": \"dp-step\"", "\"name\": \"" + name + "\"");
  text = replaced(text, "\"../../programs/dp-step.json\"",
                  "\"" + kSource + "/cases/programs/dp-step.json\"");
  text = replaced(text, "\"../../dp-step\"", "\"cases\"");
  tmp.write(name + "/exercise.json", text);
  for (const char* c : {"example1", "n16-d4-k3"}) {
    tmp.write(name + "/cases/" + c + ".json",
              replaced(slurp(kSource + "/cases/dp-step/" + c + ".json"), "\"problem\":\"dp-step\"",
                       "\"problem\":\"" + name + "\""));
  }
  return tmp / name;
}

// The exercise `name` (fourth_exercise) with `from` replaced by `to` in its file, graded with
// dp-step's right submission: refused before any case (exit 2) with the one line
// "<folder>/exercise.json: <field>: <mine> where the reference <its reference> <theirs>" -- the
// built-in program when `name` is dp-step, else the program file the exercise names.
void refused_against_its_reference(const TempDir& tmp, const std::string& name,
                                   const std::string& from, const std::string& to,
                                   const std::string& field_mine, const std::string& theirs) {
  const std::string folder = fourth_exercise(tmp, name);
  tmp.write(name + "/exercise.json", replaced(slurp(folder + "/exercise.json"), from, to));
  const Result r = run({"check", "--program", "cases/submissions/dp-step/right.json", "--exercise",
                        folder, folder + "/cases/example1.json"});
  BOOST_TEST(r.code == 2, r.out << r.err);
  BOOST_TEST(r.out.empty(), r.out);
  const std::string reference = name == "dp-step" ? "(the built-in program dp-step)"
                                                  : kSource + "/cases/programs/dp-step.json";
  BOOST_TEST(r.err == "meshrun: " + folder + "/exercise.json: " + field_mine +
                          " where the reference " + reference + " " + theirs + "\n",
             r.err);
}

BOOST_AUTO_TEST_CASE(a_fourth_exercise_is_a_folder_and_needs_no_cpp) {
  const TempDir tmp;
  const std::string dir = fourth_exercise(tmp, "dp-step-again");
  const Result right = run({"check", "--program", "cases/submissions/dp-step/right.json",
                            "--exercise", dir, dir + "/cases"});
  BOOST_TEST(right.code == 0, right.out << right.err);
  BOOST_TEST(has(right.out, "numbers ok; structure ok (12 rules)"), right.out);
  BOOST_TEST(has(right.out, "2 passed, 0 failed"), right.out);

  // The update rule runs the exercise's reference -- here the program file it names -- and
  // names the mistake: the sum of the 8 gradients, not their mean.
  const Result sum = run({"check", "--program", "cases/submissions/dp-step/psum-no-divide.json",
                          "--exercise", dir, dir + "/cases/example1.json"});
  BOOST_TEST(sum.code == 1, sum.out << sum.err);
  BOOST_TEST(has(sum.out, "the update uses the mean gradient over 'data', never n times it"),
             sum.out);
  BOOST_TEST(has(sum.out,
                 "8 times lr times the mean gradient: the sum of the 8 devices' "
                 "gradients over 'data', not their mean"),
             sum.out);

  // A case of another exercise is not this one's.
  const Result other = run({"check", "--program", "cases/submissions/dp-step/right.json",
                            "--exercise", dir, "cases/dp-step/example1.json"});
  BOOST_TEST(other.code == 1, other.out << other.err);
  BOOST_TEST(has(other.out, "the case is for \"dp-step\", not \"dp-step-again\""), other.out);
}

BOOST_AUTO_TEST_CASE(a_hostile_exercise_folder_is_refused_in_one_line) {
  const TempDir tmp;
  const std::string dir = fourth_exercise(tmp, "bad");
  tmp.write("bad/exercise.json",
            replaced(slurp(dir + "/exercise.json"), "{\"rule\": \"inputs_given\"}",
                     "{\"rule\": \"psum_everything\"}"));
  const Result r = run({"check", "--program", "cases/submissions/dp-step/right.json", "--exercise",
                        dir, dir + "/cases"});
  BOOST_TEST(r.code == 2, r.out << r.err);
  BOOST_TEST(r.err == "meshrun: " + dir +
                          "/exercise.json: rules[0].rule: unknown rule kind \"psum_everything\" "
                          "(known: added_once, collectives_only, combined_over, enters_split, "
                          "every_device_holds, input_split, inputs_given, mean_gradient_update, "
                          "no_full_in_body, not_combined_outside, output_replicated, output_spec, "
                          "output_split, receives_little, replicas_agree, same_function, traced)\n",
             r.err);

  const Result none = run({"check", "--program", "cases/submissions/dp-step/right.json",
                           "--exercise", tmp / "missing", dir + "/cases"});
  BOOST_TEST(none.code == 2, none.err);
  BOOST_TEST(lines_of(none.err).size() == 1u, none.err);
  BOOST_TEST(has(none.err, "--exercise: cannot read " + tmp / "missing/exercise.json"), none.err);

  // A reference program file that is not there is the exercise's error, said before any case
  // is graded -- not a rule that fails the student's program.
  fourth_exercise(tmp, "noref");
  tmp.write("noref/exercise.json",
            replaced(slurp(tmp / "noref/exercise.json"),
                     "\"" + kSource + "/cases/programs/dp-step.json\"", "\"gone.json\""));
  const Result noref = run({"check", "--program", "cases/submissions/dp-step/right.json",
                            "--exercise", tmp / "noref", tmp / "noref/cases"});
  BOOST_TEST(noref.code == 2, noref.out << noref.err);
  BOOST_TEST(noref.out.empty(), noref.out);
  BOOST_TEST(noref.err == "meshrun: " + tmp / "noref/exercise.json" + ": reference: cannot read " +
                              tmp / "noref/gone.json" + ": No such file or directory\n",
             noref.err);

  // A reference that is a directory is not a program file.
  tmp.write("noref/exercise.json",
            replaced(slurp(tmp / "noref/exercise.json"), "\"gone.json\"", "\"cases\""));
  const Result dirref = run({"check", "--program", "cases/submissions/dp-step/right.json",
                             "--exercise", tmp / "noref", tmp / "noref/cases"});
  BOOST_TEST(dirref.code == 2, dirref.out << dirref.err);
  BOOST_TEST(dirref.err == "meshrun: " + tmp / "noref/exercise.json" + ": reference: cannot read " +
                               tmp / "noref/cases: not a regular file\n",
             dirref.err);

  // Nor is a case file: the reference is read when the folder is, its error the exercise's --
  // not "missing key format" when the update rule first runs it, a FAIL of the student.
  const std::string a_case = kSource + "/cases/dp-step/example1.json";
  tmp.write("noref/exercise.json",
            replaced(slurp(tmp / "noref/exercise.json"), "\"cases\"", "\"" + a_case + "\""));
  const Result caseref = run({"check", "--program", "cases/submissions/dp-step/right.json",
                              "--exercise", tmp / "noref", tmp / "noref/cases"});
  BOOST_TEST(caseref.code == 2, caseref.out << caseref.err);
  BOOST_TEST(caseref.out.empty(), caseref.out);
  BOOST_TEST(caseref.err == "meshrun: " + tmp / "noref/exercise.json" +
                                ": reference: not a program file: " + a_case +
                                ": missing key \"format\"\n",
             caseref.err);

  // The exercise's inputs are its reference's, in that order: the update rule hands the
  // reference the case's arrays in the exercise's order. Not so is the exercise's error, said
  // before any case is graded -- not a FAIL of the student (nor an internal error, exit 4),
  // whether the reference is a program file or the built-in program of the exercise's name.
  const std::string w = R"({"name": "w", "dtype": "f32", "shape": ["D", "K"], "spec": []},)";
  const std::string b = R"({"name": "b", "dtype": "f32", "shape": ["K"], "spec": []},)";
  for (const std::string name : {"order", "dp-step"}) {
    refused_against_its_reference(tmp, name, w + "\n    " + b, b + "\n    " + w,
                                  "inputs[0].name: \"b\"",
                                  "takes \"w\" (w, b, x, y, lr, in that order)");
  }

  // An output of another rank than the reference's (w of shape ["Q"]) is the exercise's error
  // too -- not each case's "expected.w: must be a 1-D array (Q)". A dimension no input names is
  // allowed: a case's expected binds it (ring-allreduce's out is [B, D], B = N / n).
  const std::string folder = fourth_exercise(tmp, "rank");
  const std::string ranked = slurp(folder + "/exercise.json");
  const std::string w_out = "\"outputs\": [\n    {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": ";
  tmp.write("rank/exercise.json", replaced(ranked, w_out + "[\"D\", \"K\"]", w_out + "[\"Q\"]"));
  const Result rank = run({"check", "--program", "cases/submissions/dp-step/right.json",
                           "--exercise", folder, folder + "/cases"});
  BOOST_TEST(rank.code == 2, rank.out << rank.err);
  BOOST_TEST(rank.out.empty(), rank.out);
  BOOST_TEST(rank.err == "meshrun: " + folder + "/exercise.json: outputs[0].shape: 1 dimension " +
                             "where the reference " + kSource +
                             "/cases/programs/dp-step.json returns w with 2 dimensions\n",
             rank.err);
  tmp.write("rank/exercise.json",
            replaced(ranked, w_out + "[\"D\", \"K\"]", w_out + "[\"Q\", \"K\"]"));
  const Result q = run({"check", "--program", "cases/submissions/dp-step/right.json", "--exercise",
                        folder, folder + "/cases"});
  BOOST_TEST(q.code == 0, q.out << q.err);

  // And of its dtypes: a program graded as the exercise must have them (program_file_test), so
  // an exercise whose loss is i32 where its reference returns f32 would refuse every program,
  // its own reference too. That is the exercise's error, said once, naming its field.
  for (const std::string name : {"dtypes", "dp-step"}) {
    refused_against_its_reference(tmp, name, R"({"name": "loss", "dtype": "f32")",
                                  R"({"name": "loss", "dtype": "i32")", "outputs[2].dtype: i32",
                                  "returns loss as f32");
  }

  // Read as a program file is: within --max-input-bytes.
  fs::create_directories(tmp / "big");
  tmp.write("big/exercise.json", std::string(40000, ' ') + "{}");
  const Result big = run({"check", "--program", "cases/submissions/dp-step/right.json",
                          "--max-input-bytes", "20000", "--exercise", tmp / "big", dir + "/cases"});
  BOOST_TEST(big.code == 2, big.err);
  BOOST_TEST(big.err == "meshrun: " + tmp / "big/exercise.json" +
                            ": larger than the input limit of 20000 bytes (--max-input-bytes)\n",
             big.err);

  const Result unknown = run({"check", "--program", "cases/submissions/dp-step/right.json",
                              "--exercise", "pipeline", "cases/dp-step"});
  BOOST_TEST(unknown.code == 2, unknown.err);
  BOOST_TEST(has(unknown.err,
                 "meshrun: --exercise: pipeline is not an exercise meshrun grades "
                 "(dp-step, matmul-2d, mlp-train"),
             unknown.err);
}

}  // namespace
