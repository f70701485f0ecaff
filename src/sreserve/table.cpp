// SPDX-License-Identifier: GPL-2.0-or-later
// table.cpp - squeue-style -o/--format and -O/--Format parsing and table
// rendering.

#include "sreserve/table.hpp"

#include <algorithm>
#include <cctype>

#include "core/strings.hpp"

namespace sreserve {

namespace {

constexpr int kMaxWidth = 1000;
constexpr int kLongDefaultWidth = 20;  // squeue -O's default field size

const FieldDef* by_letter(const std::vector<FieldDef>& fields, char letter) {
  if (letter == 0) return nullptr;
  for (const auto& f : fields)
    if (f.letter == letter) return &f;
  return nullptr;
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

const FieldDef* by_name(const std::vector<FieldDef>& fields, std::string_view name) {
  for (const auto& f : fields)
    if (same_name(f.name, name)) return &f;
  return nullptr;
}

std::string cell(const std::string& value, const FormatItem& item) {
  if (item.width <= 0) return value;
  auto w = static_cast<std::size_t>(item.width);
  std::string v = value.size() > w ? value.substr(0, w) : value;
  std::string pad(w - v.size(), ' ');
  return item.right ? pad + v : v + pad;
}

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

bool parse_format(std::string_view fmt, const std::vector<FieldDef>& fields, FormatSpec* spec,
                  std::string* error) {
  FormatSpec out;
  std::string text;
  auto flush = [&]() {
    if (!text.empty()) {
      FormatItem lit;
      lit.text = text;
      out.items.push_back(lit);
      text.clear();
    }
  };
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      text += fmt[i];
      continue;
    }
    std::size_t start = i;
    ++i;
    if (i < fmt.size() && fmt[i] == '%') {
      text += '%';
      continue;
    }
    FormatItem item;
    item.is_field = true;
    if (i < fmt.size() && fmt[i] == '.') {
      item.right = true;
      ++i;
    }
    int width = 0;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
      width = width * 10 + (fmt[i] - '0');
      if (width > kMaxWidth) {
        *error = "field width too large in format \"" + std::string(fmt) + "\"";
        return false;
      }
      ++i;
    }
    const FieldDef* f = i < fmt.size() ? by_letter(fields, fmt[i]) : nullptr;
    if (!f) {
      std::string bad(fmt.substr(start, i < fmt.size() ? i - start + 1 : i - start));
      *error = "invalid field \"" + bad + "\" in format \"" + std::string(fmt) +
               "\" (see --helpformat)";
      return false;
    }
    item.field = f->name;
    item.width = width;
    flush();
    out.items.push_back(item);
  }
  flush();
  if (out.items.empty()) {
    *error = "empty format";
    return false;
  }
  *spec = std::move(out);
  return true;
}

bool parse_format_long(std::string_view fmt, const std::vector<FieldDef>& fields, FormatSpec* spec,
                       std::string* error) {
  FormatSpec out;
  for (const std::string& piece : flexco::split_commas(fmt)) {
    std::string_view tok = piece;
    if (tok.empty()) continue;  // "a,,b" and a trailing comma, as squeue
    std::size_t colon = tok.find(':');
    std::string_view name = tok.substr(0, colon);
    const FieldDef* f = by_name(fields, name);
    if (!f) {
      *error = "invalid field \"" + std::string(name) + "\" in format \"" + std::string(fmt) +
               "\" (see --helpFormat)";
      return false;
    }
    FormatItem item;
    item.is_field = true;
    item.field = f->name;
    item.width = kLongDefaultWidth;
    std::string suffix;
    if (colon != std::string_view::npos) {
      std::string_view rest = tok.substr(colon + 1);
      std::size_t i = 0;
      if (i < rest.size() && rest[i] == '.') {
        item.right = true;
        ++i;
      }
      if (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) {
        int width = 0;
        while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) {
          width = width * 10 + (rest[i] - '0');
          if (width > kMaxWidth) {
            *error = "field width too large in format \"" + std::string(fmt) + "\"";
            return false;
          }
          ++i;
        }
        item.width = width;
      }
      suffix = std::string(rest.substr(i));
    }
    out.items.push_back(item);
    if (!suffix.empty()) {
      FormatItem lit;
      lit.text = suffix;
      out.items.push_back(lit);
    }
  }
  if (out.items.empty()) {
    *error = "empty format";
    return false;
  }
  *spec = std::move(out);
  return true;
}

std::string render_table(const FormatSpec& spec, const std::vector<FieldDef>& fields,
                         const std::vector<Row>& rows, bool noheader) {
  std::string out;
  auto line = [&](auto value_of) {
    std::string l;
    for (const auto& item : spec.items) l += item.is_field ? cell(value_of(item.field), item) : item.text;
    out += rstrip(std::move(l)) + "\n";
  };
  if (!noheader)
    line([&](const std::string& name) {
      const FieldDef* f = by_name(fields, name);
      return f ? f->header : std::string();
    });
  for (const auto& row : rows)
    line([&](const std::string& name) {
      auto it = row.find(name);
      return it == row.end() ? std::string() : it->second;
    });
  return out;
}

std::string help_format(const std::vector<FieldDef>& fields, bool long_names) {
  std::string out;
  std::size_t name_width = 0;
  for (const auto& f : fields) name_width = std::max(name_width, f.name.size());
  for (const auto& f : fields) {
    std::string h = f.header;
    h.resize(std::max<std::size_t>(h.size() + 1, 14), ' ');
    if (long_names) {
      std::string n = f.name;
      n.resize(name_width + 2, ' ');
      out += n + h + f.help + "\n";
    } else if (f.letter) {
      out += std::string("%") + f.letter + "  " + h + f.help + "\n";
    }
  }
  return out;
}

}  // namespace sreserve
