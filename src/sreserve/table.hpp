// SPDX-License-Identifier: GPL-2.0-or-later
// table.hpp - Slurm-style tables: an -o/--format string in squeue's
// "%[.][size]X" syntax selects and sizes the columns; -h drops the header.
//
//   %X      field X at its natural width (no padding, no truncation)
//   %10X    field X left-justified in 10 columns, cut at 10
//   %.10X   right-justified in 10 columns, cut at 10
//   %%      a literal percent sign
// Any other text is copied as it is (usually the blanks between fields).

#ifndef FLEXCO_SRESERVE_TABLE_HPP
#define FLEXCO_SRESERVE_TABLE_HPP

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sreserve {

// One column a command offers: its letter, header and a description for
// --helpformat.
struct FieldDef {
  char letter;
  std::string header;
  std::string help;
};

struct FormatItem {
  bool is_field = false;
  char letter = 0;
  int width = 0;       // 0: natural width
  bool right = false;  // "." given
  std::string text;    // literal text when !is_field
};

struct FormatSpec {
  std::vector<FormatItem> items;
};

// Parses `fmt` against the fields the command knows.  On error returns
// false and sets *error, e.g. "invalid field \"%Q\" in format \"%Q\"".
bool parse_format(std::string_view fmt, const std::vector<FieldDef>& fields,
                  FormatSpec* spec, std::string* error);

// A row: the formatted value of each field letter (missing letters print
// as empty).
using Row = std::map<char, std::string>;

// The table as text: the header line (unless noheader), then one line per
// row, each ending in '\n'.  Trailing blanks are kept only inside fields,
// never added after the last one.
std::string render_table(const FormatSpec& spec, const std::vector<FieldDef>& fields,
                         const std::vector<Row>& rows, bool noheader);

// "%i  ID ..." lines for --helpformat.
std::string help_format(const std::vector<FieldDef>& fields);

}  // namespace sreserve

#endif
