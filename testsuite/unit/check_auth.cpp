// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/core/sha256 and src/core/auth (doc/auth.md).
//
// The MUNGE tests talk to REAL private munged daemons, never the system one:
// main() starts two (each with its own random key, socket, pid, log and seed
// file in a mkdtemp directory under /tmp), waits until each socket accepts
// connections, and stops exactly those pids at the end.  Cleanup also runs
// from atexit and from SIGINT/SIGTERM/SIGHUP handlers, and each munged gets
// PR_SET_PDEATHSIG so it cannot outlive this program even on SIGKILL.
//
// Environment: MUNGED (path of munged, default /usr/sbin/munged).
// FLEXCO_SRCDIR/FLEXCO_BUILDDIR are not needed: every input is built here.

#include <fcntl.h>
#include <ftw.h>
#include <munge.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/auth.hpp"
#include "core/session.hpp"
#include "core/http_client.hpp"
#include "core/capi_auth.h"
#include "core/sha256.hpp"

// Last: check.h defines macros (fail, ...) that clash with <ios>.
#include <check.h>

namespace auth = flexco::auth;

// Check's ck_assert_str_eq keeps the char pointers past the full expression,
// so a temporary std::string's c_str() would dangle: compare strings whole.
#define EXPECT_STR_EQ(X, Y)                                                    \
  do {                                                                         \
    const std::string got_ = (X);                                              \
    const std::string want_ = (Y);                                             \
    ck_assert_msg(got_ == want_, "%s: '%s' != '%s'", #X, got_.c_str(),         \
                  want_.c_str());                                              \
  } while (0)
using auth::Errc;

// ===========================================================================
// Private munged fixture

namespace {

struct PrivateMunged {
  const char* label = "";
  std::string dir;
  std::string socket;
  pid_t pid = -1;
};

PrivateMunged g_munged{"main", "", "", -1};   // the one every verifier trusts
PrivateMunged g_foreign{"foreign", "", "", -1};  // another key: its credentials are foreign
pid_t g_owner = -1;               // only this process may stop the daemons

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool write_key(const std::string& path, std::string& err) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    err = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = fchmod(fd, 0600) == 0;  // whatever the umask
  unsigned char key[1024];
  std::size_t got = 0;
  while (ok && got < sizeof(key)) {
    const ssize_t n = getrandom(key + got, sizeof(key) - got, 0);
    if (n < 0 && errno != EINTR) ok = false;
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  ok = ok && write(fd, key, sizeof(key)) == static_cast<ssize_t>(sizeof(key));
  ok = (close(fd) == 0) && ok;
  if (!ok) err = "cannot write the key " + path + ": " + std::strerror(errno);
  return ok;
}

bool socket_accepts(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

bool start_munged(PrivateMunged& m, std::string& err) {
  const char* env = std::getenv("MUNGED");
  const std::string munged = (env != nullptr && *env != '\0') ? env : "/usr/sbin/munged";
  if (access(munged.c_str(), X_OK) != 0) {
    err = munged + " is not executable (install munge or set MUNGED)";
    return false;
  }
  char tmpl[] = "/tmp/flexco-auth-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    err = std::string("mkdtemp: ") + std::strerror(errno);
    return false;
  }
  m.dir = tmpl;
  m.socket = m.dir + "/munge.sock";
  const std::string key = m.dir + "/munge.key";
  if (!write_key(key, err)) return false;

  const std::vector<std::string> args = {
      munged,
      "-f",
      "-F",
      "--socket=" + m.socket,
      "--key-file=" + key,
      "--pid-file=" + m.dir + "/munged.pid",
      "--log-file=" + m.dir + "/munged.log",
      "--seed-file=" + m.dir + "/munged.seed",
  };
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string out = m.dir + "/munged.out";
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) {
    err = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    // The child: die with the test program, keep TAP on stdout clean.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    const int in = open("/dev/null", O_RDONLY);
    const int log = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || log < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0) {
      _exit(127);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  m.pid = pid;

  // Wait for the condition (the socket accepts), or for munged to die.
  const std::time_t deadline = std::time(nullptr) + 20;
  for (;;) {
    int status = 0;
    if (waitpid(m.pid, &status, WNOHANG) == m.pid) {
      m.pid = -1;
      err = std::string("munged (") + m.label + ") exited before its socket was up: " +
            read_file(out) + read_file(m.dir + "/munged.log");
      return false;
    }
    if (socket_accepts(m.socket)) return true;
    if (std::time(nullptr) > deadline) {
      err = std::string("munged (") + m.label + ") did not accept on " + m.socket +
            " within 20 s: " + read_file(out);
      return false;
    }
    poll(nullptr, 0, 20);
  }
}

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return remove(path);
}

void stop_munged(PrivateMunged& m) {
  if (getpid() != g_owner) return;  // a forked test process: not ours to stop
  if (m.pid > 0) {
    kill(m.pid, SIGTERM);
    int status = 0;
    bool gone = false;
    for (int i = 0; i < 250 && !gone; ++i) {  // up to 5 s
      gone = waitpid(m.pid, &status, WNOHANG) == m.pid;
      if (!gone) poll(nullptr, 0, 20);
    }
    if (!gone) {
      kill(m.pid, SIGKILL);
      waitpid(m.pid, &status, 0);
    }
    m.pid = -1;
  }
  if (!m.dir.empty()) {
    nftw(m.dir.c_str(), remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    m.dir.clear();
  }
}

void release_watchdog();

void stop_all() {
  stop_munged(g_munged);
  stop_munged(g_foreign);
  release_watchdog();
}

volatile sig_atomic_t g_munged_pid = -1;
volatile sig_atomic_t g_foreign_pid = -1;

void on_signal(int sig) {
  // Async-signal-safe: kill our daemons, then die of the same signal.
  if (getpid() == g_owner) {
    if (g_munged_pid > 0) kill(g_munged_pid, SIGTERM);
    if (g_foreign_pid > 0) kill(g_foreign_pid, SIGTERM);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

// While the tests run, Check installs its own SIGTERM/SIGINT handlers (they
// signal the whole process group, munged included), and nothing runs on
// SIGKILL.  PR_SET_PDEATHSIG stops munged in every case; this watchdog, a
// child in its own process group holding the read end of a pipe, removes
// the temporary directories once this program is gone without saying
// goodbye (EOF without the 'x' that release_watchdog() writes).
pid_t g_watchdog_pid = -1;
int g_watchdog_fd = -1;

void start_watchdog() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;  // cleanup then relies on stop_all
  const std::vector<std::string> dirs = {g_munged.dir, g_foreign.dir};
  const std::vector<pid_t> pids = {g_munged.pid, g_foreign.pid};
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    close(fds[1]);
    setpgid(0, 0);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_IGN);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
    }
    char c = 0;
    ssize_t n;
    do n = read(fds[0], &c, 1); while (n < 0 && errno == EINTR);
    if (n == 1) _exit(0);  // the program cleaned up itself
    // The program died: wait (at most 5 s) for its munged to follow it.
    for (pid_t m : pids) {
      for (int i = 0; i < 250 && m > 0 && kill(m, 0) == 0; ++i) poll(nullptr, 0, 20);
    }
    for (const std::string& d : dirs) {
      if (!d.empty()) nftw(d.c_str(), remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    }
    _exit(0);
  }
  close(fds[0]);
  g_watchdog_pid = pid;
  g_watchdog_fd = fds[1];
}

void release_watchdog() {
  if (getpid() != g_owner || g_watchdog_pid < 0) return;
  if (write(g_watchdog_fd, "x", 1) != 1) { /* EOF alone makes it clean up */ }
  close(g_watchdog_fd);
  int status = 0;
  waitpid(g_watchdog_pid, &status, 0);
  g_watchdog_pid = -1;
}

// ===========================================================================
// Helpers

std::int64_t now_s() { return static_cast<std::int64_t>(std::time(nullptr)); }

auth::Signer make_signer(const std::string& socket, int ttl = 0) {
  auth::SignerConfig config;
  config.socket_path = socket;
  config.munge_ttl = ttl;
  auto signer = auth::Signer::create(config);
  ck_assert_msg(signer.ok(), "Signer::create: %s",
                signer.ok() ? "" : signer.error().message.c_str());
  return std::move(signer).value();
}

// The audience the tests' verifiers speak for (a cluster's ClusterName).
const std::string kAudience = "alpha";

auth::Verifier make_verifier(std::int64_t max_age = 300, std::int64_t max_skew = 60,
                             std::size_t capacity = 1024,
                             const std::string& socket = g_munged.socket,
                             const std::string& audience = kAudience) {
  auth::VerifierConfig config;
  config.audience = audience;
  config.socket_path = socket;
  config.max_age = max_age;
  config.max_skew = max_skew;
  config.replay_capacity = capacity;
  auto verifier = auth::Verifier::create(config);
  ck_assert_msg(verifier.ok(), "Verifier::create: %s",
                verifier.ok() ? "" : verifier.error().message.c_str());
  return std::move(verifier).value();
}

std::string sign_for_or_fail(const auth::Signer& signer, const std::string& audience,
                             const std::string& method, const std::string& path,
                             const std::string& body) {
  auto header = signer.sign(audience, method, path, body);
  ck_assert_msg(header.ok(), "sign: %s", header.ok() ? "" : header.error().message.c_str());
  return header.value();
}

std::string sign_or_fail(const auth::Signer& signer, const std::string& method,
                         const std::string& path, const std::string& body) {
  auto header = signer.sign(kAudience, method, path, body);
  ck_assert_msg(header.ok(), "sign: %s", header.ok() ? "" : header.error().message.c_str());
  return header.value();
}

std::string sign_payload_or_fail(const auth::Signer& signer, const auth::Payload& p) {
  auto header = signer.sign_payload(p);
  ck_assert_msg(header.ok(), "sign_payload: %s",
                header.ok() ? "" : header.error().message.c_str());
  return header.value();
}

// An error of exactly this code, with the matching status and a message that
// starts with the code.
template <typename R>
void expect_error(const R& result, Errc code, const char* where) {
  ck_assert_msg(!result.ok(), "%s: expected %s, got success", where, auth::errc_name(code));
  const auth::Error& e = result.error();
  ck_assert_msg(e.code == code, "%s: expected %s, got %s", where, auth::errc_name(code),
                e.message.c_str());
  ck_assert_int_eq(e.status, auth::http_status(code));
  const std::string prefix = std::string(auth::errc_name(code)) + ": ";
  ck_assert_msg(e.message.compare(0, prefix.size(), prefix) == 0 &&
                    e.message.size() > prefix.size(),
                "%s: message '%s' does not start with '%s'", where, e.message.c_str(),
                prefix.c_str());
}

template <typename R>
void expect_ok(const R& result, const char* where) {
  ck_assert_msg(result.ok(), "%s: %s", where,
                result.ok() ? "" : result.error().message.c_str());
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string kEmptyDigest =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const std::string kNonce = "0123456789abcdef0123456789abcdef";

auth::Payload sample_payload(std::int64_t timestamp) {
  auth::Payload p;
  p.audience = kAudience;
  p.method = "POST";
  p.path = "/v1/reservations?cluster=alpha";
  p.body_sha256 = flexco::sha256_hex("{\"nodes\":4}");
  p.timestamp = timestamp;
  p.nonce = kNonce;
  return p;
}

// A fresh random nonce for sign_payload.
std::string random_nonce() {
  unsigned char b[16];
  ck_assert_int_eq(getrandom(b, sizeof(b), 0), static_cast<ssize_t>(sizeof(b)));
  char hex[33];
  for (int i = 0; i < 16; ++i) std::snprintf(hex + 2 * i, 3, "%02x", b[i]);
  return std::string(hex, 32);
}

// Raw libmunge, to make credentials our Signer would never make.
std::string raw_munge_encode(const void* data, int length) {
  munge_ctx_t ctx = munge_ctx_create();
  ck_assert_ptr_nonnull(ctx);
  ck_assert_int_eq(munge_ctx_set(ctx, MUNGE_OPT_SOCKET, g_munged.socket.c_str()),
                   EMUNGE_SUCCESS);
  char* cred = nullptr;
  const munge_err_t err = munge_encode(&cred, ctx, data, length);
  munge_ctx_destroy(ctx);
  ck_assert_msg(err == EMUNGE_SUCCESS, "munge_encode: %s", munge_strerror(err));
  std::string out = "MUNGE ";
  out += cred;
  std::free(cred);
  return out;
}

// Raw libmunge decode of a header value, to look inside what sign() made.
auth::Payload raw_munge_decode(const std::string& header) {
  auto cred = auth::parse_authorization(header);
  expect_ok(cred, "parse_authorization");
  munge_ctx_t ctx = munge_ctx_create();
  ck_assert_ptr_nonnull(ctx);
  ck_assert_int_eq(munge_ctx_set(ctx, MUNGE_OPT_SOCKET, g_munged.socket.c_str()),
                   EMUNGE_SUCCESS);
  void* buf = nullptr;
  int len = 0;
  const std::string c(cred.value());
  const munge_err_t err = munge_decode(c.c_str(), ctx, &buf, &len, nullptr, nullptr);
  munge_ctx_destroy(ctx);
  ck_assert_msg(err == EMUNGE_SUCCESS, "munge_decode: %s", munge_strerror(err));
  const std::string text(static_cast<char*>(buf), static_cast<std::size_t>(len));
  std::free(buf);
  auto payload = auth::parse_payload(text);
  expect_ok(payload, "parse_payload of a signed payload");
  return payload.value();
}

}  // namespace

