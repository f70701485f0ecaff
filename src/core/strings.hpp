// SPDX-License-Identifier: GPL-2.0-or-later
// Small string helpers shared by flexcod, sreserve and flexco-sim.
//
// Rules of the core library: no logging, no globals; nothing here throws
// except std::bad_alloc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace flexco {

// The items of a comma-separated list, as written: "a,b,c" -> {"a", "b",
// "c"}, "a,,b" -> {"a", "", "b"}, "" -> {""}.  No blanks are trimmed and
// no empty item is dropped: each caller decides what an empty item means
// (an error, skipped, or "" meaning an empty list).
std::vector<std::string> split_commas(std::string_view text);

}  // namespace flexco
