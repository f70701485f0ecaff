// SPDX-License-Identifier: GPL-2.0-or-later
// table.hpp - Slurm-style tables, chosen as squeue's are:
//
// -o/--format, squeue's "%[.][size]X" syntax:
//   %X      field X at its natural width (no padding, no truncation)
//   %10X    field X left-justified in 10 columns, cut at 10
//   %.10X   right-justified in 10 columns, cut at 10
//   %%      a literal percent sign
//   Any other text is copied as it is (usually the blanks between fields).
// -O/--Format, squeue's "field[:[.][size][suffix]],..." syntax: fields by
//   their long names (case-insensitive), 20 columns each unless a size is
//   given (0: the value's own width), the suffix printed after the field.
// -h drops the header.
//
// Where squeue has a field, the letter and the long name are squeue's and
// mean what they mean there.  squeue gives every letter a meaning, so
// fields squeue has no counterpart for have a long name only (letter 0).

#ifndef FLEXCO_SRESERVE_TABLE_HPP
#define FLEXCO_SRESERVE_TABLE_HPP

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sreserve {

// One column a command offers: its letter (0: -O only), its long name,
// header and a description for --helpformat / --helpFormat.
struct FieldDef {
  char letter;
  std::string name;
  std::string header;
  std::string help;
};

struct FormatItem {
  bool is_field = false;
  std::string field;   // the field's long name
  int width = 0;       // 0: natural width
  bool right = false;  // "." given
  std::string text;    // literal text when !is_field
};

struct FormatSpec {
  std::vector<FormatItem> items;
};

// Parses an -o format against the fields the command knows.  On error
// returns false and sets *error, e.g. "invalid field \"%Q\" in format \"%Q\"".
bool parse_format(std::string_view fmt, const std::vector<FieldDef>& fields,
                  FormatSpec* spec, std::string* error);

// Parses an -O format ("JobID:.8 ,State,...").
bool parse_format_long(std::string_view fmt, const std::vector<FieldDef>& fields,
                       FormatSpec* spec, std::string* error);

// A row: the formatted value of each field, by long name (missing fields
// print as empty).
using Row = std::map<std::string, std::string>;

// The table as text: the header line (unless noheader), then one line per
// row, each ending in '\n'.  Trailing blanks are kept only inside fields,
// never added after the last one.
std::string render_table(const FormatSpec& spec, const std::vector<FieldDef>& fields,
                         const std::vector<Row>& rows, bool noheader);

// --helpformat: "%i  ID  ..." lines for the fields with a letter;
// --helpFormat (long): "JobID  ID  ..." lines for every field.
std::string help_format(const std::vector<FieldDef>& fields, bool long_names = false);

}  // namespace sreserve

#endif