// ===========================================================================
// SHA-256

namespace {
struct Vector {
  std::string message;
  const char* digest;
};
const Vector kVectors[] = {
    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqkl"
     "mnopqrlmnopqrsmnopqrstnopqrstu",
     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
};
}  // namespace

START_TEST(sha256_standard_vectors) {
  const Vector& v = kVectors[_i];
  EXPECT_STR_EQ(flexco::sha256_hex(v.message), v.digest);
}
END_TEST

START_TEST(sha256_one_million_a) {
  // Fed in uneven pieces so the block buffering is exercised too.
  flexco::Sha256 hash;
  const std::string chunk(997, 'a');
  std::size_t left = 1000000;
  while (left > 0) {
    const std::size_t n = left < chunk.size() ? left : chunk.size();
    hash.update(chunk.data(), n);
    left -= n;
  }
  EXPECT_STR_EQ(flexco::to_hex(hash.finish()),
                   "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_STR_EQ(flexco::sha256_hex(std::string(1000000, 'a')),
                   "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

START_TEST(sha256_incremental_equals_one_shot) {
  // Every split point of messages around the padding boundaries (55, 56, 64).
  std::string message;
  for (int i = 0; i < 130; ++i) message.push_back(static_cast<char>('A' + i % 61));
  for (std::size_t len : {0u, 1u, 55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 128u, 130u}) {
    const std::string m = message.substr(0, len);
    const auto expected = flexco::sha256(m);
    for (std::size_t cut = 0; cut <= len; ++cut) {
      flexco::Sha256 hash;
      hash.update(m.data(), cut);
      hash.update(nullptr, 0);
      hash.update(m.data() + cut, len - cut);
      ck_assert_msg(hash.finish() == expected, "len %zu cut %zu", len, cut);
    }
  }
}
END_TEST

START_TEST(sha256_finish_resets) {
  flexco::Sha256 hash;
  hash.update("garbage");
  (void)hash.finish();
  hash.update("abc");
  EXPECT_STR_EQ(flexco::to_hex(hash.finish()), kVectors[1].digest);
  hash.update("abc");
  hash.reset();
  EXPECT_STR_EQ(flexco::to_hex(hash.finish()), kVectors[0].digest);
}
END_TEST

// ===========================================================================
// Errors, allowed()

START_TEST(error_codes_and_statuses) {
  const struct {
    Errc code;
    const char* name;
    int status;
  } table[] = {
      {Errc::kMissingCredential, "missing_credential", 401},
      {Errc::kMalformedCredential, "malformed_credential", 401},
      {Errc::kMungeRejected, "munge_rejected", 401},
      {Errc::kMalformedPayload, "malformed_payload", 401},
      {Errc::kWrongAudience, "wrong_audience", 401},
      {Errc::kRequestMismatch, "request_mismatch", 401},
      {Errc::kExpired, "expired", 401},
      {Errc::kNotYetValid, "not_yet_valid", 401},
      {Errc::kReplayed, "replayed", 401},
      {Errc::kIdempotencyKeyMismatch, "idempotency_key_mismatch", 401},
      {Errc::kInvalidRequest, "invalid_request", 400},
      {Errc::kReplayCacheFull, "replay_cache_full", 503},
      {Errc::kMungeUnavailable, "munge_unavailable", 503},
      {Errc::kInvalidArgument, "invalid_argument", 500},
      {Errc::kSignFailed, "sign_failed", 500},
      {Errc::kInternal, "internal_error", 500},
  };
  for (const auto& row : table) {
    EXPECT_STR_EQ(auth::errc_name(row.code), row.name);
    ck_assert_int_eq(auth::http_status(row.code), row.status);
  }
}
END_TEST

START_TEST(allowed_uids) {
  ck_assert(!auth::allowed(0, {}));
  ck_assert(auth::allowed(0, {0}));
  ck_assert(auth::allowed(1000, {64030, 1000}));
  ck_assert(!auth::allowed(1001, {64030, 1000}));
  ck_assert(!auth::allowed(0, {1000}));
}
END_TEST

// ===========================================================================
// Payload format

START_TEST(payload_round_trip) {
  const auth::Payload p = sample_payload(1700000000);
  auto text = auth::encode_payload(p);
  expect_ok(text, "encode_payload");
  // flexco-auth-v3; no Idempotency-Key is the line "-".
  const std::string expected = "flexco-auth-v3\nalpha\nPOST\n/v1/reservations?cluster=alpha\n" +
                               p.body_sha256 + "\n1700000000\n" + kNonce + "\n-\n";
  EXPECT_STR_EQ(text.value(), expected);
  auto back = auth::parse_payload(text.value());
  expect_ok(back, "parse_payload");
  EXPECT_STR_EQ(back.value().audience, p.audience);
  EXPECT_STR_EQ(back.value().method, p.method);
  EXPECT_STR_EQ(back.value().path, p.path);
  EXPECT_STR_EQ(back.value().body_sha256, p.body_sha256);
  ck_assert_int_eq(back.value().timestamp, p.timestamp);
  EXPECT_STR_EQ(back.value().nonce, p.nonce);
  ck_assert_int_eq(back.value().version, 3);
  ck_assert(!back.value().idempotency_key.has_value());
}
END_TEST

START_TEST(payload_v3_idempotency_key) {
  // Issue 14 §1.8: the key is the 8th line, exactly as sent.
  auth::Payload p = sample_payload(1700000000);
  p.idempotency_key = "k-1";
  auto text = auth::encode_payload(p);
  expect_ok(text, "encode_payload with a key");
  EXPECT_STR_EQ(text.value(), "flexco-auth-v3\nalpha\nPOST\n/v1/reservations?cluster=alpha\n" +
                                  p.body_sha256 + "\n1700000000\n" + kNonce + "\nk-1\n");
  auto back = auth::parse_payload(text.value());
  expect_ok(back, "parse_payload with a key");
  ck_assert(back.value().idempotency_key.has_value());
  EXPECT_STR_EQ(*back.value().idempotency_key, "k-1");

  // Every visible ASCII byte, 128 of them: the longest key.
  std::string all;
  for (int c = 0x21; c <= 0x7e; ++c) all.push_back(static_cast<char>(c));
  p.idempotency_key = all + std::string(auth::kMaxIdempotencyKeyLength - all.size(), 'z');
  text = auth::encode_payload(p);
  expect_ok(text, "encode_payload, 128-byte key of every visible byte");
  back = auth::parse_payload(text.value());
  expect_ok(back, "parse_payload, 128-byte key");
  EXPECT_STR_EQ(*back.value().idempotency_key, *p.idempotency_key);

  // Keys the encoder refuses: "-" (it means none), empty, too long, bytes
  // outside 0x21-0x7e.
  for (const std::string& bad :
       {std::string("-"), std::string(), std::string(129, 'k'), std::string("a b"),
        std::string("a\tb"), std::string("a\nb"), std::string("a\x7f"), std::string("caf\xc3\xa9"),
        std::string("a\0b", 3)}) {
    p.idempotency_key = bad;
    expect_error(auth::encode_payload(p), Errc::kInvalidArgument, "encode bad key");
    expect_error(auth::validate_idempotency_key(bad), Errc::kInvalidArgument,
                 "validate_idempotency_key");
  }
  expect_ok(auth::validate_idempotency_key("sreserve-0123"), "validate_idempotency_key");
  expect_ok(auth::validate_idempotency_key(std::string(128, 'k')), "validate 128");

  // flexco-auth-v2 (7 lines, no key line) is still parsed, as version 2.
  const std::string v2 = "flexco-auth-v2\nalpha\nGET\n/v1/co\n" + kEmptyDigest +
                         "\n1700000000\n" + kNonce + "\n";
  back = auth::parse_payload(v2);
  expect_ok(back, "parse_payload v2");
  ck_assert_int_eq(back.value().version, 2);
  ck_assert(!back.value().idempotency_key.has_value());
  text = auth::encode_payload(back.value());
  expect_ok(text, "encode_payload v2");
  EXPECT_STR_EQ(text.value(), v2);
  // ... and can carry no key.
  p = back.value();
  p.idempotency_key = "k-1";
  expect_error(auth::encode_payload(p), Errc::kInvalidArgument, "v2 with a key");
  p.idempotency_key.reset();
  p.version = 4;
  expect_error(auth::encode_payload(p), Errc::kInvalidArgument, "version 4");
}
END_TEST

START_TEST(payload_limits_accepted) {
  // The largest payload of all: every field at its maximum.
  auth::Payload p = sample_payload(INT64_MAX);
  p.audience = std::string(auth::kMaxAudienceLength, 'a');
  p.method = std::string(auth::kMaxMethodLength, 'M');
  p.path = "/" + std::string(auth::kMaxPathLength - 1, 'p');
  p.idempotency_key = std::string(auth::kMaxIdempotencyKeyLength, 'k');
  auto text = auth::encode_payload(p);
  expect_ok(text, "encode_payload at the limits");
  // v3: the longest but for the session offer's line
  ck_assert_uint_eq(text.value().size(),
                    auth::kMaxPayloadSize - auth::kSessionOfferHexLength - 1);
  auto back = auth::parse_payload(text.value());
  expect_ok(back, "parse_payload at the limits");
  ck_assert_int_eq(back.value().timestamp, INT64_MAX);
  // v4 (a session offer): the longest of all
  p.version = 4;
  p.session_offer = std::string(auth::kSessionOfferHexLength, 'f');
  text = auth::encode_payload(p);
  expect_ok(text, "encode_payload v4 at the limits");
  ck_assert_uint_eq(text.value().size(), auth::kMaxPayloadSize);
  back = auth::parse_payload(text.value());
  expect_ok(back, "parse_payload v4 at the limits");
  ck_assert(back.value().version == 4 && back.value().session_offer == p.session_offer);
  ck_assert(auth::encode_payload(back.value()).value() == text.value());
  // a v4 payload's offer must be 64 lowercase hex digits; v3 carries none
  std::string bad = text.value();
  bad[bad.size() - 2] = 'F';
  expect_error(auth::parse_payload(bad), Errc::kMalformedPayload, "v4, upper-case offer");
  p.version = 3;
  expect_error(auth::encode_payload(p), Errc::kInvalidArgument, "v3 with an offer");
  p.version = 4;
  p.session_offer.reset();
  expect_error(auth::encode_payload(p), Errc::kInvalidArgument, "v4 without an offer");

  p = sample_payload(0);
  p.path = "/";
  text = auth::encode_payload(p);
  expect_ok(text, "encode_payload, timestamp 0 and path /");
  expect_ok(auth::parse_payload(text.value()), "parse_payload, timestamp 0 and path /");
}
END_TEST

namespace {
struct BadPayload {
  const char* name;
  std::string text;
  const char* mentions;  // a part of the message
};

std::string payload_text(const std::string& version, const std::string& audience,
                         const std::string& method, const std::string& path,
                         const std::string& digest, const std::string& ts,
                         const std::string& nonce) {
  return version + "\n" + audience + "\n" + method + "\n" + path + "\n" + digest + "\n" + ts +
         "\n" + nonce + "\n";
}

// A flexco-auth-v3 payload: v2's lines (with v3's version line) and the key.
std::string payload_v3(const std::string& key, const std::string& audience = "alpha",
                       const std::string& method = "GET", const std::string& path = "/v1/x?a=1",
                       const std::string& ts = "1700000000") {
  return payload_text("flexco-auth-v3", audience, method, path, kEmptyDigest, ts, kNonce) +
         key + "\n";
}

const std::vector<BadPayload>& bad_payloads() {
  static const std::vector<BadPayload> table = [] {
    const std::string v = "flexco-auth-v2", a = "alpha", m = "GET", p = "/v1/x?a=1",
                      d = kEmptyDigest, t = "1700000000", n = kNonce;
    const std::string good = payload_text(v, a, m, p, d, t, n);
    // A complete flexco-auth-v1 payload (no audience line): refused.
    const std::string v1 = "flexco-auth-v1\n" + m + "\n" + p + "\n" + d + "\n" + t + "\n" + n + "\n";
    std::vector<BadPayload> rows = {
        {"empty", "", "newline"},
        {"no final newline", good.substr(0, good.size() - 1), "newline"},
        {"six fields", v + "\n" + a + "\n" + m + "\n" + p + "\n" + d + "\n" + t + "\n", "6 lines"},
        {"eight fields", good + "extra\n", "8 lines"},
        {"data after last newline", good + "x", "newline"},
        {"blank line appended", good + "\n", "8 lines"},
        {"version 1", v1, "no longer accepted"},
        {"version 1 with an audience line", payload_text("flexco-auth-v1", a, m, p, d, t, n),
         "no longer accepted"},
        {"other version", payload_text("flexco-auth-v5", a, m, p, d, t, n), "line 1"},
        // flexco-auth-v3: line 8 is the Idempotency-Key, "-" for none.
        {"v3 without its key line", payload_text("flexco-auth-v3", a, m, p, d, t, n), "7 lines"},
        {"v3 with nine lines", payload_v3("-") + "k\n", "9 lines"},
        {"v3 empty key line", payload_v3(""), "line 8"},
        {"v3 key with space", payload_v3("k 1"), "line 8"},
        {"v3 key with tab", payload_v3("k\t1"), "line 8"},
        {"v3 key with CR", payload_v3("k1\r"), "line 8"},
        {"v3 key with DEL", payload_v3("k\x7f"), "line 8"},
        {"v3 key with UTF-8", payload_v3("caf\xc3\xa9"), "line 8"},
        {"v3 key with NUL", payload_v3(std::string("k\0", 2)), "line 8"},
        {"v3 key too long", payload_v3(std::string(129, 'k')), "line 8"},
        {"v3 key and CRLF", payload_v3("k1\r\n"), "9 lines"},
        {"v3 bad nonce", payload_text("flexco-auth-v3", a, m, p, d, t, "x") + "-\n", "line 7"},
        {"v3 oversize", payload_v3(std::string(auth::kMaxPayloadSize, 'k')), "more than"},
        {"version with CR", payload_text(v + "\r", a, m, p, d, t, n), "line 1"},
        {"CRLF lines", v + "\r\n" + a + "\r\n" + m + "\r\n" + p + "\r\n" + d + "\r\n" + t +
         "\r\n" + n + "\r\n", "line 1"},
        {"audience missing", v + "\n" + m + "\n" + p + "\n" + d + "\n" + t + "\n" + n + "\n",
         "6 lines"},
        {"empty audience", payload_text(v, "", m, p, d, t, n), "line 2"},
        {"audience with space", payload_text(v, "alpha beta", m, p, d, t, n), "line 2"},
        {"audience with dot", payload_text(v, "alpha.example", m, p, d, t, n), "line 2"},
        {"audience with colon", payload_text(v, "cluster:alpha", m, p, d, t, n), "line 2"},
        {"audience with CR", payload_text(v, "alpha\r", m, p, d, t, n), "line 2"},
        {"audience with UTF-8", payload_text(v, "\xc3\xa9", m, p, d, t, n), "line 2"},
        {"audience too long", payload_text(v, std::string(65, 'a'), m, p, d, t, n), "line 2"},
        {"empty method", payload_text(v, a, "", p, d, t, n), "line 3"},
        {"lowercase method", payload_text(v, a, "get", p, d, t, n), "line 3"},
        {"method with digit", payload_text(v, a, "G3T", p, d, t, n), "line 3"},
        {"method too long", payload_text(v, a, std::string(17, 'A'), p, d, t, n), "line 3"},
        {"empty path", payload_text(v, a, m, "", d, t, n), "line 4"},
        {"relative path", payload_text(v, a, m, "v1/x", d, t, n), "line 4"},
        {"path with space", payload_text(v, a, m, "/v1/x y", d, t, n), "line 4"},
        {"path with tab", payload_text(v, a, m, "/v1/x\ty", d, t, n), "line 4"},
        {"path with UTF-8", payload_text(v, a, m, "/v1/caf\xc3\xa9", d, t, n), "line 4"},
        {"path with NUL", payload_text(v, a, m, std::string("/v1/\0x", 6), d, t, n), "line 4"},
        {"path too long", payload_text(v, a, m, "/" + std::string(2048, 'a'), d, t, n), "line 4"},
        {"digest too short", payload_text(v, a, m, p, d.substr(1), t, n), "line 5"},
        {"digest too long", payload_text(v, a, m, p, d + "0", t, n), "line 5"},
        {"digest uppercase", payload_text(v, a, m, p, "E3B0" + d.substr(4), t, n), "line 5"},
        {"digest not hex", payload_text(v, a, m, p, "g" + d.substr(1), t, n), "line 5"},
        {"timestamp empty", payload_text(v, a, m, p, d, "", n), "line 6"},
        {"timestamp negative", payload_text(v, a, m, p, d, "-1", n), "line 6"},
        {"timestamp plus sign", payload_text(v, a, m, p, d, "+1", n), "line 6"},
        {"timestamp leading zero", payload_text(v, a, m, p, d, "01700000000", n), "line 6"},
        {"timestamp fraction", payload_text(v, a, m, p, d, "1700000000.5", n), "line 6"},
        {"timestamp space", payload_text(v, a, m, p, d, " 1700000000", n), "line 6"},
        {"timestamp hex", payload_text(v, a, m, p, d, "0x10", n), "line 6"},
        {"timestamp overflow", payload_text(v, a, m, p, d, "9223372036854775808", n), "line 6"},
        {"timestamp 20 digits", payload_text(v, a, m, p, d, "10000000000000000000", n), "line 6"},
        {"nonce too short", payload_text(v, a, m, p, d, t, n.substr(1)), "line 7"},
        {"nonce too long", payload_text(v, a, m, p, d, t, n + "0"), "line 7"},
        {"nonce uppercase", payload_text(v, a, m, p, d, t, "ABCDEF" + n.substr(6)), "line 7"},
        {"nonce with NUL", payload_text(v, a, m, p, d, t, std::string(31, 'a') + '\0'), "line 7"},
        {"oversize", good + std::string(auth::kMaxPayloadSize, '\n'), "more than"},
    };
    return rows;
  }();
  return table;
}
}  // namespace

START_TEST(payload_parser_rejects) {
  const BadPayload& row = bad_payloads()[static_cast<std::size_t>(_i)];
  auto parsed = auth::parse_payload(row.text);
  expect_error(parsed, Errc::kMalformedPayload, row.name);
  ck_assert_msg(contains(parsed.error().message, row.mentions),
                "%s: message '%s' does not mention '%s'", row.name,
                parsed.error().message.c_str(), row.mentions);
}
END_TEST

START_TEST(payload_encoder_rejects) {
  struct Row {
    const char* name;
    auth::Payload payload;
  };
  std::vector<Row> rows;
  const auth::Payload good = sample_payload(1700000000);
  auto with = [&](const char* name, auto change) {
    auth::Payload p = good;
    change(p);
    rows.push_back({name, p});
  };
  with("empty audience", [](auth::Payload& p) { p.audience = ""; });
  with("audience with newline", [](auth::Payload& p) { p.audience = "alpha\nGET"; });
  with("audience too long", [](auth::Payload& p) { p.audience = std::string(65, 'a'); });
  with("empty method", [](auth::Payload& p) { p.method = ""; });
  with("lowercase method", [](auth::Payload& p) { p.method = "post"; });
  with("relative path", [](auth::Payload& p) { p.path = "v1"; });
  with("newline in path", [](auth::Payload& p) { p.path = "/v1\nGET"; });
  with("short digest", [](auth::Payload& p) { p.body_sha256.pop_back(); });
  with("negative timestamp", [](auth::Payload& p) { p.timestamp = -5; });
  with("bad nonce", [](auth::Payload& p) { p.nonce[0] = 'X'; });
  for (const Row& row : rows) {
    expect_error(auth::encode_payload(row.payload), Errc::kInvalidArgument, row.name);
  }
  expect_ok(auth::validate_audience("alpha"), "validate_audience alpha");
  expect_ok(auth::validate_audience("Cluster_2-b"), "validate_audience Cluster_2-b");
  expect_ok(auth::validate_audience(std::string(64, 'z')), "validate_audience 64");
  expect_error(auth::validate_audience(""), Errc::kInvalidArgument, "validate_audience empty");
  expect_error(auth::validate_audience(std::string(65, 'z')), Errc::kInvalidArgument,
               "validate_audience 65");
  expect_error(auth::validate_audience("a b"), Errc::kInvalidArgument, "validate_audience space");
  expect_ok(auth::validate_method("DELETE"), "validate_method DELETE");
  expect_error(auth::validate_method("DEL ETE"), Errc::kInvalidArgument, "validate_method");
  expect_ok(auth::validate_path("/v1/co?x=%20&y"), "validate_path");
  expect_error(auth::validate_path("/v1/\x7f"), Errc::kInvalidArgument, "validate_path DEL");
}
END_TEST

// ===========================================================================
// Header values (no munged needed)

START_TEST(header_parse_and_format) {
  auto cred = auth::parse_authorization("MUNGE MUNGE:AbC+/9=:");
  expect_ok(cred, "plain");
  EXPECT_STR_EQ(std::string(cred.value()), "MUNGE:AbC+/9=:");
  cred = auth::parse_authorization(" \tmunge   MUNGE:AAAA: \t");
  expect_ok(cred, "lower-case scheme, OWS and several spaces");
  EXPECT_STR_EQ(std::string(cred.value()), "MUNGE:AAAA:");

  auto value = auth::format_authorization("MUNGE:AAAA:");
  expect_ok(value, "format");
  EXPECT_STR_EQ(value.value(), "MUNGE MUNGE:AAAA:");
  expect_error(auth::format_authorization("MUNGE:AA AA:"), Errc::kInvalidArgument, "format space");
  expect_error(auth::format_authorization("AAAA"), Errc::kInvalidArgument, "format bare");
  expect_error(auth::format_authorization("MUNGE:" + std::string(5000, 'A') + ":"),
               Errc::kInvalidArgument, "format too long");
}
END_TEST

// ===========================================================================
// Configuration

START_TEST(config_validation) {
  auth::SignerConfig sc;
  sc.socket_path = "relative/munge.sock";
  expect_error(auth::Signer::create(sc), Errc::kInvalidArgument, "relative socket");
  sc.socket_path = "/" + std::string(108, 's');
  expect_error(auth::Signer::create(sc), Errc::kInvalidArgument, "long socket");
  sc.socket_path = std::string("/tmp/a\0b", 8);
  expect_error(auth::Signer::create(sc), Errc::kInvalidArgument, "NUL in socket");
  sc.socket_path = "";
  sc.munge_ttl = -1;
  expect_error(auth::Signer::create(sc), Errc::kInvalidArgument, "ttl -1");
  sc.munge_ttl = 86401;
  expect_error(auth::Signer::create(sc), Errc::kInvalidArgument, "ttl 86401");
  sc.munge_ttl = 0;
  expect_ok(auth::Signer::create(sc), "default signer");

  auto bad = [](const char* name, auto change) {
    auth::VerifierConfig vc;
    vc.audience = "alpha";
    change(vc);
    expect_error(auth::Verifier::create(vc), Errc::kInvalidArgument, name);
  };
  bad("max_age 0", [](auth::VerifierConfig& c) { c.max_age = 0; });
  bad("max_age too big", [](auth::VerifierConfig& c) { c.max_age = 86401; });
  bad("max_skew negative", [](auth::VerifierConfig& c) { c.max_skew = -1; });
  bad("max_skew too big", [](auth::VerifierConfig& c) { c.max_skew = 86401; });
  bad("capacity 0", [](auth::VerifierConfig& c) { c.replay_capacity = 0; });
  bad("capacity too big", [](auth::VerifierConfig& c) {
    c.replay_capacity = auth::kMaxReplayCapacity + 1;
  });
  bad("relative socket", [](auth::VerifierConfig& c) { c.socket_path = "munge.sock"; });
  bad("no audience", [](auth::VerifierConfig& c) { c.audience = ""; });
  bad("audience with space", [](auth::VerifierConfig& c) { c.audience = "alpha beta"; });
  bad("audience too long", [](auth::VerifierConfig& c) { c.audience = std::string(65, 'a'); });
  auth::VerifierConfig vc;
  vc.audience = std::string(auth::kFlexcodAudience);
  auto v = auth::Verifier::create(vc);
  expect_ok(v, "default verifier");
  ck_assert_int_eq(v.value().config().max_age, 300);
  ck_assert_int_eq(v.value().config().max_skew, 60);
  expect_error(v.value().verify("GET", "/", "", "MUNGE MUNGE:AAAA:", -1),
               Errc::kInvalidArgument, "now -1");
  expect_error(v.value().verify("GET", "/", "", "MUNGE MUNGE:AAAA:", auth::kMaxTime + 1),
               Errc::kInvalidArgument, "now too late");
}
END_TEST

// ===========================================================================
// Replay cache (direct)

START_TEST(replay_cache_bounded) {
  auth::ReplayCache cache(3, 3);
  using O = auth::ReplayCache::Outcome;
  ck_assert(cache.check_and_insert(0, "a", 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(0, "b", 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(0, "c", 150, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(0, "a", 100, 10) == O::kReplayed);
  ck_assert(cache.check_and_insert(0, "d", 100, 10) == O::kFull);
  ck_assert(cache.check_and_insert(0, "e", 100, 10) == O::kFull);
  ck_assert_uint_eq(cache.size(), 3);
  // A clock going backwards evicts nothing.
  ck_assert(cache.check_and_insert(0, "d", 100, -50) == O::kFull);
  // At exactly the expiry an entry is still live; one second later it goes.
  ck_assert(cache.check_and_insert(0, "d", 200, 100) == O::kFull);
  ck_assert(cache.check_and_insert(0, "a", 200, 100) == O::kReplayed);
  ck_assert(cache.check_and_insert(0, "d", 200, 101) == O::kInserted);
  ck_assert_uint_eq(cache.size(), 2);  // a, b gone; c, d live
  ck_assert(cache.check_and_insert(0, "a", 200, 101) == O::kInserted);
  ck_assert(cache.check_and_insert(0, "x", 200, 101) == O::kFull);
  ck_assert(cache.check_and_insert(0, "x", 200, 1000) == O::kInserted);
  ck_assert_uint_eq(cache.size(), 1);
}
END_TEST

START_TEST(replay_cache_per_uid) {
  auth::ReplayCache cache(10, 10);
  using O = auth::ReplayCache::Outcome;
  ck_assert(cache.check_and_insert(1000, kNonce, 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1001, kNonce, 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1000, kNonce, 100, 0) == O::kReplayed);
  ck_assert(cache.check_and_insert(0x01000000u + 1000, kNonce, 100, 0) == O::kInserted);
  auth::ReplayCache zero(0);
  ck_assert_uint_eq(zero.capacity(), 1);
}
END_TEST

START_TEST(replay_cache_one_uid_cannot_lock_out) {
  // Issue 14 §1.5, with the default share: however many nonces one uid
  // sends, another uid is still served.
  auth::ReplayCache cache(64);
  using O = auth::ReplayCache::Outcome;
  int inserted = 0;
  for (int i = 0; i < 100; ++i) {
    if (cache.check_and_insert(1000, "n" + std::to_string(i), 100, 0) == O::kInserted) {
      ++inserted;
    }
  }
  ck_assert_int_lt(inserted, 64);
  ck_assert(cache.check_and_insert(1001, "n0", 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1002, "n0", 100, 0) == O::kInserted);
}
END_TEST

START_TEST(replay_cache_uid_share) {
  // Issue 14 §1.5: one uid fills its own share and is refused, while
  // other uids are still served; its expired entries free its share.
  auth::ReplayCache cache(8, 3);
  using O = auth::ReplayCache::Outcome;
  ck_assert_uint_eq(cache.per_uid(), 3);
  ck_assert(cache.check_and_insert(1000, "a", 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1000, "b", 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1000, "c", 150, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1000, "d", 150, 0) == O::kUserFull);
  ck_assert(cache.check_and_insert(1000, "a", 100, 0) == O::kReplayed);
  ck_assert_uint_eq(cache.size(), 3);
  for (const char* n : {"a", "b", "c"}) {
    ck_assert(cache.check_and_insert(1001, n, 100, 0) == O::kInserted);
  }
  ck_assert(cache.check_and_insert(1001, "d", 100, 0) == O::kUserFull);
  ck_assert(cache.check_and_insert(1002, "a", 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1002, "b", 100, 0) == O::kInserted);
  // Eight live entries: now the whole cache is full for everybody.
  ck_assert(cache.check_and_insert(1003, "a", 100, 0) == O::kFull);
  // Expiry gives uid 1000 back two slots (a, b), uid 1001 and 1002 all.
  ck_assert(cache.check_and_insert(1000, "d", 150, 101) == O::kInserted);
  ck_assert(cache.check_and_insert(1000, "e", 150, 101) == O::kInserted);
  ck_assert(cache.check_and_insert(1000, "f", 150, 101) == O::kUserFull);
  ck_assert_uint_eq(cache.size(), 3);
  ck_assert(cache.check_and_insert(1000, "f", 200, 151) == O::kInserted);
  ck_assert_uint_eq(cache.size(), 1);
  // The default share is a quarter of the capacity, at least one.
  ck_assert_uint_eq(auth::ReplayCache(65536).per_uid(), 16384);
  ck_assert_uint_eq(auth::ReplayCache(3).per_uid(), 1);
  // A share above the capacity is the capacity.
  ck_assert_uint_eq(auth::ReplayCache(4, 10).per_uid(), 4);
}
END_TEST

START_TEST(replay_cache_share_exempt) {
  // The plugin's DaemonUsers (flexcod signs every request it makes for
  // all users) are not held to the per-uid share, only to the capacity;
  // everyone else still is.
  auth::ReplayCache cache(8, 2, {77, 0});
  using O = auth::ReplayCache::Outcome;
  for (const char* n : {"a", "b", "c", "d", "e"}) {
    ck_assert(cache.check_and_insert(0, n, 100, 0) == O::kInserted);
  }
  ck_assert(cache.check_and_insert(0, "a", 100, 0) == O::kReplayed);
  ck_assert(cache.check_and_insert(1000, "a", 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1000, "b", 100, 0) == O::kInserted);
  ck_assert(cache.check_and_insert(1000, "c", 100, 0) == O::kUserFull);
  ck_assert(cache.check_and_insert(77, "a", 100, 0) == O::kInserted);
  // Eight live entries: the capacity bounds the exempt uids too.
  ck_assert(cache.check_and_insert(77, "b", 100, 0) == O::kFull);
  ck_assert(cache.check_and_insert(0, "f", 100, 0) == O::kFull);
  ck_assert_uint_eq(cache.size(), 8);
}
END_TEST

START_TEST(replay_cache_flood_keeps_daemon_room) {
  // Four local users sending signed requests at their full default share
  // (a quarter each) would fill the cache, and every request of the
  // DaemonUsers (flexcod) would get 503 replay_cache_full: confirm
  // deadlines pass and tentative reservations are deleted.  A quarter of
  // the capacity stays the exempt uids'.
  auth::ReplayCache cache(64, 0, {0});
  using O = auth::ReplayCache::Outcome;
  ck_assert_uint_eq(cache.reserved(), 16);
  std::size_t others = 0;
  for (uid_t u = 1000; u < 1004; ++u) {
    for (int i = 0; i < 100; ++i) {
      const O o = cache.check_and_insert(u, "n" + std::to_string(i), 100, 0);
      if (o == O::kInserted) ++others;
    }
  }
  ck_assert_uint_eq(others, 48);  // all four together: capacity - reserved
  ck_assert(cache.check_and_insert(1004, "n0", 100, 0) == O::kFull);
  for (int i = 0; i < 16; ++i) {
    ck_assert(cache.check_and_insert(0, "d" + std::to_string(i), 100, 0) == O::kInserted);
  }
  ck_assert(cache.check_and_insert(0, "d16", 100, 0) == O::kFull);  // the capacity
  // Expiry frees the users' part again, and counts it right.
  ck_assert(cache.check_and_insert(1000, "late", 300, 101) == O::kInserted);
  ck_assert_uint_eq(cache.size(), 1);
  // Without exempt uids nothing is kept back.
  ck_assert_uint_eq(auth::ReplayCache(64).reserved(), 0);
}
END_TEST

// ===========================================================================
// With a real munged

START_TEST(round_trip_identity) {
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier verifier = make_verifier();
  const std::int64_t t0 = now_s();
  const std::string header = sign_or_fail(signer, "POST", "/v1/reservations?dry=1", "{\"n\":4}");
  const std::int64_t t1 = now_s();
  ck_assert(header.compare(0, 12, "MUNGE MUNGE:") == 0);
  ck_assert_uint_le(header.size(), auth::kMaxHeaderValueLength);
  auto id = verifier.verify("POST", "/v1/reservations?dry=1", "{\"n\":4}", header);
  expect_ok(id, "verify");
  ck_assert_uint_eq(id.value().uid, geteuid());
  ck_assert_uint_eq(id.value().gid, getegid());
  ck_assert_int_ge(id.value().encode_time, t0);
  ck_assert_int_le(id.value().encode_time, t1);
  ck_assert_uint_eq(verifier.replay_cache_size(), 1);

  // Surrounding whitespace and a lower-case scheme are accepted.
  const std::string h2 = sign_or_fail(signer, "GET", "/v1/health", "");
  expect_ok(verifier.verify("GET", "/v1/health", "", " \tmunge " + h2.substr(6) + "\t "),
            "verify with OWS");
}
END_TEST

START_TEST(signed_payload_is_as_documented) {
  const auth::Signer signer = make_signer(g_munged.socket);
  const std::int64_t t0 = now_s();
  const auth::Payload a = raw_munge_decode(sign_or_fail(signer, "PUT", "/v1/x?y=z", "body"));
  const std::int64_t t1 = now_s();
  EXPECT_STR_EQ(a.audience, kAudience);
  EXPECT_STR_EQ(raw_munge_decode(sign_for_or_fail(signer, "beta", "GET", "/", "")).audience,
                "beta");
  EXPECT_STR_EQ(a.method, "PUT");
  EXPECT_STR_EQ(a.path, "/v1/x?y=z");
  EXPECT_STR_EQ(a.body_sha256, flexco::sha256_hex("body"));
  ck_assert_int_ge(a.timestamp, t0);
  ck_assert_int_le(a.timestamp, t1);
  const auth::Payload b = raw_munge_decode(sign_or_fail(signer, "PUT", "/v1/x?y=z", "body"));
  ck_assert(a.nonce != b.nonce);
  auto c = signer.sign_at(kAudience, "GET", "/", "", 1234);
  expect_ok(c, "sign_at");
  ck_assert_int_eq(raw_munge_decode(c.value()).timestamp, 1234);
}
END_TEST

namespace {
struct Tamper {
  const char* name;
  const char* sign_method;
  const char* sign_path;
  const char* sign_body;
  const char* method;
  const char* path;
  const char* body;
  const char* mentions;
};
const Tamper kTampers[] = {
    {"method", "POST", "/v1/co", "{}", "PUT", "/v1/co", "{}", "method"},
    {"method case", "POST", "/v1/co", "{}", "POSTX", "/v1/co", "{}", "method"},
    {"path", "GET", "/v1/co/17", "", "GET", "/v1/co/18", "", "path"},
    {"path prefix", "GET", "/v1/co", "", "GET", "/v1/co/", "", "path"},
    {"query value", "GET", "/v1/co?user=alice", "", "GET", "/v1/co?user=bob", "", "path"},
    {"query added", "GET", "/v1/co", "", "GET", "/v1/co?all=1", "", "path"},
    {"query dropped", "GET", "/v1/co?user=alice", "", "GET", "/v1/co", "", "path"},
    {"body", "POST", "/v1/co", "{\"nodes\":4}", "POST", "/v1/co", "{\"nodes\":40}", "body"},
    {"body emptied", "POST", "/v1/co", "{\"nodes\":4}", "POST", "/v1/co", "", "body"},
    {"body added", "DELETE", "/v1/co/1", "", "DELETE", "/v1/co/1", "x", "body"},
};
}  // namespace

START_TEST(tampered_request_mismatch) {
  const Tamper& t = kTampers[_i];
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier verifier = make_verifier();
  const std::string header = sign_or_fail(signer, t.sign_method, t.sign_path, t.sign_body);
  auto r = verifier.verify(t.method, t.path, t.body, header);
  expect_error(r, Errc::kRequestMismatch, t.name);
  ck_assert_msg(contains(r.error().message, t.mentions), "%s: '%s'", t.name,
                r.error().message.c_str());
  ck_assert_uint_eq(verifier.replay_cache_size(), 0);
}
END_TEST

START_TEST(replayed_header_rejected_by_munged) {
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier verifier = make_verifier();
  const std::string header = sign_or_fail(signer, "POST", "/v1/co", "{}");
  expect_ok(verifier.verify("POST", "/v1/co", "{}", header), "first use");
  auto again = verifier.verify("POST", "/v1/co", "{}", header);
  expect_error(again, Errc::kReplayed, "second use");
  ck_assert_int_eq(again.error().munge_error, EMUNGE_CRED_REPLAYED);
  // A second verifier on the same munged is protected by munged as well.
  const auth::Verifier other = make_verifier();
  expect_error(other.verify("POST", "/v1/co", "{}", header), Errc::kReplayed, "other verifier");
}
END_TEST

START_TEST(replayed_nonce_rejected_by_cache) {
  // Two distinct credentials (munged cannot tell) carrying the same nonce.
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier verifier = make_verifier();
  auth::Payload p = sample_payload(now_s());
  p.nonce = random_nonce();
  const std::string first = sign_payload_or_fail(signer, p);
  const std::string second = sign_payload_or_fail(signer, p);
  ck_assert(first != second);
  const std::string body = "{\"nodes\":4}";
  expect_ok(verifier.verify(p.method, p.path, body, first), "first");
  auto r = verifier.verify(p.method, p.path, body, second);
  expect_error(r, Errc::kReplayed, "same nonce");
  ck_assert_int_eq(r.error().munge_error, 0);
  ck_assert(contains(r.error().message, p.nonce));
  ck_assert_uint_eq(verifier.replay_cache_size(), 1);
}
END_TEST

START_TEST(timestamp_window_with_explicit_now) {
  const auth::Signer signer = make_signer(g_munged.socket);
  const std::int64_t max_age = 120, max_skew = 30;
  const auth::Verifier verifier = make_verifier(max_age, max_skew);
  const std::int64_t t = now_s();
  const struct {
    const char* name;
    std::int64_t now;
    bool ok;
    Errc code;
  } rows[] = {
      {"now", t, true, Errc::kInternal},
      {"oldest accepted", t + max_age, true, Errc::kInternal},
      {"one second too old", t + max_age + 1, false, Errc::kExpired},
      {"an hour too old", t + 3600, false, Errc::kExpired},
      {"furthest future accepted", t - max_skew, true, Errc::kInternal},
      {"one second too far ahead", t - max_skew - 1, false, Errc::kNotYetValid},
  };
  for (const auto& row : rows) {
    auth::Payload p = sample_payload(t);
    p.nonce = random_nonce();
    const std::string header = sign_payload_or_fail(signer, p);
    auto r = verifier.verify(p.method, p.path, "{\"nodes\":4}", header, row.now);
    if (row.ok) {
      expect_ok(r, row.name);
    } else {
      expect_error(r, row.code, row.name);
      ck_assert_int_eq(r.error().munge_error, 0);
    }
  }
  // A forged old timestamp against the real clock: no waiting needed.
  auto old = signer.sign_at(kAudience, "GET", "/v1/co", "", now_s() - 3600);
  expect_ok(old, "sign_at old");
  expect_error(verifier.verify("GET", "/v1/co", "", old.value()), Errc::kExpired, "forged old");
  auto future = signer.sign_at(kAudience, "GET", "/v1/co", "", now_s() + 3600);
  expect_ok(future, "sign_at future");
  expect_error(verifier.verify("GET", "/v1/co", "", future.value()), Errc::kNotYetValid,
               "forged future");
}
END_TEST

START_TEST(munge_ttl_expiry) {
  // MUNGE's own TTL (1 s): await the condition "credential expired" by the
  // clock, at most ~3 s, then decode once.
  const auth::Signer signer = make_signer(g_munged.socket, 1);
  const auth::Verifier verifier = make_verifier();
  const std::string header = sign_or_fail(signer, "GET", "/v1/co", "");
  const std::int64_t signed_by = now_s();
  while (now_s() < signed_by + 2) poll(nullptr, 0, 50);
  auto r = verifier.verify("GET", "/v1/co", "", header);
  expect_error(r, Errc::kExpired, "MUNGE TTL 1 s");
  ck_assert_int_eq(r.error().munge_error, EMUNGE_CRED_EXPIRED);
  ck_assert(contains(r.error().message, "munged"));
}
END_TEST

START_TEST(foreign_key_rejected) {
  const auth::Signer foreign = make_signer(g_foreign.socket);
  const auth::Verifier verifier = make_verifier();
  const std::string header = sign_or_fail(foreign, "GET", "/v1/co", "");
  auto r = verifier.verify("GET", "/v1/co", "", header);
  expect_error(r, Errc::kMungeRejected, "credential of another key");
  ck_assert_int_ne(r.error().munge_error, 0);
  ck_assert(contains(r.error().message, "munge_rejected: munged: "));
  // The same request signed with the right key passes.
  const auth::Signer own = make_signer(g_munged.socket);
  expect_ok(verifier.verify("GET", "/v1/co", "", sign_or_fail(own, "GET", "/v1/co", "")),
            "own key");
}
END_TEST

START_TEST(munged_unreachable) {
  const std::string nowhere = g_munged.dir + "/no-such.sock";
  const auth::Signer own = make_signer(g_munged.socket);
  const std::string header = sign_or_fail(own, "GET", "/v1/co", "");
  const auth::Verifier verifier = make_verifier(300, 60, 16, nowhere);
  auto r = verifier.verify("GET", "/v1/co", "", header);
  expect_error(r, Errc::kMungeUnavailable, "verify without munged");
  ck_assert_int_eq(r.error().munge_error, EMUNGE_SOCKET);
  const auth::Signer lost = make_signer(nowhere);
  auto s = lost.sign(kAudience, "GET", "/v1/co", "");
  expect_error(s, Errc::kMungeUnavailable, "sign without munged");
}
END_TEST

namespace {
struct BadHeader {
  const char* name;
  std::string value;
  Errc code;
};
const std::vector<BadHeader>& bad_headers() {
  static const std::vector<BadHeader> table = {
      {"empty", "", Errc::kMissingCredential},
      {"blank", " \t  ", Errc::kMissingCredential},
      {"garbage", "garbage", Errc::kMalformedCredential},
      {"binary", std::string("\x01\x02\xff\0", 4), Errc::kMalformedCredential},
      {"basic scheme", "Basic dXNlcjpwYXNz", Errc::kMalformedCredential},
      {"bearer with munge cred", "Bearer MUNGE:AAAA:", Errc::kMalformedCredential},
      {"scheme only", "MUNGE", Errc::kMalformedCredential},
      {"scheme and space", "MUNGE ", Errc::kMalformedCredential},
      {"scheme glued", "MUNGEMUNGE:AAAA:", Errc::kMalformedCredential},
      {"tab after scheme", "MUNGE\tMUNGE:AAAA:", Errc::kMalformedCredential},
      {"missing cred prefix", "MUNGE AAAA", Errc::kMalformedCredential},
      {"empty cred body", "MUNGE MUNGE::", Errc::kMalformedCredential},
      {"prefix only", "MUNGE MUNGE:", Errc::kMalformedCredential},
      {"no final colon", "MUNGE MUNGE:AAAA", Errc::kMalformedCredential},
      {"non-base64", "MUNGE MUNGE:AA$A:", Errc::kMalformedCredential},
      {"inner space", "MUNGE MUNGE:AA AA:", Errc::kMalformedCredential},
      {"two credentials", "MUNGE MUNGE:AAAA:, MUNGE:BBBB:", Errc::kMalformedCredential},
      {"trailing junk", "MUNGE MUNGE:AAAA:x", Errc::kMalformedCredential},
      {"NUL inside", std::string("MUNGE MUNGE:AA\0A:", 17), Errc::kMalformedCredential},
      {"over-long", "MUNGE MUNGE:" + std::string(auth::kMaxHeaderValueLength, 'A') + ":",
       Errc::kMalformedCredential},
      {"well-formed, not a credential", "MUNGE MUNGE:AAAA:", Errc::kMungeRejected},
      {"well-formed, random base64", "munge MUNGE:" + std::string(200, 'Q') + "==:",
       Errc::kMungeRejected},
  };
  return table;
}
}  // namespace

START_TEST(bad_headers_rejected) {
  const BadHeader& row = bad_headers()[static_cast<std::size_t>(_i)];
  const auth::Verifier verifier = make_verifier();
  auto r = verifier.verify("GET", "/v1/co", "", row.value);
  expect_error(r, row.code, row.name);
}
END_TEST

START_TEST(foreign_payload_rejected) {
  const auth::Verifier verifier = make_verifier();
  const char text[] = "hello, not a flexco payload";
  auto r = verifier.verify("GET", "/v1/co", "", raw_munge_encode(text, sizeof(text) - 1));
  expect_error(r, Errc::kMalformedPayload, "foreign payload");
  r = verifier.verify("GET", "/v1/co", "", raw_munge_encode(nullptr, 0));
  expect_error(r, Errc::kMalformedPayload, "empty payload");
  const std::string v4 = payload_text("flexco-auth-v4", kAudience, "GET", "/v1/co", kEmptyDigest,
                                      std::to_string(now_s()), random_nonce()) + "-\n";
  r = verifier.verify("GET", "/v1/co", "",
                      raw_munge_encode(v4.data(), static_cast<int>(v4.size())));
  expect_error(r, Errc::kMalformedPayload, "version 4 payload without its offer line");
  ck_assert_uint_eq(verifier.replay_cache_size(), 0);
}
END_TEST

START_TEST(wrong_audience_refused) {
  // Issue 14 §1.2: a request signed for cluster alpha, delivered to cluster
  // beta, is refused there (and so is one signed for flexcod).
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier beta = make_verifier(300, 60, 1024, g_munged.socket, "beta");
  const std::string body = "{\"nodes\":4}";
  const std::string for_alpha =
      sign_for_or_fail(signer, "alpha", "DELETE", "/v1/reservations/5", "");
  auto r = beta.verify("DELETE", "/v1/reservations/5", "", for_alpha);
  expect_error(r, Errc::kWrongAudience, "signed for alpha, sent to beta");
  ck_assert_int_eq(r.error().status, 401);
  ck_assert_int_eq(r.error().munge_error, 0);
  ck_assert_msg(contains(r.error().message, "'alpha'") && contains(r.error().message, "'beta'"),
                "%s", r.error().message.c_str());
  ck_assert_uint_eq(beta.replay_cache_size(), 0);  // nothing recorded

  // Compared byte for byte: no case folding, no prefix match.
  for (const char* other : {"Beta", "BETA", "bet", "beta2", "flexcod"}) {
    const std::string h = sign_for_or_fail(signer, other, "POST", "/v1/reservations", body);
    expect_error(beta.verify("POST", "/v1/reservations", body, h), Errc::kWrongAudience, other);
  }
  // The audience is checked before the request fields: a credential for
  // another cluster is wrong_audience even when the request differs too.
  const std::string h = sign_for_or_fail(signer, "alpha", "GET", "/v1/stats", "");
  expect_error(beta.verify("POST", "/v1/reservations", body, h), Errc::kWrongAudience,
               "other audience and other request");

  // Signed for beta: accepted by beta.
  const std::string for_beta = sign_for_or_fail(signer, "beta", "POST", "/v1/reservations", body);
  expect_ok(beta.verify("POST", "/v1/reservations", body, for_beta), "signed for beta");
  ck_assert_uint_eq(beta.replay_cache_size(), 1);

  // flexcod's audience.
  const auth::Verifier flexcod =
      make_verifier(300, 60, 1024, g_munged.socket, std::string(auth::kFlexcodAudience));
  expect_error(flexcod.verify("GET", "/v1/co", "",
                              sign_for_or_fail(signer, "alpha", "GET", "/v1/co", "")),
               Errc::kWrongAudience, "cluster credential at flexcod");
  expect_ok(flexcod.verify("GET", "/v1/co", "",
                           sign_for_or_fail(signer, "flexcod", "GET", "/v1/co", "")),
            "flexcod credential at flexcod");
}
END_TEST

START_TEST(version_1_refused) {
  // A genuine flexco-auth-v1 credential for exactly this request (what an
  // old signer sends): refused, since it names no audience.
  const auth::Verifier verifier = make_verifier();
  const std::string v1 = "flexco-auth-v1\nGET\n/v1/co\n" + kEmptyDigest + "\n" +
                         std::to_string(now_s()) + "\n" + random_nonce() + "\n";
  auto r = verifier.verify("GET", "/v1/co", "",
                           raw_munge_encode(v1.data(), static_cast<int>(v1.size())));
  expect_error(r, Errc::kMalformedPayload, "version 1 payload");
  ck_assert_msg(contains(r.error().message, "no longer accepted"), "%s",
                r.error().message.c_str());
  ck_assert_uint_eq(verifier.replay_cache_size(), 0);
}
END_TEST

START_TEST(idempotency_key_signed) {
  // Issue 14 §1.8: the Idempotency-Key header must be the signed one.
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier verifier = make_verifier();
  const std::string body = "{\"nodes\":4}";
  const std::string path = "/v1/reservations";
  auto sign_key = [&](std::optional<std::string_view> key) {
    auto h = signer.sign(kAudience, "POST", path, body, key);
    ck_assert_msg(h.ok(), "sign: %s", h.ok() ? "" : h.error().message.c_str());
    return h.value();
  };
  const std::string with_k1 = sign_key("k-1");
  EXPECT_STR_EQ(*raw_munge_decode(with_k1).idempotency_key, "k-1");
  ck_assert(!raw_munge_decode(sign_key(std::nullopt)).idempotency_key.has_value());

  auto r = verifier.verify("POST", path, body, sign_key("k-1"), std::string_view("k-2"));
  expect_error(r, Errc::kIdempotencyKeyMismatch, "key changed after signing");
  ck_assert(contains(r.error().message, "differs"));
  r = verifier.verify("POST", path, body, sign_key(std::nullopt), std::string_view("k-1"));
  expect_error(r, Errc::kIdempotencyKeyMismatch, "key added after signing");
  ck_assert(contains(r.error().message, "none was signed"));
  r = verifier.verify("POST", path, body, sign_key("k-1"), std::nullopt);
  expect_error(r, Errc::kIdempotencyKeyMismatch, "signed key removed");
  ck_assert(contains(r.error().message, "no Idempotency-Key"));
  r = verifier.verify("POST", path, body, sign_key("k-1"), std::string_view("K-1"));
  expect_error(r, Errc::kIdempotencyKeyMismatch, "compared byte for byte");
  ck_assert_uint_eq(verifier.replay_cache_size(), 0);

  // The signed key: accepted, and the identity carries the body digest.
  auto id = verifier.verify("POST", path, body, sign_key("k-1"), std::string_view("k-1"));
  expect_ok(id, "the signed key");
  EXPECT_STR_EQ(id.value().body_sha256, flexco::sha256_hex(body));
  expect_ok(verifier.verify("POST", path, body, sign_key(std::nullopt), std::nullopt),
            "no key, none signed");

  // A header no signer could sign is 400 before any IPC (the credential
  // is not used up).
  const std::string h = sign_key("k-1");
  for (const std::string& bad : {std::string(), std::string(129, 'k'), std::string("k 1"),
                                 std::string("-"), std::string("caf\xc3\xa9")}) {
    expect_error(verifier.verify("POST", path, body, h, std::string_view(bad)),
                 Errc::kInvalidRequest, "unsignable key header");
  }
  expect_ok(verifier.verify("POST", path, body, h, std::string_view("k-1")), "untouched header");

  expect_error(signer.sign(kAudience, "POST", path, body, std::string(129, 'k')),
               Errc::kInvalidArgument, "sign a 129-byte key");
  expect_error(signer.sign(kAudience, "POST", path, body, std::string_view("a b")),
               Errc::kInvalidArgument, "sign a key with a space");
}
END_TEST

START_TEST(version_2_without_key_only) {
  // flexco-auth-v2 stays accepted for requests without an Idempotency-Key
  // (doc/auth.md, "Versioning"); with one it is refused: v2 cannot sign it.
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier verifier = make_verifier();
  auth::Payload p = sample_payload(now_s());
  p.version = 2;
  p.nonce = random_nonce();
  const std::string body = "{\"nodes\":4}";
  expect_ok(verifier.verify(p.method, p.path, body, sign_payload_or_fail(signer, p)),
            "v2 without a key");
  p.nonce = random_nonce();
  auto r = verifier.verify(p.method, p.path, body, sign_payload_or_fail(signer, p),
                           std::string_view("k-1"));
  expect_error(r, Errc::kIdempotencyKeyMismatch, "v2 with a key");
  ck_assert(contains(r.error().message, "flexco-auth-v3"));
  ck_assert_uint_eq(verifier.replay_cache_size(), 1);
}
END_TEST

START_TEST(invalid_request_and_sign_input) {
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier verifier = make_verifier();
  const std::string header = sign_or_fail(signer, "GET", "/v1/co", "");
  expect_error(verifier.verify("get", "/v1/co", "", header), Errc::kInvalidRequest,
               "lower-case method");
  expect_error(verifier.verify("GET", "v1/co", "", header), Errc::kInvalidRequest,
               "relative path");
  expect_error(verifier.verify("GET", "/" + std::string(auth::kMaxPathLength, 'x'), "", header),
               Errc::kInvalidRequest, "path too long");
  // The header was never sent to munged, so it still verifies.
  expect_ok(verifier.verify("GET", "/v1/co", "", header), "untouched header");

  expect_error(signer.sign("", "GET", "/v1/co", ""), Errc::kInvalidArgument, "sign no audience");
  expect_error(signer.sign("alpha\n", "GET", "/v1/co", ""), Errc::kInvalidArgument,
               "sign newline in audience");
  expect_error(signer.sign(kAudience, "", "/v1/co", ""), Errc::kInvalidArgument, "sign empty method");
  expect_error(signer.sign(kAudience, "GET", "", ""), Errc::kInvalidArgument, "sign empty path");
  expect_error(signer.sign(kAudience, "GET", "/a b", ""), Errc::kInvalidArgument, "sign space in path");
  expect_error(signer.sign_at(kAudience, "GET", "/", "", -1), Errc::kInvalidArgument, "sign_at -1");
  auth::Payload p = sample_payload(now_s());
  p.nonce = "short";
  expect_error(signer.sign_payload(p), Errc::kInvalidArgument, "sign_payload bad nonce");
}
END_TEST

START_TEST(longest_request_fits) {
  const auth::Signer signer = make_signer(g_munged.socket);
  const std::string method(auth::kMaxMethodLength, 'X');
  const std::string path = "/" + std::string(auth::kMaxPathLength - 1, '%');
  const std::string body(1 << 20, 'b');
  const std::string audience(auth::kMaxAudienceLength, 'a');
  const auth::Verifier longest = make_verifier(300, 60, 1024, g_munged.socket, audience);
  const std::string key(auth::kMaxIdempotencyKeyLength, 'k');
  auto signed_ = signer.sign(audience, method, path, body, key);
  expect_ok(signed_, "sign the longest request");
  const std::string header = signed_.value();
  // The v3 payload (with a 128-byte key) still fits the header limit.
  ck_assert_uint_le(header.size(), auth::kMaxHeaderValueLength);
  expect_ok(longest.verify(method, path, body, header, key), "longest request");
  expect_error(signer.sign(kAudience, method, path + "x", body), Errc::kInvalidArgument, "path + 1");
  expect_error(signer.sign(audience + "a", method, path, body), Errc::kInvalidArgument,
               "audience + 1");
}
END_TEST


// ---------------------------------------------------------------------------
// Request sessions (core/session.hpp)

START_TEST(session_header_parse_and_format) {
  auth::SessionAuth a;
  a.audience = "alpha";
  a.sid = std::string(32, 'a');
  a.counter = 7;
  a.timestamp = 1700000000;
  a.mac = std::string(64, '0');
  auto h = auth::format_session_authorization(a);
  expect_ok(h, "format");
  ck_assert(h.value() == "FlexCo-Session alpha " + a.sid + " 7 1700000000 " + a.mac);
  ck_assert(auth::is_session_authorization(h.value()));
  ck_assert(!auth::is_session_authorization("MUNGE MUNGE:abc:"));
  auto back = auth::parse_session_authorization("  flexco-session" + h.value().substr(14) + "\t");
  expect_ok(back, "parse (scheme in any case, blanks around)");
  ck_assert(back.value().sid == a.sid && back.value().counter == 7 &&
            back.value().timestamp == 1700000000 && back.value().mac == a.mac);
  const std::string base = "FlexCo-Session alpha " + a.sid + " ";
  for (const std::string& bad :
       {base + "0 1700000000 " + a.mac, base + "07 1700000000 " + a.mac,
        base + "9223372036854775808 1700000000 " + a.mac, base + "1 -1 " + a.mac,
        base + "1 1700000000 " + a.mac.substr(1), base + "1  1700000000 " + a.mac,
        base + "1 1700000000 " + std::string(64, 'A'), base + "1 1700000000 " + a.mac + " x",
        "FlexCo-Session al/pha " + a.sid + " 1 1 " + a.mac,
        "FlexCo-Session alpha " + std::string(31, 'a') + " 1 1 " + a.mac,
        std::string("FlexCo-Session ")}) {
    expect_error(auth::parse_session_authorization(bad), Errc::kMalformedCredential, bad.c_str());
  }
  expect_error(auth::parse_session_authorization(" "), Errc::kMissingCredential, "blank");
  // the grant
  auth::SessionGrant g{std::string(32, 'b'), std::string(64, 'c'), 300};
  auto gt = auth::format_session_grant(g);
  expect_ok(gt, "grant");
  auto gb = auth::parse_session_grant(gt.value());
  expect_ok(gb, "grant back");
  ck_assert(gb.value().sid == g.sid && gb.value().server_public == g.server_public &&
            gb.value().lifetime == 300);
  for (const std::string& bad : {std::string(32, 'b') + " " + std::string(64, 'c') + " 0",
                                 std::string(32, 'b') + " " + std::string(64, 'c'),
                                 std::string(32, 'b') + " " + std::string(63, 'c') + " 1",
                                 std::string(32, 'b') + " " + std::string(64, 'c') + " 86401"}) {
    expect_error(auth::parse_session_grant(bad), Errc::kMalformedCredential, bad.c_str());
  }
}
END_TEST

START_TEST(session_key_agreement) {
  // Both sides derive the same key from each other's public halves; a
  // third party's key pair gives another one.
  auto client = auth::make_key_pair();
  auto server = auth::make_key_pair();
  auto other = auth::make_key_pair();
  expect_ok(client, "client pair");
  expect_ok(server, "server pair");
  const std::string sid(32, 'd');
  const auto& A = client.value().public_hex;
  const auto& B = server.value().public_hex;
  auto kc = auth::derive_session_key(client.value().secret, B, "alpha", sid, A, B);
  auto ks = auth::derive_session_key(server.value().secret, A, "alpha", sid, A, B);
  auto ko = auth::derive_session_key(other.value().secret, A, "alpha", sid, A, B);
  auto kb = auth::derive_session_key(server.value().secret, A, "beta", sid, A, B);
  expect_ok(kc, "client key");
  ck_assert(kc.value() == ks.value());
  ck_assert(kc.value() != ko.value());
  ck_assert(kc.value() != kb.value());  // the audience is bound into the key
  // the all-zero point (low order) is refused
  expect_error(auth::derive_session_key(server.value().secret, std::string(64, '0'), "alpha", sid,
                                        A, B),
               Errc::kInvalidArgument, "zero point");
  auth::SessionKey k{};
  auto t = auth::session_mac_text("alpha", "GET", "/v1/x", flexco::sha256_hex(""), 1, sid, 1,
                                  std::nullopt);
  expect_ok(t, "mac text");
  ck_assert(t.value() == "flexco-session-v1\nalpha\nGET\n/v1/x\n" + flexco::sha256_hex("") +
                            "\n1\n" + sid + "\n1\n-\n");
  ck_assert_uint_eq(auth::session_mac(k, t.value()).size(), 64);
  ck_assert(auth::session_mac(k, t.value()) != auth::session_mac(kc.value(), t.value()));
}
END_TEST

namespace {
// A client's session header for one request under (sid, key).
std::string session_header(const auth::SessionKey& key, const std::string& sid,
                           const std::string& audience, const std::string& method,
                           const std::string& path, const std::string& body,
                           std::uint64_t counter, std::int64_t t,
                           std::optional<std::string> idem = std::nullopt) {
  auto text = auth::session_mac_text(audience, method, path, flexco::sha256_hex(body), t, sid,
                                     counter, idem);
  ck_assert(text.ok());
  auth::SessionAuth a{audience, sid, counter, t, auth::session_mac(key, text.value())};
  return auth::format_session_authorization(a).value();
}

auth::Verifier session_verifier(const std::string& audience = kAudience,
                                std::int64_t lifetime = 300) {
  auth::VerifierConfig config;
  config.audience = audience;
  config.socket_path = g_munged.socket;
  config.session_lifetime = lifetime;
  config.session_capacity = 8;
  config.session_per_uid = 2;
  auto v = auth::Verifier::create(config);
  ck_assert(v.ok());
  return std::move(v).value();
}
}  // namespace

START_TEST(session_established_by_munge) {
  // A real flexco-auth-v4 request through the private munged: granted a
  // session whose uid is MUNGE's; the later requests cost no MUNGE and
  // each refusal is the exact 401 the scheme defines.
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier v = session_verifier();
  const std::int64_t now = now_s();
  auto offer = auth::make_key_pair();
  expect_ok(offer, "offer");
  auto first = signer.sign_offer(kAudience, "POST", "/v1/probe", "{}", std::nullopt,
                                 offer.value().public_hex);
  expect_ok(first, "sign_offer");
  auto id = v.verify("POST", "/v1/probe", "{}", first.value(), std::nullopt, now);
  expect_ok(id, "the establishing request");
  ck_assert_int_eq(id.value().uid, geteuid());
  ck_assert(!id.value().by_session);
  ck_assert_uint_eq(v.session_count(), 1);
  auto grant = auth::parse_session_grant(id.value().session_grant);
  expect_ok(grant, "the grant");
  ck_assert_int_eq(grant.value().lifetime, 300);
  auto key = auth::derive_session_key(offer.value().secret, grant.value().server_public,
                                      kAudience, grant.value().sid, offer.value().public_hex,
                                      grant.value().server_public);
  expect_ok(key, "client key");
  const std::string& sid = grant.value().sid;
  const auth::SessionKey& K = key.value();

  // 1. accepted, uid the one MUNGE vouched for, Idempotency-Key bound
  auto ok1 = v.verify("POST", "/v1/reservations", "{\"a\":1}",
                      session_header(K, sid, kAudience, "POST", "/v1/reservations", "{\"a\":1}",
                                     1, now, std::string("key-1")),
                      std::string_view("key-1"), now);
  expect_ok(ok1, "session request 1");
  ck_assert(ok1.value().by_session && ok1.value().uid == geteuid() &&
            ok1.value().body_sha256 == flexco::sha256_hex("{\"a\":1}"));
  // 2. a wrong MAC: another body, another key, another Idempotency-Key
  expect_error(v.verify("POST", "/v1/reservations", "{\"a\":2}",
                        session_header(K, sid, kAudience, "POST", "/v1/reservations", "{\"a\":1}",
                                       2, now),
                        std::nullopt, now),
               Errc::kBadMac, "MAC over another body");
  auth::SessionKey wrong = K;
  wrong[0] ^= 1;
  expect_error(v.verify("GET", "/v1/profile", "",
                        session_header(wrong, sid, kAudience, "GET", "/v1/profile", "", 2, now),
                        std::nullopt, now),
               Errc::kBadMac, "MAC under another key");
  expect_error(v.verify("POST", "/v1/reservations", "{}",
                        session_header(K, sid, kAudience, "POST", "/v1/reservations", "{}", 2, now,
                                       std::string("key-2")),
                        std::string_view("key-3"), now),
               Errc::kBadMac, "another Idempotency-Key");
  // 3. a replayed counter, and out-of-order ones within the window
  const std::string h5 = session_header(K, sid, kAudience, "GET", "/v1/profile", "", 5, now);
  expect_ok(v.verify("GET", "/v1/profile", "", h5, std::nullopt, now), "counter 5");
  expect_error(v.verify("GET", "/v1/profile", "", h5, std::nullopt, now), Errc::kReplayed,
               "counter 5 again");
  expect_ok(v.verify("GET", "/v1/profile", "",
                     session_header(K, sid, kAudience, "GET", "/v1/profile", "", 3, now),
                     std::nullopt, now),
            "counter 3 after 5 (within the window)");
  expect_error(v.verify("GET", "/v1/profile", "",
                        session_header(K, sid, kAudience, "GET", "/v1/profile", "", 1, now),
                        std::nullopt, now),
               Errc::kReplayed, "counter 1 again, below 5");
  expect_ok(v.verify("GET", "/v1/profile", "",
                     session_header(K, sid, kAudience, "GET", "/v1/profile", "", 200, now),
                     std::nullopt, now),
            "counter 200");
  expect_error(v.verify("GET", "/v1/profile", "",
                        session_header(K, sid, kAudience, "GET", "/v1/profile", "", 100, now),
                        std::nullopt, now),
               Errc::kReplayed, "counter 100: below the window of 200");
  // 4. another audience: the header names it (wrong_audience); a server
  // that did not make the session does not know it (unknown_session)
  expect_error(v.verify("GET", "/v1/profile", "",
                        session_header(K, sid, "beta", "GET", "/v1/profile", "", 201, now),
                        std::nullopt, now),
               Errc::kWrongAudience, "session sent for beta to alpha");
  const auth::Verifier beta = session_verifier("beta");
  expect_error(beta.verify("GET", "/v1/profile", "",
                           session_header(K, sid, "beta", "GET", "/v1/profile", "", 202, now),
                           std::nullopt, now),
               Errc::kUnknownSession, "alpha's session at beta");
  // 5. the time window still applies
  expect_error(v.verify("GET", "/v1/profile", "",
                        session_header(K, sid, kAudience, "GET", "/v1/profile", "", 203, now - 301),
                        std::nullopt, now),
               Errc::kExpired, "an old time");
  // 6. an expired session: gone after its lifetime, and then unknown
  const std::string late =
      session_header(K, sid, kAudience, "GET", "/v1/profile", "", 204, now + 300);
  expect_error(v.verify("GET", "/v1/profile", "", late, std::nullopt, now + 300),
               Errc::kSessionExpired, "at its end");
  expect_error(v.verify("GET", "/v1/profile", "", late, std::nullopt, now + 300),
               Errc::kUnknownSession, "after its end");
  ck_assert_uint_eq(v.session_count(), 0);
  // 7. a server with sessions off serves the v4 request and grants none
  const auth::Verifier off = make_verifier();
  auto again = signer.sign_offer(kAudience, "GET", "/v1/profile", "", std::nullopt,
                                 offer.value().public_hex);
  auto plain = off.verify("GET", "/v1/profile", "", again.value(), std::nullopt, now);
  expect_ok(plain, "v4 at a server without sessions");
  ck_assert(plain.value().session_grant.empty());
}
END_TEST

START_TEST(session_table_bounded) {
  // 8 sessions at most, 2 per uid: a third of one uid replaces its
  // oldest; a full table grants none until one expires.
  const auth::Verifier v = session_verifier();
  const std::int64_t now = 1700000000;
  const std::string pub = auth::make_key_pair().value().public_hex;
  std::vector<std::string> sids;
  for (uid_t u = 1; u <= 4; ++u)
    for (int k = 0; k < 2; ++k) {
      auto g = v.open_session(u, u, pub, now + k);
      expect_ok(g, "open");
      sids.push_back(auth::parse_session_grant(g.value()).value().sid);
    }
  ck_assert_uint_eq(v.session_count(), 8);
  expect_error(v.open_session(9, 9, pub, now + 2), Errc::kReplayCacheFull, "table full");
  expect_ok(v.open_session(1, 1, pub, now + 2), "uid 1 again: its oldest goes");
  ck_assert_uint_eq(v.session_count(), 8);
  auto h = session_header(auth::SessionKey{}, sids[0], kAudience, "GET", "/", "", 1, now + 2);
  expect_error(v.verify("GET", "/", "", h, std::nullopt, now + 2), Errc::kUnknownSession,
               "the replaced session");
  expect_ok(v.open_session(9, 9, pub, now + 300), "after the first ones expired");
  expect_error(v.open_session(9, 9, "zz", now), Errc::kInvalidArgument, "bad offer");
}
END_TEST

START_TEST(session_client_round_trip) {
  // ClientSession against a Verifier: offer, grant, MAC'd requests with
  // rising counters; a drop brings back MUNGE and a new offer.
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier v = session_verifier();
  auth::ClientSession cs;
  const std::int64_t now = now_s();
  auto p1 = cs.next(kAudience, "GET", "/v1/profile", "", std::nullopt, now);
  ck_assert(p1.header.empty() && !p1.offer.empty());
  auto p2 = cs.next(kAudience, "GET", "/v1/profile", "", std::nullopt, now);
  ck_assert(p2.header.empty() && p2.offer.empty());  // one offer out at a time
  auto h = signer.sign_offer(kAudience, "GET", "/v1/profile", "", std::nullopt, p1.offer);
  auto id = v.verify("GET", "/v1/profile", "", h.value(), std::nullopt, now);
  expect_ok(id, "offer");
  cs.answered(p1, id.value().session_grant, kAudience, now);
  ck_assert(cs.active(now));
  for (int i = 0; i < 5; ++i) {
    auto p = cs.next(kAudience, "POST", "/v1/probe", "{}", std::string("k"), now);
    ck_assert(!p.header.empty());
    expect_ok(v.verify("POST", "/v1/probe", "{}", p.header, std::string_view("k"), now),
              "client session request");
  }
  auto p = cs.next(kAudience, "GET", "/v1/profile", "", std::nullopt, now + 296);
  ck_assert(p.header.empty());  // within 5 s of its end: MUNGE again
  cs.drop(p);
  ck_assert(!cs.active(now));
}
END_TEST


namespace {
// Answers `answers` in turn, one per connection, and keeps each request's
// Authorization header (a server older than flexco-auth-v4 stands in).
struct ScriptedServer {
  int fd = -1, port = 0;
  std::vector<std::string> answers, auth;
  std::thread th;
  explicit ScriptedServer(std::vector<std::string> a) : answers(std::move(a)) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    socklen_t len = sizeof sa;
    getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
    ck_assert(listen(fd, 8) == 0);
    th = std::thread([this] {
      for (const std::string& answer : answers) {
        const int c = accept(fd, nullptr, nullptr);
        if (c < 0) return;
        std::string in;
        char buf[8192];
        while (in.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = read(c, buf, sizeof buf);
          if (n <= 0) break;
          in.append(buf, static_cast<std::size_t>(n));
        }
        const std::size_t k = in.find("Authorization: ");
        auth.push_back(k == std::string::npos
                           ? std::string()
                           : in.substr(k + 15, in.find("\r\n", k) - k - 15));
        const ssize_t w = write(c, answer.data(), answer.size());
        (void)w;
        close(c);
      }
    });
  }
  void join() {
    if (th.joinable()) th.join();
  }
  ~ScriptedServer() {
    join();
    close(fd);
  }
};

std::string http_answer(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}
}  // namespace

START_TEST(session_client_falls_back_for_a_server_without_v4) {
  // A client offering sessions meets a server that refuses the offering
  // payload (401 malformed_payload, as one older than flexco-auth-v4
  // does): the request goes again as flexco-auth-v3, and the next one
  // offers nothing either.
  const std::string refuse = http_answer(
      401, "{\"error\":{\"code\":\"malformed_payload\",\"message\":\"line 1 is not v3\"}}");
  ScriptedServer srv({refuse, http_answer(200, "{}"), http_answer(200, "{}")});
  flexco::http::ClientConfig cfg;
  cfg.base_url = "http://127.0.0.1:" + std::to_string(srv.port);
  cfg.audience = kAudience;
  cfg.session = true;
  auto c = flexco::http::Client::create(cfg, make_signer(g_munged.socket));
  ck_assert(c.ok());
  auto r1 = c.value().request("GET", "/v1/profile");
  ck_assert_msg(r1.ok() && r1.value().status == 200, "%s",
                r1.ok() ? std::to_string(r1.value().status).c_str() : r1.error().message.c_str());
  auto r2 = c.value().request("GET", "/v1/profile");
  ck_assert(r2.ok() && r2.value().status == 200);
  srv.join();
  ck_assert_uint_eq(srv.auth.size(), 3);
  // What each carried: at a verifier that grants sessions a v4 offer is
  // granted one, a v3 request none.
  const auth::Verifier v = session_verifier();
  std::vector<bool> offered;
  for (const std::string& h : srv.auth) {
    auto id = v.verify("GET", "/v1/profile", "", h, std::nullopt, now_s());
    expect_ok(id, "a recorded request");
    offered.push_back(!id.value().session_grant.empty());
  }
  ck_assert_msg(offered[0] && !offered[1] && !offered[2], "offers: %d %d %d", int(offered[0]),
                int(offered[1]), int(offered[2]));
}
END_TEST

START_TEST(replay_cache_full_then_recovers) {
  // Capacity 4, max_age 60: four live nonces fill it, further requests are
  // refused (503) and the cache does not grow; once `now` passes their
  // expiry they are evicted and requests are accepted again.
  const std::size_t capacity = 4;
  const std::int64_t max_age = 60;
  const auth::Signer signer = make_signer(g_munged.socket);
  auth::VerifierConfig config;
  config.audience = kAudience;
  config.socket_path = g_munged.socket;
  config.max_age = max_age;
  config.max_skew = 0;
  config.replay_capacity = capacity;
  config.replay_per_uid = capacity;  // one uid may fill it here
  auto created = auth::Verifier::create(config);
  ck_assert(created.ok());
  const auth::Verifier verifier = std::move(created).value();
  const std::int64_t t = now_s();
  auto request_at = [&](std::int64_t ts) {
    auth::Payload p = sample_payload(ts);
    p.nonce = random_nonce();
    return verifier.verify(p.method, p.path, "{\"nodes\":4}", sign_payload_or_fail(signer, p),
                           ts);
  };
  for (std::size_t i = 0; i < capacity; ++i) expect_ok(request_at(t), "filling");
  ck_assert_uint_eq(verifier.replay_cache_size(), capacity);
  for (int k = 0; k < 3; ++k) {
    auto r = request_at(t);
    expect_error(r, Errc::kReplayCacheFull, "over capacity");
    ck_assert_int_eq(r.error().status, 503);
    ck_assert(contains(r.error().message, "replay_capacity"));
    ck_assert_uint_eq(verifier.replay_cache_size(), capacity);
  }
  // At t + max_age the entries are still live (a replay would still pass
  // the timestamp check), so nothing is evicted yet.
  expect_error(request_at(t + max_age), Errc::kReplayCacheFull, "at expiry");
  expect_ok(request_at(t + max_age + 1), "after expiry");
  ck_assert_uint_eq(verifier.replay_cache_size(), 1);
  for (std::size_t i = 1; i < capacity; ++i) expect_ok(request_at(t + max_age + 1), "refill");
  expect_error(request_at(t + max_age + 1), Errc::kReplayCacheFull, "full again");
}
END_TEST

START_TEST(replay_cache_uid_share_verify) {
  // One uid over its share gets replay_cache_full (503) naming its share;
  // requests of another uid are still verified.
  const std::int64_t max_age = 60;
  auth::VerifierConfig config;
  config.audience = kAudience;
  config.socket_path = g_munged.socket;
  config.max_age = max_age;
  config.max_skew = 0;
  config.replay_capacity = 16;
  config.replay_per_uid = 2;
  auto created = auth::Verifier::create(config);
  ck_assert(created.ok());
  const auth::Verifier verifier = std::move(created).value();
  const auth::Signer signer = make_signer(g_munged.socket);
  const std::int64_t t = now_s();
  auto request_at = [&](std::int64_t ts) {
    auth::Payload p = sample_payload(ts);
    p.nonce = random_nonce();
    return verifier.verify(p.method, p.path, "{\"nodes\":4}", sign_payload_or_fail(signer, p),
                           ts);
  };
  expect_ok(request_at(t), "first");
  expect_ok(request_at(t), "second");
  auto r = request_at(t);
  expect_error(r, Errc::kReplayCacheFull, "over the uid share");
  ck_assert_int_eq(r.error().status, 503);
  ck_assert_msg(contains(r.error().message, "replay_per_uid"), "%s", r.error().message.c_str());
  ck_assert_uint_eq(verifier.replay_cache_size(), 2);
  // Expired entries free the share.
  expect_ok(request_at(t + max_age + 1), "after expiry");
  ck_assert_uint_eq(verifier.replay_cache_size(), 1);
  // Out-of-range shares are refused.
  config.replay_per_uid = auth::kMaxReplayCapacity + 1;
  ck_assert(!auth::Verifier::create(config).ok());
}
END_TEST

START_TEST(concurrent_verify) {
  // Several threads share one Signer and one Verifier.
  const auth::Signer signer = make_signer(g_munged.socket);
  const auth::Verifier verifier = make_verifier(300, 60, 1024);
  constexpr int kThreads = 4, kEach = 8;
  std::vector<std::string> headers(kThreads * kEach);
  std::atomic<int> good{0}, replayed{0}, other{0};
  auto path_of = [](int n) { return "/v1/co/" + std::to_string(n); };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const int n = t * kEach + i;
        auto h = signer.sign(kAudience, "POST", path_of(n), "body");
        if (!h) { ++other; continue; }
        headers[static_cast<std::size_t>(n)] = h.value();
        if (verifier.verify("POST", path_of(n), "body", h.value())) ++good; else ++other;
      }
    });
  }
  for (auto& th : threads) th.join();
  threads.clear();
  ck_assert_int_eq(good.load(), kThreads * kEach);
  ck_assert_int_eq(other.load(), 0);
  // Every header replayed, from other threads than the ones that made it.
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const int n = ((t + 1) % kThreads) * kEach + i;
        auto r = verifier.verify("POST", path_of(n), "body", headers[static_cast<std::size_t>(n)]);
        if (!r && r.error().code == Errc::kReplayed) ++replayed; else ++other;
      }
    });
  }
  for (auto& th : threads) th.join();
  ck_assert_int_eq(replayed.load(), kThreads * kEach);
  ck_assert_int_eq(other.load(), 0);
  ck_assert_uint_eq(verifier.replay_cache_size(), static_cast<std::size_t>(kThreads * kEach));
}
END_TEST

