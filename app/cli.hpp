// CLI11 for app/: include this, never <CLI/CLI.hpp> (nor <iostream>).
//
// CLI11's headers include <iostream>, and with libstdc++ (GCC 12) that header puts a static
// std::ios_base::Init object in every translation unit that includes it. The first one built
// makes the eight standard streams and the C++ classic locale (its ~30 facets) before main: 15
// page faults and about 4% of a plain run's start-up (issue #32.2; bench/README.md), for streams a
// run never uses. meshrun writes stderr with write_stderr (support/exit_code.hpp) and stdout with
// write_stdout (io/output.hpp). Here CLI11 gets <iostream>'s declarations without that object:
// only CLI11's own App::exit (--help, --version) prints through std::cout and std::cerr, and
// main() builds the streams (std::ios_base::Init) before it builds a CLI::App. Anything else
// that used std::cout or std::cerr in meshrun would first need the same.
//
// The ctest `meshrun_builds_no_iostreams_before_main` checks the built binary: no static
// initialiser calls std::ios_base::Init's constructor, and main() does.
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
