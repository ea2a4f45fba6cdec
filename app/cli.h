// The qdqtrain command line, shared by its files: a config command (train, calibrate, eval, ...)
// is its usage, help, options and the function that runs it on the loaded run config.
#pragma once

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainers/run_config.h"

namespace qdq::cli {

struct Command {
    const char* usage;
    const char* help;
    std::vector<std::string> value_options;  // options that take a value (besides --set)
    std::vector<std::string> flags;
    std::function<int(const RunConfig&, std::map<std::string, std::string>&)> run;
    std::vector<std::string> optional = {"--out"};  // value options that may be left out
};

// Bad arguments: the message, then the command's usage, exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// `text`, the value of option `flag`, as a whole number from 1 to INT_MAX; else a UsageError
// naming both ("3x" and "0" are refused, not read as 3 and as nothing).
int whole_number(const std::string& flag, const std::string& text);

// The commands that take a CONFIG, by name.
const std::map<std::string, Command>& config_commands();

// `qdqtrain sweep ...`: argv as main's.
extern const char* const kSweepUsage;
int run_sweep_command(int argc, char** argv);

}  // namespace qdq::cli
