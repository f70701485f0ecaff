// SPDX-License-Identifier: GPL-2.0-or-later
// SWF reader: see swf.hpp for the API and doc/swf.md for the policies.
//
// Reading is split in three layers: a byte source (zlib's gzread, which also
// passes plain files through, or a string) feeding a line splitter with a
// fixed buffer; line classification (blank, `;` comment, job); and the field
// parser.  Every error message is built here, in one style:
// "line <n>: field <i> (<name>): <reason>: '<text>'".

#include "core/swf.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>
#include <system_error>

namespace flexco::swf {

namespace {

// ---------------------------------------------------------------------------
// Text helpers

bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

bool is_letter(char c) noexcept { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view first_word(std::string_view s) noexcept {
  s = trim(s);
  std::size_t n = 0;
  while (n < s.size() && !is_blank(s[n])) ++n;
  return s.substr(0, n);
}

// Text quoted for a message: at most kQuoteMax bytes, bytes outside
// printable ASCII as \xNN, so that a binary line cannot garble the message.
constexpr std::size_t kQuoteMax = 40;

std::string quote(std::string_view s) {
  std::string out = "'";
  const std::size_t n = std::min(s.size(), kQuoteMax);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", static_cast<unsigned>(c));
      out += hex;
    }
  }
  if (s.size() > kQuoteMax) out += "...";
  out += '\'';
  return out;
}

std::string line_prefix(std::int64_t line) { return "line " + std::to_string(line) + ": "; }

Error format_error(std::int64_t line, const std::string& what) {
  return Error{Errc::kFormat, line, line_prefix(line) + what};
}

// The Error returned instead of a std::bad_alloc.  Its message fits in
// std::string's small buffer, so building it cannot throw again.
Error out_of_memory() noexcept {
  Error error;
  error.code = Errc::kNoMemory;
  error.line = 0;
  error.message = "out of memory";
  return error;
}

// ---------------------------------------------------------------------------
// Fields

enum class Kind { kInteger, kDecimal };

struct Rule {
  const char* name;
  Kind kind;
  bool unknown_ok;  // -1 allowed, meaning unknown
  std::int64_t min;
  std::int64_t max;
};

constexpr Rule kRules[kFieldCount] = {
    {"job number", Kind::kInteger, false, 1, kMaxValue},
    {"submit time", Kind::kInteger, false, 0, kMaxValue},
    {"wait time", Kind::kInteger, true, 0, kMaxValue},
    {"run time", Kind::kInteger, true, 0, kMaxValue},
    {"allocated processors", Kind::kInteger, true, 0, kMaxValue},
    {"average CPU time", Kind::kDecimal, true, 0, kMaxValue},
    {"used memory", Kind::kDecimal, true, 0, kMaxValue},
    {"requested processors", Kind::kInteger, true, 0, kMaxValue},
    {"requested time", Kind::kInteger, true, 0, kMaxValue},
    {"requested memory", Kind::kInteger, true, 0, kMaxValue},
    {"status", Kind::kInteger, true, 0, 5},
    {"user id", Kind::kInteger, true, 0, kMaxValue},
    {"group id", Kind::kInteger, true, 0, kMaxValue},
    {"executable number", Kind::kInteger, true, 0, kMaxValue},
    {"queue number", Kind::kInteger, true, 0, kMaxValue},
    {"partition number", Kind::kInteger, true, 0, kMaxValue},
    {"preceding job number", Kind::kInteger, true, 1, kMaxValue},
    {"think time", Kind::kInteger, true, 0, kMaxValue},
};

// One parsed field: unknown, or an integer / a decimal value.
struct Value {
  bool known = false;
  std::int64_t integer = 0;
  double decimal = 0.0;
};

// "-?[0-9]+" with an optional fraction ".[0-9]*", or "-?.[0-9]+".
bool decimal_syntax(std::string_view s) noexcept {
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  std::size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  return digits > 0 && i == s.size();
}

// Parses field `index` (0-based) into `out`; on failure returns false and
// sets `reason` (without the line/field prefix).
bool parse_field(int index, std::string_view text, Value& out, std::string& reason) {
  const Rule& rule = kRules[index];
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const bool minus = !text.empty() && text.front() == '-';
  const auto negative = [&] {
    return "negative: " + quote(text) +
           (rule.unknown_ok ? " (the only negative value is -1, unknown)" : "");
  };
  const auto too_large = [&] {
    return "out of range: " + quote(text) + " (at most " + std::to_string(rule.max) + ")";
  };

  if (rule.kind == Kind::kInteger) {
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::invalid_argument || ptr != last) {
      reason = "not an integer: " + quote(text);
      return false;
    }
    if (ec == std::errc::result_out_of_range) {
      reason = minus ? negative() : too_large();
      return false;
    }
    if (v == -1 && rule.unknown_ok) {
      out = Value{};
      return true;
    }
    if (v == -1) {
      reason = "must be known, not -1";
      return false;
    }
    if (v < 0) {
      reason = negative();
      return false;
    }
    if (v < rule.min) {
      reason = "must be at least " + std::to_string(rule.min) + ": " + quote(text);
      return false;
    }
    if (v > rule.max) {
      reason = too_large();
      return false;
    }
    out = Value{true, v, 0.0};
    return true;
  }

