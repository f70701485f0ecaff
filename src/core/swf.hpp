// SPDX-License-Identifier: GPL-2.0-or-later
// Standard Workload Format (SWF v2.2) reader for the Parallel Workloads
// Archive's traces, plain or gzip-compressed.
//
// A Reader reads the `;` header block, then hands out one Job per call, so
// memory is bounded by the longest accepted line, never by the trace.  An
// OrderedReader on top of it yields jobs in submit-time order through a
// bounded reorder window.  The format as we read it, the unknown-value and
// error policies, and the measured disorder of the shared traces are in
// doc/swf.md.
//
// Rules of the core library: no logging, no globals, one thread at a time
// per object.  No exception leaves any function declared here: errors are
// values whose message names the line, the field and the offending text,
// e.g. "line 1234: field 4 (run time): not an integer: '12x'".  Calling
// value() on an error Result is a programming error (it throws
// std::bad_variant_access).
//
// Link with -lz (zlib); this header does not include zlib.h.

#ifndef FLEXCO_CORE_SWF_HPP
#define FLEXCO_CORE_SWF_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/result.hpp"

namespace flexco::swf {

// ---------------------------------------------------------------------------
// Limits

inline constexpr int kFieldCount = 18;

// Largest value accepted in any numeric field (2^53 - 1: exact as a double,
// and the sum of a few such times cannot overflow int64).
inline constexpr std::int64_t kMaxValue = (std::int64_t{1} << 53) - 1;

// Lines longer than Options::max_line_length bytes (not counting the line
// break) are rejected; the limit itself must lie in this range.
inline constexpr std::size_t kDefaultMaxLineLength = 4096;
inline constexpr std::size_t kMinLineLength = 128;
inline constexpr std::size_t kMaxLineLength = std::size_t{1} << 20;

// At most this many `Key: value` header lines are kept; the first one past
// it is reported and the rest are ignored.
inline constexpr std::size_t kMaxHeaderFields = 4096;

inline constexpr std::size_t kMaxDiagnostics = std::size_t{1} << 20;
inline constexpr std::size_t kMaxWindow = std::size_t{1} << 22;

// ---------------------------------------------------------------------------
// Results

enum class Errc {
  kInvalidArgument = 1,  // bad Options / OrderOptions
  kIo,                   // cannot open or read the file, corrupt or truncated gzip
  kFormat,               // a malformed job line or header value
  kOrder,                // OrderedReader: a job arrived too late for the window
  kNoMemory,             // std::bad_alloc, caught
};

// "invalid-argument", "io", "format", "order", "no-memory".
const char* errc_name(Errc code) noexcept;

struct Error {
  Errc code = Errc::kFormat;
  std::int64_t line = 0;  // 1-based source line; 0 when no line is involved
  std::string message;    // "line <n>: <what>" when line > 0
};

// A value or an Error (see core/result.hpp).
template <typename T>
using Result = BasicResult<T, Error>;

// ---------------------------------------------------------------------------
// One job line
//
// Unknown values (-1 in the file) are std::nullopt, so that no -1 can slip
// into arithmetic.  Job number and submit time must be known.  Times are
// whole seconds; submit time counts from the start of the log (the header's
// UnixStartTime).  Fields 6 and 7 are averages and may carry a fraction
// (three of the shared traces write "107.77" in field 6); every other field
// must be an integer.

enum class JobStatus : int {
  kFailed = 0,
  kCompleted = 1,
  kPartial = 2,                // a partial execution, to be continued
  kLastPartialCompleted = 3,   // last partial execution, job completed
  kLastPartialFailed = 4,      // last partial execution, job failed
  kCancelled = 5,
};

struct Job {
  std::int64_t line = 0;                         // source line number, 1-based
  std::int64_t job_number = 0;                   //  1, >= 1
  std::int64_t submit_time = 0;                  //  2, seconds, >= 0
  std::optional<std::int64_t> wait_time;         //  3, seconds, >= 0
  std::optional<std::int64_t> run_time;          //  4, seconds, >= 0
  std::optional<std::int64_t> allocated_procs;   //  5, >= 0
  std::optional<double> average_cpu_time;       //  6, seconds, >= 0
  std::optional<double> used_memory;             //  7, KB per processor, >= 0
  std::optional<std::int64_t> requested_procs;   //  8, >= 0
  std::optional<std::int64_t> requested_time;    //  9, seconds, >= 0
  std::optional<std::int64_t> requested_memory;  // 10, KB per processor, >= 0
  std::optional<JobStatus> status;               // 11, 0..5
  std::optional<std::int64_t> user_id;           // 12, >= 0
  std::optional<std::int64_t> group_id;          // 13, >= 0
  std::optional<std::int64_t> executable;        // 14, >= 0
  std::optional<std::int64_t> queue;             // 15, >= 0
  std::optional<std::int64_t> partition;         // 16, >= 0
  std::optional<std::int64_t> preceding_job;     // 17, a job number, >= 1
  std::optional<std::int64_t> think_time;        // 18, seconds, >= 0
};

// "job number", "submit time", ..., "think time" for field 1..18; "" otherwise.
const char* field_name(int field) noexcept;

// Parses one job line (no line break; surrounding whitespace and a trailing
// '\r' are allowed).  Errors are Errc::kFormat with "line <line_number>: ...".
Result<Job> parse_job(std::string_view text, std::int64_t line_number) noexcept;

// ---------------------------------------------------------------------------
// Header: the `;` comment lines before the first job

struct HeaderField {
  std::string key;    // "MaxProcs"
  std::string value;  // "338 (batch partition; 512 total)", trimmed
  std::int64_t line = 0;
};

struct Header {
  // Every `; Key: value` line of the header, in file order.  A key is a
  // letter followed by letters, digits or '_', then ':' and a blank or the
  // end of the line ("; http://..." is not a key).  Other comment lines are
  // free text and are only counted (Stats::comment_lines).
  std::vector<HeaderField> fields;

