// CLI11 for app/: include this, never <CLI/CLI.hpp> (nor <iostream>).
//
// CLI11's headers include <iostream>, and with libstdc++ (GCC 12) that header puts a static
// std::ios_base::Init object in every translation unit that includes it. The first one built
// makes the eight standard streams and the C++ classic locale (its ~30 facets) before main: 15
// page faults and about 4% of a plain run's start-up (issue #32.2; bench/README.md), for streams a
// run never uses. meshrun writes stderr with write_stderr (support/exit_code.hpp) and stdout with
// write_stdout (io/output.hpp). Here CLI11 gets <iostream>'s declarations without that object.
// meshrun hands a standard stream to CLI11 in one place, App::exit for --help and --version
// (app/exit.cpp: text to an ostringstream, std::cerr unused for those), and builds the streams
// there first. Anything else that used std::cout or std::cerr would first need the same.
//
// The ctest `startup_builds_no_iostreams_before_main` checks the built binary: no static
// initialiser calls std::ios_base::Init's constructor, and run_guarded does. (GCC 13's libstdc++
// builds the streams in its own initialiser whenever they are linked in; this header would then
// save nothing, and that test would say so.)
#pragma once

#include <istream>
#include <ostream>

#if defined(__GLIBCXX__) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1  // <iostream>'s own include guard: the header is now "included"
// clang-format takes the visibility macro for the namespace's name: the block stays as written.
// clang-format off
namespace std _GLIBCXX_VISIBILITY(default) {
_GLIBCXX_BEGIN_NAMESPACE_VERSION
// As <iostream> declares them (the objects are libstdc++'s), minus `static ios_base::Init`.
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
extern wistream wcin;
extern wostream wcout;
extern wostream wcerr;
extern wostream wclog;
_GLIBCXX_END_NAMESPACE_VERSION
}  // namespace std
// clang-format on
#endif

#include <CLI/CLI.hpp>
