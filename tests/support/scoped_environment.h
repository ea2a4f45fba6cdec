// An environment variable of this process set for a scope and put back as it was at its end
// (unset if it was): for the tests of what reads the environment (the data directory, the
// emulated device's machine), so that a failing test leaves nothing behind for the next.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace qdq::testing {

class ScopedEnvironment {
public:
    // value null: unset for the scope.
    ScopedEnvironment(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) saved_ = old;
        if (value) setenv(name, value, 1);
        else unsetenv(name);
    }
    ~ScopedEnvironment() {
        if (saved_) setenv(name_.c_str(), saved_->c_str(), 1);
        else unsetenv(name_.c_str());
    }
    ScopedEnvironment(const ScopedEnvironment&) = delete;
    ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

private:
    std::string name_;
    std::optional<std::string> saved_;
};

}  // namespace qdq::testing
