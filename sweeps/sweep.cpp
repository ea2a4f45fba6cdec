#include "sweeps/sweep.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include "autograd/rng.h"
#include "json/json_fields.h"
#include "json/json_file.h"
#include "report/text_append.h"
#include "trainers/run_config.h"

extern char** environ;

namespace qdq {

namespace fs = std::filesystem;

namespace {

// Every combination of the grid's values, the last key varying fastest.
std::vector<nlohmann::json> grid_points(const nlohmann::json& grid, const std::string& source) {
    std::vector<nlohmann::json> points = {nlohmann::json::object()};
    for (const auto& [key, values] : grid.items()) {
        if (!values.is_array() || values.empty())
            throw std::runtime_error(source + ": 'grid." + key + "' must be a non-empty list of values");
        std::vector<nlohmann::json> next;
        for (const nlohmann::json& p : points)
            for (const nlohmann::json& v : values) {
                nlohmann::json q = p;
                q[key] = v;
                next.push_back(q);
            }
        points = std::move(next);
    }
    return points;
}

nlohmann::json draw(const nlohmann::json& spec, Rng& rng, const std::string& where) {
    if (!spec.is_object() || spec.size() != 1)
        throw std::runtime_error(where + " must be one of {\"uniform\": [a, b]}, {\"log_uniform\": [a, b]}, "
                                 "{\"choice\": [...]}");
    const std::string kind = spec.begin().key();
    const nlohmann::json& args = spec.begin().value();
    if (kind == "choice") {
        if (!args.is_array() || args.empty()) throw std::runtime_error(where + ".choice must be a non-empty list");
        return args[(size_t)(rng.next_u64() % args.size())];
    }
    if (!args.is_array() || args.size() != 2 || !args[0].is_number() || !args[1].is_number())
        throw std::runtime_error(where + "." + kind + " must be [low, high]");
    double lo = args[0].get<double>(), hi = args[1].get<double>(), u = rng.uniform();
    if (kind == "uniform") return lo + (hi - lo) * u;
    if (kind == "log_uniform") {
        if (!(lo > 0 && hi > 0)) throw std::runtime_error(where + ".log_uniform needs positive bounds");
        return std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * u);
    }
    throw std::runtime_error(where + ": unknown distribution '" + kind + "'");
}

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::vector<std::string> run_arguments(const Sweep& sweep, const SweepRun& run) {
    std::vector<std::string> args = {sweep.command, sweep.config};
    for (const std::string& o : run.overrides) {
        args.push_back("--set");
        args.push_back(o);
    }
    return args;
}

// A directory's sweep_run.json, if it has one, must hold this run's values.
void check_values(const fs::path& dir, const SweepRun& run) {
    const fs::path file = dir / "sweep_run.json";
    if (fs::exists(file) && read_json_file(file.string()) != run.values)
        throw std::runtime_error(file.string() + ": this run was made for other values (" +
                                 read_json_file(file.string()).dump() + "); give the changed sweep a new output_dir" +
                                 " and results_dir");
}

// A run's config read now as the run will read it, so that a misspelt key or a value of the wrong
// type stops the sweep before any run starts, not in run-000's log.
void check_run_config(const Sweep& sweep, const SweepRun& run, const std::string& path) {
    try {
        load_run_config(sweep.config, run.overrides);
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + fs::path(run.dir).filename().string() + " " + run.values.dump() + ": " +
                                 e.what());
    }
}

// Starts one run with its output in run.log; returns the child's pid.
pid_t start_run(const Sweep& sweep, const SweepRun& run, const std::string& binary, int threads) {
    fs::create_directories(run.dir);
    std::vector<std::string> args = run_arguments(sweep, run);
    args.insert(args.begin(), binary);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e)
        if (std::string(*e).rfind("OMP_NUM_THREADS=", 0) != 0) env_strings.push_back(*e);
    env_strings.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = run.dir + "/run.log";
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + binary + ": " + std::strerror(rc));
    return pid;
}

}  // namespace

std::string results_file(const Sweep& sweep) { return sweep.command == "pipeline" ? "results.json" : "eval_results.json"; }

