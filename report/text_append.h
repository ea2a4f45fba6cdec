// A line of a report built piece by piece: append(md, {"| ", name, " | ", fixed(v, 2), " |"}).
// It reads as the `"| " + name + ...` chain it replaces, and GCC 12 at -O3 warns, falsely, on
// such chains when a literal stands on the left of a temporary (-Wstringop-overflow), which
// every first build would print.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace qdq {

inline void append(std::string& out, std::initializer_list<std::string_view> pieces) {
    for (std::string_view piece : pieces) out += piece;
}

}  // namespace qdq