  // First field with exactly this key, or nullptr.
  const HeaderField* find(std::string_view key) const noexcept;

  // Typed values: the first blank-separated word of the first field with the
  // key ("338 (batch partition; 512 total)" gives 338, "Europe/Amsterdam  #
  // CET" gives "Europe/Amsterdam").  std::nullopt when the key is absent or
  // its value is malformed; Reader reports a malformed or repeated one as a
  // diagnostic.
  std::optional<std::int64_t> max_nodes() const noexcept;        // >= 1
  std::optional<std::int64_t> max_procs() const noexcept;        // >= 1
  std::optional<std::int64_t> unix_start_time() const noexcept;  // >= 0
  std::optional<std::string_view> time_zone_string() const noexcept;  // "US/Pacific"
};

// ---------------------------------------------------------------------------
// Reader

enum class Mode {
  kStrict,   // the first malformed line (or header value) is returned as the error
  kLenient,  // malformed lines are skipped and reported as diagnostics
};

struct Options {
  Mode mode = Mode::kStrict;
  std::size_t max_diagnostics = 100;  // kept in lenient mode; the rest are counted
  std::size_t max_line_length = kDefaultMaxLineLength;
};

struct Stats {
  std::int64_t lines = 0;            // lines read so far
  std::int64_t jobs = 0;             // jobs returned by next()
  std::int64_t comment_lines = 0;    // `;` lines, header and later
  std::int64_t blank_lines = 0;      // empty or only blanks
  std::int64_t malformed_lines = 0;  // rejected lines and header values
};

class Reader {
 public:
  // Opens a plain or gzip-compressed file and reads its header.  Fails with
  // kIo (cannot open or read), kInvalidArgument (options) or, in strict mode,
  // kFormat (a malformed MaxNodes/MaxProcs/UnixStartTime/TimeZoneString).
  static Result<Reader> open(const std::string& path, const Options& options = {}) noexcept;
  // The same over text held in memory (tests, generated workloads).
  static Result<Reader> from_string(std::string text, const Options& options = {}) noexcept;

  Reader(Reader&& other) noexcept;
  Reader& operator=(Reader&& other) noexcept;
  ~Reader();

  const Header& header() const noexcept;

  // The next job, std::nullopt at the end of the file.  An error stops the
  // reader: strict mode's first malformed line, or an I/O error in either
  // mode; every later call returns the same error.
  Result<std::optional<Job>> next() noexcept;

  // Lenient mode: the first max_diagnostics malformed lines (kFormat errors),
  // in file order, and how many more were not kept.
  const std::vector<Error>& diagnostics() const noexcept;
  std::int64_t dropped_diagnostics() const noexcept;

  const Stats& stats() const noexcept;

 private:
  struct Impl;
  explicit Reader(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// Submit-time order with bounded memory
//
// Buffers up to `window` jobs in a min-heap and always yields the earliest
// buffered one (ties keep file order), so a job can be up to window - 1
// places late in the file and still come out in order.  A job that arrives
// after a later-submitted job has already been yielded is "late"; what then
// happens is LatePolicy.  The shared traces are already sorted (doc/swf.md).

enum class LatePolicy {
  kFail,  // next() returns an Errc::kOrder error (sticky)
  kEmit,  // yield it at once, out of order, and report it
  kDrop,  // skip it and report it
};

struct OrderOptions {
  std::size_t window = 1024;      // 1 .. kMaxWindow
  LatePolicy late = LatePolicy::kFail;
  std::size_t max_reports = 100;  // late jobs kept in late_reports()
};

struct OrderStats {
  std::int64_t late_jobs = 0;        // jobs that could not be put in order
  std::int64_t max_lateness = 0;     // seconds, the largest backward jump
  std::int64_t first_late_line = 0;  // 0 if none
};

class OrderedReader {
 public:
  static Result<OrderedReader> create(Reader reader, const OrderOptions& options = {}) noexcept;

  OrderedReader(OrderedReader&& other) noexcept;
  OrderedReader& operator=(OrderedReader&& other) noexcept;
  ~OrderedReader();

  // Jobs with non-decreasing submit_time, except late jobs under kEmit.
  // Errors of the underlying reader are returned as they come.
  Result<std::optional<Job>> next() noexcept;

  // The underlying reader: header, diagnostics, stats.
  const Reader& reader() const noexcept;

  const OrderStats& stats() const noexcept;
  // Under kEmit and kDrop, the first max_reports late jobs (Errc::kOrder).
  const std::vector<Error>& late_reports() const noexcept;

 private:
  struct Impl;
  explicit OrderedReader(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flexco::swf

#endif  // FLEXCO_CORE_SWF_HPP
