#include "data/utf8.h"

#include <cstdio>
#include <stdexcept>

namespace qdq {

void throw_invalid_utf8(std::string_view text, size_t pos, const char* problem) {
    std::string bytes;
    for (size_t i = pos; i < text.size() && i < pos + 4; ++i) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "%s%02X", bytes.empty() ? "" : " ", (unsigned char)text[i]);
        bytes += hex;
    }
    throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(pos) + " of a " +
                                std::to_string(text.size()) + "-byte text: " + problem + " (bytes " +
                                bytes + ")");
}

}  // namespace qdq
