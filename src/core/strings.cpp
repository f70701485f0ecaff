// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/strings.hpp"

namespace flexco {

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> items;
  std::size_t pos = 0;
  for (;;) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) {
      items.emplace_back(text.substr(pos));
      return items;
    }
    items.emplace_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
}

}  // namespace flexco
