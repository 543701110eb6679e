// write_stderr (support/exit_code.hpp): a line reaches stderr whole even when stderr is a
// non-blocking pipe that is full when the line is written -- it waits for the reader, briefly.
// write_stderr_report: a report that stderr refuses is an OutputError naming the flag.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "support/errors.hpp"
#include "support/exit_code.hpp"

BOOST_AUTO_TEST_CASE(a_line_to_a_full_nonblocking_stderr_arrives_whole) {
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  BOOST_REQUIRE(::fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0);
  const std::string filler(4096, 'x');
  std::size_t filled = 0;  // fill the pipe until write says EAGAIN
  for (;;) {
    const ssize_t n = ::write(fds[1], filler.data(), filler.size());
    if (n < 0) {
      BOOST_REQUIRE(errno == EAGAIN);
      break;
    }
    filled += static_cast<std::size_t>(n);
  }
  const int saved = ::dup(STDERR_FILENO);
  BOOST_REQUIRE(saved >= 0);
  BOOST_REQUIRE(::dup2(fds[1], STDERR_FILENO) == STDERR_FILENO);
  std::string read_back;
  std::thread reader([&] {  // makes room only after write_stderr found the pipe full
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
      read_back.append(buf, static_cast<std::size_t>(n));
  });
  const std::string line = "meshrun: " + std::string(10000, 'y') + "\n";
  const bool whole = meshrun::write_stderr(line);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fds[1]);  // the reader sees the end of the pipe
  reader.join();
  ::close(fds[0]);
  BOOST_TEST(whole);
  BOOST_TEST(read_back.size() == filled + line.size());
  BOOST_TEST((read_back.size() >= line.size() &&
              read_back.compare(read_back.size() - line.size(), line.size(), line) == 0));
}

// On a full device, on a closed stderr and on one that stays full: false from write_stderr, and
// from write_stderr_report an OutputError naming the flag and the OS's reason (exit 6).
BOOST_AUTO_TEST_CASE(a_report_stderr_refuses_is_an_output_error) {
  const int saved = ::dup(STDERR_FILENO);
  BOOST_REQUIRE(saved >= 0);
  auto report_message = [](const char* flag) -> std::string {
    try {
      meshrun::write_stderr_report("a report\n", flag);
    } catch (const meshrun::OutputError& e) {
      return e.what();
    }
    return "written";
  };
  const int full = ::open("/dev/full", O_WRONLY);
  BOOST_REQUIRE(full >= 0);
  BOOST_REQUIRE(::dup2(full, STDERR_FILENO) == STDERR_FILENO);
  const bool to_full = meshrun::write_stderr("a line\n");
  const std::string on_full = report_message("--trace");
  ::close(STDERR_FILENO);
  const std::string on_closed = report_message("--timings");
  BOOST_REQUIRE(::dup2(full, STDERR_FILENO) == STDERR_FILENO);  // or pipe() would take fd 2
  int fds[2];  // a non-blocking pipe nobody reads, full before the report
  BOOST_REQUIRE(::pipe(fds) == 0);
  BOOST_REQUIRE(::fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0);
  const std::string filler(4096, 'x');
  while (::write(fds[1], filler.data(), filler.size()) > 0) {
  }
  BOOST_REQUIRE(::dup2(fds[1], STDERR_FILENO) == STDERR_FILENO);
  const std::string on_stuck = report_message("--show-sharding");
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(full);
  ::close(fds[0]);
  ::close(fds[1]);
  BOOST_TEST(!to_full);
  BOOST_TEST(on_full == "--trace: cannot write stderr: No space left on device");
  BOOST_TEST(on_closed == "--timings: cannot write stderr: Bad file descriptor");
  BOOST_TEST(on_stuck == "--show-sharding: cannot write stderr: Resource temporarily unavailable");
}
