// Checks that a call throws std::runtime_error whose message mentions every given part (a
// file name, a key, a shape), and leaves no tape behind for the next test.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/tape.h"

namespace qdq::testing {

inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
    try {
        f();
        ADD_FAILURE() << "no error thrown; expected one mentioning '" << parts.front() << "'";
    } catch (const std::runtime_error& e) {
        std::string message = e.what();
        for (const std::string& part : parts)
            EXPECT_NE(message.find(part), std::string::npos)
                << "'" << message << "' does not mention '" << part << "'";
    }
    clear_tape();
}

}  // namespace qdq::testing
