// A scratch folder for tests that write their own small input files; removed with the object.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace qdq::testing {

class TempDir {
public:
    // Named after the process and the running test, since ctest runs test cases side by side.
    TempDir() {
        const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
        const std::string name = "qdq_" + std::to_string(::getpid()) + "_" +
                                 (test ? std::string(test->test_suite_name()) + "." + test->name() : "static");
        path_ = std::filesystem::temp_directory_path() / name;
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

    // Writes bytes exactly (binary mode) to a file under the folder, creating folders on the
    // way; returns its path.
    std::string write(const std::string& relative, const std::string& bytes) const {
        const std::filesystem::path file = path_ / relative;
        std::filesystem::create_directories(file.parent_path());
        std::ofstream out(file, std::ios::binary);
        out << bytes;
        if (!out) throw std::runtime_error("cannot write " + file.string());
        return file.string();
    }

private:
    std::filesystem::path path_;
};

}  // namespace qdq::testing