  // Kind::kDecimal (no rule of this kind forbids unknown or has min > 0).
  if (!decimal_syntax(text)) {
    reason = "not a number: " + quote(text);
    return false;
  }
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::fixed);
  if (ec == std::errc::result_out_of_range) {
    reason = minus ? negative() : too_large();
    return false;
  }
  if (ec != std::errc() || ptr != last) {
    reason = "not a number: " + quote(text);
    return false;
  }
  if (v == -1.0) {
    out = Value{};
    return true;
  }
  if (v < 0.0) {
    reason = negative();
    return false;
  }
  if (v > static_cast<double>(rule.max)) {
    reason = too_large();
    return false;
  }
  out = Value{true, 0, v + 0.0};  // + 0.0 turns "-0" into +0
  return true;
}

std::optional<std::int64_t> as_int(const Value& v) {
  return v.known ? std::optional<std::int64_t>(v.integer) : std::nullopt;
}

std::optional<double> as_double(const Value& v) {
  return v.known ? std::optional<double>(v.decimal) : std::nullopt;
}

Result<Job> parse_job_impl(std::string_view text, std::int64_t line) {
  std::string_view token[kFieldCount];
  int count = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_blank(text[i])) ++i;
    if (i == text.size()) break;
    const std::size_t start = i;
    while (i < text.size() && !is_blank(text[i])) ++i;
    if (count < kFieldCount) token[count] = text.substr(start, i - start);
    ++count;
  }
  if (count != kFieldCount) {
    return format_error(line, "expected " + std::to_string(kFieldCount) + " fields, found " +
                                  std::to_string(count));
  }

  Value v[kFieldCount];
  std::string reason;
  for (int f = 0; f < kFieldCount; ++f) {
    if (!parse_field(f, token[f], v[f], reason)) {
      return format_error(line, "field " + std::to_string(f + 1) + " (" + kRules[f].name +
                                    "): " + reason);
    }
  }

  Job job;
  job.line = line;
  job.job_number = v[0].integer;
  job.submit_time = v[1].integer;
  job.wait_time = as_int(v[2]);
  job.run_time = as_int(v[3]);
  job.allocated_procs = as_int(v[4]);
  job.average_cpu_time = as_double(v[5]);
  job.used_memory = as_double(v[6]);
  job.requested_procs = as_int(v[7]);
  job.requested_time = as_int(v[8]);
  job.requested_memory = as_int(v[9]);
  if (v[10].known) job.status = static_cast<JobStatus>(v[10].integer);
  job.user_id = as_int(v[11]);
  job.group_id = as_int(v[12]);
  job.executable = as_int(v[13]);
  job.queue = as_int(v[14]);
  job.partition = as_int(v[15]);
  job.preceding_job = as_int(v[16]);
  job.think_time = as_int(v[17]);
  return job;
}

