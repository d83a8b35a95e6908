// Atomic writing and validated reading of run files.
#include "harness/run_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {
std::string errno_text() { return std::strerror(errno); }

std::string directory_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}
}  // namespace

void check_writable(const std::string& path) {
  const std::string dir = directory_of(path);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (fs::is_directory(path)) throw std::runtime_error(path + ": is a directory, not a file");
  std::string probe = dir + "/.pairbench-write-test-XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) throw std::runtime_error(path + ": cannot write to directory " + dir + ": " + errno_text());
  close(fd);
  unlink(probe.c_str());
}

void write_json_atomically(const std::string& path, const nlohmann::json& doc) {
  write_text_atomically(path, doc.dump(2) + "\n");
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string dir = directory_of(path);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(path + ": cannot create temporary file: " + errno_text());
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      const std::string why = errno_text();
      close(fd);
      unlink(tmp.c_str());
      throw std::runtime_error(path + ": write failed: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  fchmod(fd, 0644);
  if (fsync(fd) != 0 || close(fd) != 0) {
    const std::string why = errno_text();
    unlink(tmp.c_str());
    throw std::runtime_error(path + ": fsync failed: " + why);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    unlink(tmp.c_str());
    throw std::runtime_error(path + ": rename failed: " + why);
  }
}

std::string utc_stamp(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

nlohmann::json read_run_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open: " + errno_text());
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(buf.str());
  } catch (const nlohmann::json::parse_error& ex) {
    throw std::runtime_error(path + ": not valid JSON (truncated?) at byte " + std::to_string(ex.byte));
  }
  auto fail = [&](const std::string& field, const std::string& problem) {
    throw std::runtime_error(path + ": " + field + ": " + problem);
  };
  if (!doc.is_object()) fail("(top level)", "not a JSON object");
  if (!doc.contains("context") || !doc["context"].is_object()) fail("context", "missing or not an object");
  if (!doc.contains("benchmarks") || !doc["benchmarks"].is_array()) fail("benchmarks", "missing or not an array");
  if (!doc.contains("pairbench") || !doc["pairbench"].is_object()) fail("pairbench", "missing: not a pairbench run file");
  const auto& pb = doc["pairbench"];
  if (!pb.contains("schema_version") || !pb["schema_version"].is_number_integer()) {
    fail("pairbench.schema_version", "missing or not an integer");
  }
  if (pb["schema_version"] != kRunFileSchemaVersion) {
    fail("pairbench.schema_version", "is " + pb["schema_version"].dump() + ", this pairbench reads " +
                                         std::to_string(kRunFileSchemaVersion));
  }
  if (!pb.contains("environment") || !pb["environment"].is_object()) fail("pairbench.environment", "missing or not an object");
  if (!pb.contains("experiments") || !pb["experiments"].is_array()) fail("pairbench.experiments", "missing or not an array");
  for (std::size_t i = 0; i < doc["benchmarks"].size(); ++i) {
    const auto& b = doc["benchmarks"][i];
    const std::string at = "benchmarks[" + std::to_string(i) + "]";
    if (!b.is_object()) fail(at, "not an object");
    if (!b.contains("name") || !b["name"].is_string()) fail(at + ".name", "missing or not a string");
    for (const char* key : {"experiment", "arm"}) {
      if (!b.contains(key) || !b[key].is_string()) fail(at + "." + key, "missing or not a string");
    }
    if (!b.contains("real_time") || !b["real_time"].is_number()) fail(at + ".real_time", "missing or not a number");
    const double t = b["real_time"].get<double>();
    if (!std::isfinite(t) || t <= 0) fail(at + ".real_time", "is " + b["real_time"].dump() + ", must be finite and > 0");
    if (!b.contains("metric_value") || !b["metric_value"].is_number() || !std::isfinite(b["metric_value"].get<double>())) {
      fail(at + ".metric_value", "missing or not a finite number");
    }
  }
  return doc;
}

}  // namespace pairbench::harness
