// SPDX-License-Identifier: GPL-2.0-or-later
// table.cpp - squeue-style -o/--format parsing and table rendering.

#include "sreserve/table.hpp"

#include <cctype>

namespace sreserve {

namespace {

const FieldDef* find_field(const std::vector<FieldDef>& fields, char letter) {
  for (const auto& f : fields)
    if (f.letter == letter) return &f;
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
      if (width > 1000) {
        *error = "field width too large in format \"" + std::string(fmt) + "\"";
        return false;
      }
      ++i;
    }
    if (i >= fmt.size() || !find_field(fields, fmt[i])) {
      std::string bad(fmt.substr(start, i < fmt.size() ? i - start + 1 : i - start));
      *error = "invalid field \"" + bad + "\" in format \"" + std::string(fmt) +
               "\" (see --helpformat)";
      return false;
    }
    item.letter = fmt[i];
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

std::string render_table(const FormatSpec& spec, const std::vector<FieldDef>& fields,
                         const std::vector<Row>& rows, bool noheader) {
  std::string out;
  auto line = [&](auto value_of) {
    std::string l;
    for (const auto& item : spec.items) l += item.is_field ? cell(value_of(item.letter), item) : item.text;
    out += rstrip(std::move(l)) + "\n";
  };
  if (!noheader)
    line([&](char c) {
      const FieldDef* f = find_field(fields, c);
      return f ? f->header : std::string();
    });
  for (const auto& row : rows)
    line([&](char c) {
      auto it = row.find(c);
      return it == row.end() ? std::string() : it->second;
    });
  return out;
}

std::string help_format(const std::vector<FieldDef>& fields) {
  std::string out;
  for (const auto& f : fields) {
    std::string h = f.header;
    h.resize(14, ' ');
    out += std::string("%") + f.letter + "  " + h + f.help + "\n";
  }
  return out;
}

}  // namespace sreserve