// ---------------------------------------------------------------------------
// Header

// `body` is a comment line without its ';'.  A field is "Key: value" with
// Key = letter (letter | digit | '_')*, directly followed by ':' and then a
// blank or the end of the line.
bool split_field(std::string_view body, std::string_view& key, std::string_view& value) {
  body = trim(body);
  std::size_t n = 0;
  if (body.empty() || !is_letter(body[0])) return false;
  while (n < body.size() && (is_letter(body[n]) || is_digit(body[n]) || body[n] == '_')) ++n;
  if (n == body.size() || body[n] != ':') return false;
  if (n + 1 < body.size() && !is_blank(body[n + 1])) return false;
  key = body.substr(0, n);
  value = trim(body.substr(n + 1));
  return true;
}

struct TypedKey {
  const char* key;
  bool text;         // a word (TimeZoneString), else an integer
  std::int64_t min;  // integers only
};

constexpr TypedKey kMaxNodes{"MaxNodes", false, 1};
constexpr TypedKey kMaxProcs{"MaxProcs", false, 1};
constexpr TypedKey kUnixStartTime{"UnixStartTime", false, 0};
constexpr TypedKey kTimeZoneString{"TimeZoneString", true, 0};

const TypedKey* typed_key(std::string_view key) noexcept {
  for (const TypedKey* typed : {&kMaxNodes, &kMaxProcs, &kUnixStartTime, &kTimeZoneString}) {
    if (key == typed->key) return typed;
  }
  return nullptr;
}

// The integer at the start of a typed header value, or false with a reason.
bool header_integer(std::string_view value, std::int64_t min, std::int64_t& out,
                    std::string* reason) {
  const std::string_view word = first_word(value);
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (word.empty() || ec == std::errc::invalid_argument || ptr != word.data() + word.size()) {
    if (reason != nullptr) *reason = "not an integer: " + quote(value);
    return false;
  }
  if (ec == std::errc::result_out_of_range || v < min || v > kMaxValue) {
    if (reason != nullptr) {
      *reason = "out of range: " + quote(word) + " (" + std::to_string(min) + " to " +
                std::to_string(kMaxValue) + ")";
    }
    return false;
  }
  out = v;
  return true;
}

std::optional<std::int64_t> typed_integer(const Header& header, const TypedKey& typed) noexcept {
  const HeaderField* field = header.find(typed.key);
  std::int64_t v = 0;
  if (field == nullptr || !header_integer(field->value, typed.min, v, nullptr)) return std::nullopt;
  return v;
}

// ---------------------------------------------------------------------------
// Byte source and line splitter

struct GzCloser {
  void operator()(gzFile file) const noexcept { gzclose(file); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

constexpr std::size_t kChunk = std::size_t{128} << 10;

enum class Fetch { kLine, kEnd, kTooLong, kError };

}  // namespace

// ---------------------------------------------------------------------------
// Public free functions

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::kInvalidArgument: return "invalid-argument";
    case Errc::kIo: return "io";
    case Errc::kFormat: return "format";
    case Errc::kOrder: return "order";
    case Errc::kNoMemory: return "no-memory";
  }
  return "unknown";
}

const char* field_name(int field) noexcept {
  if (field < 1 || field > kFieldCount) return "";
  return kRules[field - 1].name;
}

Result<Job> parse_job(std::string_view text, std::int64_t line_number) noexcept {
  try {
    return parse_job_impl(text, line_number);
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  }
}