std::string record_dir(const Sweep& sweep, const SweepRun& run) {
    if (fs::path(sweep.results_dir).lexically_normal() == fs::path(sweep.output_dir).lexically_normal()) return "";
    return (fs::path(sweep.results_dir) / "runs" / fs::path(run.dir).filename()).string();
}

void record_run(const Sweep& sweep, const SweepRun& run) {
    const std::string record = record_dir(sweep, run);
    if (record.empty() || !fs::exists(fs::path(run.dir) / results_file(sweep))) return;
    std::vector<fs::path> files = {results_file(sweep), "sweep_run.json"};
    for (const auto& entry : fs::recursive_directory_iterator(run.dir))
        if (entry.path().filename() == "metrics.jsonl") files.push_back(fs::relative(entry.path(), run.dir));
    for (const fs::path& file : files) {
        if (!fs::exists(fs::path(run.dir) / file)) continue;
        fs::create_directories((fs::path(record) / file).parent_path());
        fs::copy_file(fs::path(run.dir) / file, fs::path(record) / file, fs::copy_options::overwrite_existing);
    }
}

std::string finished_dir(const Sweep& sweep, const SweepRun& run) {
    if (fs::exists(fs::path(run.dir) / results_file(sweep))) return run.dir;
    const std::string record = record_dir(sweep, run);
    if (!record.empty() && fs::exists(fs::path(record) / results_file(sweep))) return record;
    return "";
}

Sweep load_sweep(const std::string& path) {
    nlohmann::json raw = read_json_file(path);
    JsonFields f(raw, "", path);
    Sweep sweep;
    std::string config;
    f.read("config", config);
    if (config.empty()) f.fail("config", "is required (the base run config)");
    const fs::path base = fs::path(path).parent_path();
    sweep.config = fs::path(config).is_absolute() ? config : (base / config).lexically_normal().string();
    if (!fs::exists(sweep.config)) f.fail("config", "names a missing file: " + sweep.config);
    f.read("output_dir", sweep.output_dir);
    if (sweep.output_dir.empty()) f.fail("output_dir", "is required");
    f.read("results_dir", sweep.results_dir);
    if (sweep.results_dir.empty()) sweep.results_dir = sweep.output_dir;
    f.read("command", sweep.command);
    if (sweep.command != "train" && sweep.command != "pipeline") f.fail("command", "must be train or pipeline");
    f.read("metric", sweep.metric);
    sweep.greater_is_better = !sweep.metric.ends_with("loss");
    f.read("greater_is_better", sweep.greater_is_better);
    f.read("parallel", sweep.parallel);
    if (sweep.parallel < 1) f.fail("parallel", "must be at least 1");

    nlohmann::json grid = nlohmann::json::object(), random;
    f.read("grid", grid);
    f.read("random", random);
    f.finish();
    if (!grid.is_object()) f.fail("grid", "must be an object of key: [values]");
    std::vector<nlohmann::json> points = grid.empty() ? std::vector<nlohmann::json>{} : grid_points(grid, path);
    if (!random.is_null()) {
        JsonFields r(random, "random", path);
        int64_t count = 0;
        uint64_t seed = 0;
        nlohmann::json space;
        r.read("count", count);
        r.read("seed", seed);
        r.read("space", space);
        r.finish();
        if (count <= 0) r.fail("count", "must be positive");
        if (!space.is_object() || space.empty()) r.fail("space", "must be an object of key: distribution");
        Rng rng(seed);
        for (int64_t i = 0; i < count; ++i) {
            nlohmann::json p = nlohmann::json::object();
            for (const auto& [key, spec] : space.items()) p[key] = draw(spec, rng, path + ": 'random.space." + key + "'");
            points.push_back(p);
        }
    }
    if (points.empty()) throw std::runtime_error(path + ": the sweep has no runs (give 'grid' or 'random')");
    if (std::any_of(points.begin(), points.end(), [](const nlohmann::json& p) { return p.contains("training.output_dir"); }))
        throw std::runtime_error(path + ": 'training.output_dir' is the sweep's to set (output_dir/run-NNN), not a swept key");

    for (size_t i = 0; i < points.size(); ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "run-%03zu", i);
        SweepRun run;
        run.dir = (fs::path(sweep.output_dir) / name).string();
        run.values = points[i];
        for (const auto& [key, value] : points[i].items()) run.overrides.push_back(key + "=" + value.dump());
        run.overrides.push_back("training.output_dir=" + nlohmann::json(run.dir).dump());
        check_run_config(sweep, run, path);
        check_values(run.dir, run);
        if (const std::string record = record_dir(sweep, run); !record.empty()) check_values(record, run);
        sweep.runs.push_back(std::move(run));
    }
    return sweep;
}