// ===========================================================================

// MetricsTokenFile (capi_auth.h): owner-only regular files, one token line;
// the bearer comparison takes only that exact token.
START_TEST(metrics_token_file) {
  char dir[] = "/tmp/check_auth_token.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  const std::string good = std::string(dir) + "/good";
  auto put_file = [](const std::string& path, const std::string& text, mode_t mode) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
  };
  char tok[FLEXCO_METRICS_TOKEN_MAX + 1];
  char err[512];
  put_file(good, "  0123456789abcdef0123  \nsecond line\n", 0600);
  ck_assert_int_eq(flexco_token_file_read(good.c_str(), tok, sizeof tok, err, sizeof err), 0);
  ck_assert_str_eq(tok, "0123456789abcdef0123");
  put_file(good, "0123456789abcdef0123", 0400);  // no newline, read-only
  ck_assert_int_eq(flexco_token_file_read(good.c_str(), tok, sizeof tok, err, sizeof err), 0);
  ck_assert_str_eq(tok, "0123456789abcdef0123");

  const std::string loose = std::string(dir) + "/loose";
  for (mode_t m : {0640, 0604, 0660}) {
    put_file(loose, "0123456789abcdef0123\n", m);
    ck_assert_int_eq(flexco_token_file_read(loose.c_str(), tok, sizeof tok, err, sizeof err), -1);
    ck_assert_msg(std::strstr(err, "group or others"), "%s", err);
  }
  const std::string shortf = std::string(dir) + "/short";
  put_file(shortf, "0123456789abcde\n", 0600);  // 15 characters
  ck_assert_int_eq(flexco_token_file_read(shortf.c_str(), tok, sizeof tok, err, sizeof err), -1);
  put_file(shortf, "0123456789 abcdef\n", 0600);  // a blank inside
  ck_assert_int_eq(flexco_token_file_read(shortf.c_str(), tok, sizeof tok, err, sizeof err), -1);
  put_file(shortf, std::string(FLEXCO_METRICS_TOKEN_MAX + 1, 'x'), 0600);
  ck_assert_int_eq(flexco_token_file_read(shortf.c_str(), tok, sizeof tok, err, sizeof err), -1);
  const std::string link = std::string(dir) + "/link";
  ck_assert_int_eq(symlink(good.c_str(), link.c_str()), 0);
  ck_assert_int_eq(flexco_token_file_read(link.c_str(), tok, sizeof tok, err, sizeof err), -1);
  ck_assert_int_eq(flexco_token_file_read(dir, tok, sizeof tok, err, sizeof err), -1);
  ck_assert_int_eq(flexco_token_file_read("relative", tok, sizeof tok, err, sizeof err), -1);
  ck_assert_int_eq(flexco_token_file_read((std::string(dir) + "/none").c_str(), tok, sizeof tok, err,
                                          sizeof err), -1);
  if (geteuid() == 0) {  // owned by another uid
    put_file(shortf, "0123456789abcdef0123\n", 0600);
    ck_assert_int_eq(chown(shortf.c_str(), 65534, 65534), 0);
    ck_assert_int_eq(flexco_token_file_read(shortf.c_str(), tok, sizeof tok, err, sizeof err), -1);
    ck_assert_msg(std::strstr(err, "owned by uid 65534"), "%s", err);
  }
  for (const char* f : {"good", "loose", "short", "link"}) unlink((std::string(dir) + "/" + f).c_str());
  rmdir(dir);

  ck_assert_int_eq(flexco_bearer_matches("Bearer 0123456789abcdef0123", "0123456789abcdef0123"), 1);
  ck_assert_int_eq(flexco_bearer_matches("bearer 0123456789abcdef0123", "0123456789abcdef0123"), 1);
  ck_assert_int_eq(flexco_bearer_matches("Bearer 0123456789abcdef012", "0123456789abcdef0123"), 0);
  ck_assert_int_eq(flexco_bearer_matches("Bearer 0123456789abcdef01234", "0123456789abcdef0123"), 0);
  ck_assert_int_eq(flexco_bearer_matches("Bearer 1123456789abcdef0123", "0123456789abcdef0123"), 0);
  ck_assert_int_eq(flexco_bearer_matches("MUNGE 0123456789abcdef0123", "0123456789abcdef0123"), 0);
  ck_assert_int_eq(flexco_bearer_matches("Bearer ", ""), 0);
  ck_assert_int_eq(flexco_bearer_matches(nullptr, "0123456789abcdef0123"), 0);
  ck_assert_int_eq(flexco_is_bearer("Bearer x"), 1);
  ck_assert_int_eq(flexco_is_bearer("MUNGE x"), 0);
  ck_assert_int_eq(flexco_is_bearer(nullptr), 0);
}
END_TEST