const HeaderField* Header::find(std::string_view key) const noexcept {
  for (const HeaderField& field : fields) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

std::optional<std::int64_t> Header::max_nodes() const noexcept {
  return typed_integer(*this, kMaxNodes);
}

std::optional<std::int64_t> Header::max_procs() const noexcept {
  return typed_integer(*this, kMaxProcs);
}

std::optional<std::int64_t> Header::unix_start_time() const noexcept {
  return typed_integer(*this, kUnixStartTime);
}

std::optional<std::string_view> Header::time_zone_string() const noexcept {
  const HeaderField* field = find(kTimeZoneString.key);
  if (field == nullptr) return std::nullopt;
  const std::string_view word = first_word(field->value);
  if (word.empty()) return std::nullopt;
  return word;
}

// ---------------------------------------------------------------------------
// Reader

struct Reader::Impl {
  Options options;
  std::string path;  // for messages; empty for a string source

  // Source: a zlib handle, or `text` from `text_pos` on.
  GzHandle gz;
  std::string text;
  std::size_t text_pos = 0;

  // Line splitter: unread bytes are buf[begin, end).
  std::vector<char> buf;
  std::size_t begin = 0;
  std::size_t end = 0;
  bool eof = false;         // the source has nothing more
  bool truncated = false;   // ... because the gzip stream stopped short
  bool discarding = false;  // inside a line that is too long

  // The first job line, read while looking for the end of the header.
  std::string pending;
  std::int64_t pending_line = 0;
  bool has_pending = false;

  Header header;
  bool header_full_reported = false;
  Stats stats;
  std::vector<Error> diagnostics;
  std::int64_t dropped = 0;
  std::optional<Error> fatal;  // sticky

  std::string source_name() const { return path.empty() ? "<string>" : "'" + path + "'"; }

  Error io_error(const std::string& what) {
    const std::int64_t line = stats.lines + 1;
    return Error{Errc::kIo, line, line_prefix(line) + "cannot read " + source_name() + ": " + what};
  }

  // Reads more bytes after compacting the buffer.  False on an I/O error
  // (then `fatal` is set).
  bool fill() {
    if (begin > 0) {
      std::memmove(buf.data(), buf.data() + begin, end - begin);
      end -= begin;
      begin = 0;
    }
    const std::size_t room = buf.size() - end;
    if (!gz) {
      const std::size_t n = std::min(room, text.size() - text_pos);
      std::memcpy(buf.data() + end, text.data() + text_pos, n);
      text_pos += n;
      end += n;
      if (n == 0) eof = true;
      return true;
    }
    const int n = gzread(gz.get(), buf.data() + end,
                         static_cast<unsigned>(std::min<std::size_t>(room, INT_MAX)));
    int code = Z_OK;
    const char* message = gzerror(gz.get(), &code);
    if (n < 0 || (code != Z_OK && code != Z_BUF_ERROR)) {
      // zlib's message starts with "<path>: "; keep only what follows.
      std::string_view what = message != nullptr ? message : "read error";
      const std::string prefix = path + ": ";
      if (what.substr(0, prefix.size()) == prefix) what.remove_prefix(prefix.size());
      fatal = io_error(std::string(what));
      return false;
    }
    end += static_cast<std::size_t>(n);
    if (code == Z_BUF_ERROR) {
      truncated = true;
      eof = true;
    } else if (n == 0) {
      eof = true;
    }
    return true;
  }

  // The next line, without its '\n', in `out` (valid until the next call).
  Fetch fetch(std::string_view& out) {
    const std::size_t limit = options.max_line_length;
    for (;;) {
      const char* p = buf.data() + begin;
      const std::size_t avail = end - begin;
      const void* nl = avail > 0 ? std::memchr(p, '\n', avail) : nullptr;
      if (nl != nullptr) {
        const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - p);
        begin += len + 1;
        ++stats.lines;
        if (discarding || len > limit) {
          discarding = false;
          return Fetch::kTooLong;
        }
        out = std::string_view(p, len);
        return Fetch::kLine;
      }
      if (discarding || avail > limit) {  // drop what we have of the long line
        discarding = true;
        begin = end = 0;
      }
      if (eof) {
        if (truncated) {
          fatal = io_error("gzip data truncated (unexpected end of file)");
          return Fetch::kError;
        }
        if (discarding) {
          discarding = false;
          ++stats.lines;
          return Fetch::kTooLong;
        }
        if (avail == 0) return Fetch::kEnd;
        ++stats.lines;
        begin = end;
        out = std::string_view(p, avail);
        return Fetch::kLine;
      }
      if (!fill()) return Fetch::kError;
    }
  }

  // Records a malformed line or header value.  False in strict mode: the
  // error is then `fatal`.
  bool report(Error error) {
    ++stats.malformed_lines;
    if (options.mode == Mode::kStrict) {
      fatal = std::move(error);
      return false;
    }
    if (diagnostics.size() < options.max_diagnostics) {
      diagnostics.push_back(std::move(error));
    } else {
      ++dropped;
    }
    return true;
  }

  Error too_long(std::int64_t line) const {
    return format_error(line, "longer than " + std::to_string(options.max_line_length) + " bytes");
  }

  // Keeps a `Key: value` header line and checks a typed key's value; false
  // if that stops a strict reader.
  bool header_field(std::string_view key, std::string_view value, std::int64_t line) {
    if (header.fields.size() >= kMaxHeaderFields) {
      if (header_full_reported) return true;
      header_full_reported = true;
      return report(format_error(line, "header: more than " + std::to_string(kMaxHeaderFields) +
                                           " 'Key: value' lines; the rest are ignored"));
    }
    if (const TypedKey* typed = typed_key(key)) {
      std::string reason;
      if (const HeaderField* first = header.find(key)) {
        reason = "repeated (first on line " + std::to_string(first->line) + ")";
      } else if (typed->text) {
        if (first_word(value).empty()) reason = "empty";
      } else {
        std::int64_t v = 0;
        header_integer(value, typed->min, v, &reason);
      }
      if (!reason.empty() &&
          !report(format_error(line, "header " + std::string(key) + ": " + reason))) {
        return false;
      }
    }
    header.fields.push_back(HeaderField{std::string(key), std::string(value), line});
    return true;
  }

  // Reads the header block and keeps the first job line in `pending`.
  // False on a fatal error.
  bool read_header() {
    for (;;) {
      std::string_view line;
      switch (fetch(line)) {
        case Fetch::kError: return false;
        case Fetch::kEnd: return true;
        case Fetch::kTooLong:
          if (!report(too_long(stats.lines))) return false;
          continue;
        case Fetch::kLine: break;
      }
      const std::string_view t = trim(line);
      if (t.empty()) {
        ++stats.blank_lines;
        continue;
      }
      if (t.front() != ';') {
        pending.assign(line.data(), line.size());
        pending_line = stats.lines;
        has_pending = true;
        return true;
      }
      ++stats.comment_lines;
      std::string_view key;
      std::string_view value;
      if (split_field(t.substr(1), key, value) && !header_field(key, value, stats.lines)) {
        return false;
      }
    }
  }

  Result<std::optional<Job>> next() {
    if (fatal) return *fatal;
    for (;;) {
      std::string_view line;
      std::int64_t number = 0;
      if (has_pending) {
        has_pending = false;
        line = pending;
        number = pending_line;
      } else {
        switch (fetch(line)) {
          case Fetch::kError: return *fatal;
          case Fetch::kEnd: return std::optional<Job>();
          case Fetch::kTooLong:
            if (!report(too_long(stats.lines))) return *fatal;
            continue;
          case Fetch::kLine: break;
        }
        number = stats.lines;
      }
      const std::string_view t = trim(line);
      if (t.empty()) {
        ++stats.blank_lines;
        continue;
      }
      if (t.front() == ';') {
        ++stats.comment_lines;
        continue;
      }
      Result<Job> job = parse_job_impl(t, number);
      if (job.ok()) {
        ++stats.jobs;
        return std::optional<Job>(std::move(job).value());
      }
      if (!report(job.error())) return *fatal;
    }
  }
};