int run_sweep(const Sweep& sweep, const std::string& binary, const std::function<void(const SweepRun&)>& finished) {
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    const int threads = std::max(1, cores / sweep.parallel);
    std::map<pid_t, const SweepRun*> running;
    int failed = 0;
    auto wait_one = [&] {
        int status = 0;
        pid_t pid = waitpid(-1, &status, 0);
        auto it = running.find(pid);
        if (it == running.end()) return;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        std::printf("%s %s\n", ok ? "done  " : "FAILED", it->second->dir.c_str());
        if (!ok) {
            std::printf("       see %s/run.log\n", it->second->dir.c_str());
            ++failed;
        }
        std::fflush(stdout);
        if (ok && finished) finished(*it->second);
        running.erase(it);
    };
    for (const SweepRun& run : sweep.runs) {
        if (const std::string dir = finished_dir(sweep, run); !dir.empty()) {
            std::printf("skip   %s (finished%s)\n", run.dir.c_str(), dir == run.dir ? "" : (", recorded in " + dir).c_str());
            continue;
        }
        while ((int)running.size() >= sweep.parallel) wait_one();
        fs::create_directories(run.dir);
        std::ofstream(fs::path(run.dir) / "sweep_run.json") << run.values.dump(2) << '\n';
        std::printf("start  %s %s\n", run.dir.c_str(), run.values.dump().c_str());
        std::fflush(stdout);
        running[start_run(sweep, run, binary, threads)] = &run;
    }
    while (!running.empty()) wait_one();
    return failed;
}

std::string slurm_script(const Sweep& sweep, const std::string& binary, int ranks) {
    if (ranks < 1) throw std::invalid_argument("sweep: --ranks needs a positive number");
    if (ranks > 1 && sweep.command != "train")
        throw std::runtime_error("--ranks " + std::to_string(ranks) +
                                 ": a sweep's runs are data parallel under 'train' only, and this sweep's command is '" + sweep.command + "'");
    std::string s = "#!/bin/bash\n";
    s += "#SBATCH --job-name=qdqtrain-sweep\n";
    s += "#SBATCH --array=0-" + std::to_string(sweep.runs.size() - 1) + "\n";
    if (ranks > 1) s += "#SBATCH --ntasks=" + std::to_string(ranks) + "\n";
    s += "#SBATCH --output=" + sweep.output_dir + "/slurm-%A_%a.out\n";
    s += "# One array task per run; a finished run exits at once, an interrupted one resumes.\n";
    s += "set -euo pipefail\n";
    s += "case \"$SLURM_ARRAY_TASK_ID\" in\n";
    for (size_t i = 0; i < sweep.runs.size(); ++i) {
        const SweepRun& run = sweep.runs[i];
        s += "  " + std::to_string(i) + ") dir=" + shell_quote(run.dir) + "; args=(";
        std::vector<std::string> args = run_arguments(sweep, run);
        for (size_t k = 0; k < args.size(); ++k) append(s, {k ? " " : "", shell_quote(args[k])});
        s += ") ;;\n";
    }
    s += "  *) echo \"no run $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\nesac\n";
    s += "[[ -f \"$dir/" + results_file(sweep) + "\" ]] && exit 0\n";
    if (!sweep.runs.empty() && !record_dir(sweep, sweep.runs[0]).empty())
        s += "[[ -f " + shell_quote(sweep.results_dir + "/runs/") + "\"$(basename \"$dir\")/" + results_file(sweep) +
             "\" ]] && exit 0\n";
    s += "mkdir -p \"$dir\"\n";
    s += std::string("exec ") + (ranks > 1 ? "srun " : "") + shell_quote(binary) + " \"${args[@]}\"\n";
    return s;
}

}  // namespace qdq
