// Runs a shell command, capturing what it prints on stdout and stderr together, and its exit
// status.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace qdq::testing {

struct Process {
    int status = -1;     // the exit code; -1 when killed by a signal
    std::string output;  // stdout and stderr, interleaved as written
};

inline Process run_command(const std::string& command) {
    Process p;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return p;
    char buffer[4096];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) p.output.append(buffer, n);
    const int raw = pclose(pipe);
    p.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return p;
}

}  // namespace qdq::testing