namespace {

std::optional<Error> check_options(const Options& options) {
  if (options.max_line_length < kMinLineLength || options.max_line_length > kMaxLineLength) {
    return Error{Errc::kInvalidArgument, 0,
                 "max_line_length must be " + std::to_string(kMinLineLength) + " to " +
                     std::to_string(kMaxLineLength) + ", not " +
                     std::to_string(options.max_line_length)};
  }
  if (options.max_diagnostics > kMaxDiagnostics) {
    return Error{Errc::kInvalidArgument, 0,
                 "max_diagnostics must be at most " + std::to_string(kMaxDiagnostics) + ", not " +
                     std::to_string(options.max_diagnostics)};
  }
  if (options.mode != Mode::kStrict && options.mode != Mode::kLenient) {
    return Error{Errc::kInvalidArgument, 0, "mode is neither strict nor lenient"};
  }
  return std::nullopt;
}

}  // namespace

Reader::Reader(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Reader::Reader(Reader&& other) noexcept = default;
Reader& Reader::operator=(Reader&& other) noexcept = default;
Reader::~Reader() = default;

Result<Reader> Reader::open(const std::string& path, const Options& options) noexcept {
  try {
    if (auto bad = check_options(options)) return *bad;
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->path = path;
    errno = 0;
    impl->gz.reset(gzopen(path.c_str(), "rbe"));
    if (!impl->gz) {
      const int err = errno;
      return Error{Errc::kIo, 0,
                   "cannot open '" + path + "': " + (err != 0 ? std::strerror(err) : "out of memory")};
    }
    gzbuffer(impl->gz.get(), kChunk);
    impl->buf.resize(std::max(kChunk, 2 * options.max_line_length));
    if (!impl->read_header()) return *impl->fatal;
    return Reader(std::move(impl));
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  }
}

Result<Reader> Reader::from_string(std::string text, const Options& options) noexcept {
  try {
    if (auto bad = check_options(options)) return *bad;
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->text = std::move(text);
    impl->buf.resize(std::max(kChunk, 2 * options.max_line_length));
    if (!impl->read_header()) return *impl->fatal;
    return Reader(std::move(impl));
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  }
}

const Header& Reader::header() const noexcept { return impl_->header; }

Result<std::optional<Job>> Reader::next() noexcept {
  try {
    return impl_->next();
  } catch (const std::bad_alloc&) {
    impl_->fatal = out_of_memory();
    return out_of_memory();
  }
}

const std::vector<Error>& Reader::diagnostics() const noexcept { return impl_->diagnostics; }

std::int64_t Reader::dropped_diagnostics() const noexcept { return impl_->dropped; }

const Stats& Reader::stats() const noexcept { return impl_->stats; }

// ---------------------------------------------------------------------------
// OrderedReader

struct OrderedReader::Impl {
  struct Entry {
    Job job;
    std::uint64_t seq;  // file order, breaks ties
  };
  // std::push_heap keeps the "largest" on top: make that the earliest.
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const noexcept {
      if (a.job.submit_time != b.job.submit_time) return a.job.submit_time > b.job.submit_time;
      return a.seq > b.seq;
    }
  };

  explicit Impl(Reader r) : reader(std::move(r)) {}

  Reader reader;
  OrderOptions options;
  std::vector<Entry> heap;
  std::uint64_t seq = 0;
  bool source_done = false;

  // The yielded job with the latest submit time.
  bool yielded = false;
  std::int64_t latest_submit = 0;
  std::int64_t latest_number = 0;
  std::int64_t latest_line = 0;

  OrderStats stats;
  std::vector<Error> reports;
  std::optional<Error> fatal;

  Error late_error(const Job& job) const {
    const std::int64_t lateness = latest_submit - job.submit_time;
    return Error{Errc::kOrder, job.line,
                 line_prefix(job.line) + "job " + std::to_string(job.job_number) +
                     " submitted at " + std::to_string(job.submit_time) + " comes after job " +
                     std::to_string(latest_number) + " (line " + std::to_string(latest_line) +
                     ", submitted at " + std::to_string(latest_submit) +
                     ") was yielded: " + std::to_string(lateness) +
                     " s out of order, beyond a reorder window of " +
                     std::to_string(options.window) + " jobs"};
  }

  Result<std::optional<Job>> next() {
    if (fatal) return *fatal;
    while (!source_done && heap.size() < options.window) {
      Result<std::optional<Job>> r = reader.next();
      if (!r.ok()) {
        fatal = r.error();
        return *fatal;
      }
      if (!r.value()) {
        source_done = true;
        break;
      }
      Job& job = *r.value();
      if (yielded && job.submit_time < latest_submit) {
        ++stats.late_jobs;
        stats.max_lateness = std::max(stats.max_lateness, latest_submit - job.submit_time);
        if (stats.first_late_line == 0) stats.first_late_line = job.line;
        Error error = late_error(job);
        if (options.late == LatePolicy::kFail) {
          fatal = std::move(error);
          return *fatal;
        }
        if (reports.size() < options.max_reports) reports.push_back(std::move(error));
        if (options.late == LatePolicy::kEmit) return std::optional<Job>(std::move(job));
        continue;  // kDrop
      }
      heap.push_back(Entry{std::move(job), seq++});
      std::push_heap(heap.begin(), heap.end(), Later{});
    }
    if (heap.empty()) return std::optional<Job>();
    std::pop_heap(heap.begin(), heap.end(), Later{});
    Job job = std::move(heap.back().job);
    heap.pop_back();
    if (!yielded || job.submit_time > latest_submit) {
      latest_submit = job.submit_time;
      latest_number = job.job_number;
      latest_line = job.line;
    }
    yielded = true;
    return std::optional<Job>(std::move(job));
  }
};