namespace {

Suite* make_suite() {
  Suite* s = suite_create("auth");

  TCase* sha = tcase_create("sha256");
  tcase_add_loop_test(sha, sha256_standard_vectors, 0,
                      static_cast<int>(sizeof(kVectors) / sizeof(kVectors[0])));
  tcase_add_test(sha, sha256_one_million_a);
  tcase_add_test(sha, sha256_incremental_equals_one_shot);
  tcase_add_test(sha, sha256_finish_resets);
  tcase_set_timeout(sha, 30);
  suite_add_tcase(s, sha);

  TCase* format = tcase_create("format");
  tcase_add_test(format, error_codes_and_statuses);
  tcase_add_test(format, allowed_uids);
  tcase_add_test(format, payload_round_trip);
  tcase_add_test(format, payload_v3_idempotency_key);
  tcase_add_test(format, payload_limits_accepted);
  tcase_add_loop_test(format, payload_parser_rejects, 0, static_cast<int>(bad_payloads().size()));
  tcase_add_test(format, payload_encoder_rejects);
  tcase_add_test(format, header_parse_and_format);
  tcase_add_test(format, config_validation);
  tcase_add_test(format, replay_cache_bounded);
  tcase_add_test(format, replay_cache_per_uid);
  tcase_add_test(format, replay_cache_one_uid_cannot_lock_out);
  tcase_add_test(format, replay_cache_uid_share);
  tcase_add_test(format, replay_cache_share_exempt);
  tcase_add_test(format, replay_cache_flood_keeps_daemon_room);
  tcase_add_test(format, metrics_token_file);
  suite_add_tcase(s, format);

  TCase* munge = tcase_create("munge");
  tcase_add_test(munge, round_trip_identity);
  tcase_add_test(munge, signed_payload_is_as_documented);
  tcase_add_loop_test(munge, tampered_request_mismatch, 0,
                      static_cast<int>(sizeof(kTampers) / sizeof(kTampers[0])));
  tcase_add_test(munge, replayed_header_rejected_by_munged);
  tcase_add_test(munge, replayed_nonce_rejected_by_cache);
  tcase_add_test(munge, timestamp_window_with_explicit_now);
  tcase_add_test(munge, munge_ttl_expiry);
  tcase_add_test(munge, foreign_key_rejected);
  tcase_add_test(munge, munged_unreachable);
  tcase_add_loop_test(munge, bad_headers_rejected, 0, static_cast<int>(bad_headers().size()));
  tcase_add_test(munge, foreign_payload_rejected);
  tcase_add_test(munge, wrong_audience_refused);
  tcase_add_test(munge, version_1_refused);
  tcase_add_test(munge, idempotency_key_signed);
  tcase_add_test(munge, version_2_without_key_only);
  tcase_add_test(munge, invalid_request_and_sign_input);
  tcase_add_test(munge, longest_request_fits);
  tcase_add_test(munge, session_header_parse_and_format);
  tcase_add_test(munge, session_key_agreement);
  tcase_add_test(munge, session_established_by_munge);
  tcase_add_test(munge, session_table_bounded);
  tcase_add_test(munge, session_client_round_trip);
  tcase_add_test(munge, session_client_falls_back_for_a_server_without_v4);
  tcase_add_test(munge, replay_cache_full_then_recovers);
  tcase_add_test(munge, replay_cache_uid_share_verify);
  tcase_add_test(munge, concurrent_verify);
  tcase_set_timeout(munge, 30);
  suite_add_tcase(s, munge);
  return s;
}

}  // namespace

int main() {
  g_owner = getpid();
  std::atexit(stop_all);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, on_signal);

  std::string err;
  if (!start_munged(g_munged, err) || !start_munged(g_foreign, err)) {
    std::printf("Bail out! cannot start a private munged: %s\n", err.c_str());
    std::fflush(stdout);
    stop_all();
    return 1;
  }
  g_munged_pid = g_munged.pid;
  g_foreign_pid = g_foreign.pid;
  start_watchdog();

  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  stop_all();
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
