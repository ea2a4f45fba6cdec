// The documents a corpus file (or a slice of one, "file[begin:end]") yields, as strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/text_corpus.h"

namespace qdq::testing {

inline std::vector<std::string> documents_of(const std::string& spec) {
    std::vector<std::string> out;
    read_document_slice(spec, [&](std::string_view text) {
        out.emplace_back(text);
        return true;
    });
    return out;
}

}  // namespace qdq::testing