OrderedReader::OrderedReader(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
OrderedReader::OrderedReader(OrderedReader&& other) noexcept = default;
OrderedReader& OrderedReader::operator=(OrderedReader&& other) noexcept = default;
OrderedReader::~OrderedReader() = default;

Result<OrderedReader> OrderedReader::create(Reader reader, const OrderOptions& options) noexcept {
  try {
    if (options.window < 1 || options.window > kMaxWindow) {
      return Error{Errc::kInvalidArgument, 0,
                   "window must be 1 to " + std::to_string(kMaxWindow) + ", not " +
                       std::to_string(options.window)};
    }
    if (options.max_reports > kMaxDiagnostics) {
      return Error{Errc::kInvalidArgument, 0,
                   "max_reports must be at most " + std::to_string(kMaxDiagnostics) + ", not " +
                       std::to_string(options.max_reports)};
    }
    if (options.late != LatePolicy::kFail && options.late != LatePolicy::kEmit &&
        options.late != LatePolicy::kDrop) {
      return Error{Errc::kInvalidArgument, 0, "late is not a LatePolicy"};
    }
    auto impl = std::make_unique<Impl>(std::move(reader));
    impl->options = options;
    return OrderedReader(std::move(impl));
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  }
}

Result<std::optional<Job>> OrderedReader::next() noexcept {
  try {
    return impl_->next();
  } catch (const std::bad_alloc&) {
    impl_->fatal = out_of_memory();
    return out_of_memory();
  }
}

const Reader& OrderedReader::reader() const noexcept { return impl_->reader; }

const OrderStats& OrderedReader::stats() const noexcept { return impl_->stats; }

const std::vector<Error>& OrderedReader::late_reports() const noexcept { return impl_->reports; }

}  // namespace flexco::swf
