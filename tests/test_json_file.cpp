// JSON files: a reader in another process sees a whole file or none, and a failed write loses
// nothing.
#include "json/json_file.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "support/temp_dir.h"

using qdq::read_json_file;
using qdq::write_json_file;
using qdq::testing::TempDir;

namespace {

nlohmann::json document(int version) {
    nlohmann::json j = {{"version", version}, {"rows", nlohmann::json::array()}};
    for (int i = 0; i < 4000; ++i) j["rows"].push_back({{"index", i}, {"name", "row " + std::to_string(i)}});
    return j;
}

}  // namespace

TEST(JsonFile, RoundTripsAndLeavesNoPartialFileBehind) {
    TempDir dir;
    const std::string path = (dir.path() / "results.json").string();
    write_json_file(path, document(1));
    write_json_file(path, document(2));
    EXPECT_EQ(read_json_file(path), document(2));
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
}

// A value nlohmann cannot dump (a string that is not UTF-8) throws before the old file is touched.
TEST(JsonFile, AFailedWriteKeepsTheOldFile) {
    TempDir dir;
    const std::string path = (dir.path() / "results.json").string();
    write_json_file(path, document(1));
    EXPECT_ANY_THROW(write_json_file(path, nlohmann::json{{"name", std::string("\xff\xfe")}}));
    EXPECT_EQ(read_json_file(path), document(1));
    EXPECT_THROW(write_json_file((dir.path() / "missing" / "results.json").string(), document(1)), std::runtime_error);
}

// Writing in place truncates first, so a reader in between would find an empty or cut file
// (a sweep once failed on exactly that). Every read here must parse.
TEST(JsonFile, AReaderDuringRewritesAlwaysSeesAWholeFile) {
    TempDir dir;
    const std::string path = (dir.path() / "results.json").string();
    write_json_file(path, document(0));
    std::atomic<bool> writing{true};
    std::thread writer([&] {
        for (int version = 1; version <= 200; ++version) write_json_file(path, document(version));
        writing = false;
    });
    int reads = 0, whole = 0;
    while (writing) {
        ++reads;
        try {
            whole += read_json_file(path)["rows"].size() == 4000;
        } catch (const std::exception&) {
        }
    }
    writer.join();
    EXPECT_EQ(whole, reads);
}

// Errors name the file, and read as sentences: the line and column of bad JSON without the
// library's exception tag; a directory is refused by name.
TEST(JsonFile, ErrorsNameTheFileAndWhereTheTextIsWrong) {
    TempDir dir;
    const std::string bad = dir.write("bad.json", "{\"a\": 1,\n \"b\": }\n");
    try {
        read_json_file(bad);
        ADD_FAILURE() << "read bad JSON";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(bad + ": not valid JSON: parse error at line 2, column 7: syntax error", 0), 0u)
            << e.what();
    }
    try {
        read_json_file(dir.path().string());
        ADD_FAILURE() << "read a directory";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), dir.path().string() + ": is a directory, not a JSON file");
    }
}
