// A line for the user on stderr, from rank 0 alone under mpirun, written in one piece when the
// statement ends. Unbuffered stderr writes each << on its own, and mpirun forwards stdout and
// stderr through separate pipes: a line written in pieces can have what rank 0 printed on stdout
// land inside it (a rerun's "pipeline: qat done before" split by the results table).
#pragma once

#include <cstdio>
#include <sstream>
#include <string>

#include "parallel/communicator.h"

namespace qdq {

class RootLine {
public:
    RootLine() = default;
    RootLine(const RootLine&) = delete;
    RootLine& operator=(const RootLine&) = delete;
    ~RootLine() {
        if (!world().is_root()) return;
        const std::string line = text_.str();
        std::fwrite(line.data(), 1, line.size(), stderr);
    }

    template <typename T>
    RootLine& operator<<(const T& value) {
        text_ << value;
        return *this;
    }

private:
    std::ostringstream text_;
};

// root_line() << "calibrate: " << name << "\n";
inline RootLine root_line() { return {}; }

}  // namespace qdq
