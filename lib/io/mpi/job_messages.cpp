#include "io/mpi/job_messages.hpp"

#include <cstdint>
#include <utility>

namespace meshrun {

namespace {

// Rank 0 alive and still working: never an exit code (codes are 0..255).
constexpr std::uint64_t kAlive = ~std::uint64_t{0};

void put(Wire& w, const std::vector<std::string>& words) {
  w.put(static_cast<std::uint64_t>(words.size()));
  for (const std::string& s : words) w.put(s);
}

std::vector<std::string> words(Wire& w) {
  std::vector<std::string> all(w.u64());
  for (std::string& s : all) s = w.str();
  return all;
}

// {kAlive} or {code}: the head of a kStart or kEnd message.
void put_state(Wire& w, bool alive, int code) {
  w.put(alive ? kAlive : static_cast<std::uint64_t>(code));
}

template <class M>
void take_state(Wire& w, M& m) {
  const std::uint64_t v = w.u64();
  m.alive = v == kAlive;
  m.code = m.alive ? 0 : static_cast<int>(v);
}

}  // namespace

// [words, host]
std::string LaunchMessage::encode() const {
  Wire w;
  put(w, words);
  w.put(host);
  return w.bytes();
}

LaunchMessage LaunchMessage::decode(std::string bytes) {
  Wire w(std::move(bytes));
  LaunchMessage m;
  m.words = meshrun::words(w);
  m.host = w.str();
  return m;
}

// [code] or [0, hosts, mesh]
std::string SetupMessage::encode() const {
  Wire w;
  w.put(static_cast<std::uint64_t>(code));
  if (code != 0) return w.bytes();
  put(w, hosts);
  w.put(mesh);
  return w.bytes();
}

SetupMessage SetupMessage::decode(std::string bytes) {
  Wire w(std::move(bytes));
  SetupMessage m;
  m.code = static_cast<int>(w.u64());
  if (m.code != 0) return m;
  m.hosts = words(w);
  m.mesh = w.mesh();
  return m;
}

// [kAlive], [code] or [0, key]
std::string StartMessage::encode() const {
  Wire w;
  put_state(w, alive, code);
  if (!alive && code == 0) w.put(key);
  return w.bytes();
}

StartMessage StartMessage::decode(std::string bytes) {
  Wire w(std::move(bytes));
  StartMessage m;
  take_state(w, m);
  if (!m.alive && m.code == 0) m.key = w.str();
  return m;
}

// [kAlive] or [code]
std::string EndMessage::encode() const {
  Wire w;
  put_state(w, alive, code);
  return w.bytes();
}

EndMessage EndMessage::decode(std::string bytes) {
  Wire w(std::move(bytes));
  EndMessage m;
  take_state(w, m);
  return m;
}

}  // namespace meshrun
