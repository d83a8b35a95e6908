// The history's queries, written once for both back ends (history_sql.h); its schema and migrations
// in history_schema.cpp.
#include "harness/store/history.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "harness/store/history_schema.h"
#include "harness/store/history_sql.h"
#include "harness/store/run_file.h"
#include "harness/stats/stats.h"

namespace pairbench::harness {
namespace {

using history_schema::deflate_text;
using history_schema::inflate_text;
using history_schema::migrate;
using history_schema::open_postgres_schema;
using history_schema::PackedMedians;
using history_schema::schema_version;
using history_schema::unpack;
using history_schema::values_json;
using sql::Bytes;
using sql::Connection;
using sql::Dialect;
using sql::Transaction;
using sql::Value;

// "?, ?, ?" for `n` placeholders; rows of them for multi-row statements.
std::string placeholders(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s;
}

// Rows per multi-row statement: far below both back ends' parameter limits (SQLite 32766,
// PostgreSQL 65535), few round trips per run.
constexpr std::size_t kRowsPerStatement = 200;

const char* kRunColumns = "id, run_uid, machine_key, machine_kind, started_at, git_sha";

History::RunInfo run_info(const sql::Row& r) {
  return {r.integer(0), r.text(1), r.text(2), r.text(3), r.text(4), r.text(5)};
}

}  // namespace

// --- rows ----------------------------------------------------------------------------------------

namespace sql {
std::int64_t Row::integer(std::size_t i) const {
  const Value& v = columns.at(i);
  if (const auto* n = std::get_if<std::int64_t>(&v)) return *n;
  if (const auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return std::stoll(*s);
  return 0;
}
double Row::real(std::size_t i) const {
  const Value& v = columns.at(i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* n = std::get_if<std::int64_t>(&v)) return static_cast<double>(*n);
  if (const auto* s = std::get_if<std::string>(&v)) return std::stod(*s);
  return 0;
}
std::string Row::text(std::size_t i) const {
  const Value& v = columns.at(i);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* n = std::get_if<std::int64_t>(&v)) return std::to_string(*n);
  if (const auto* d = std::get_if<double>(&v)) return nlohmann::json(*d).dump();
  if (const auto* b = std::get_if<Bytes>(&v)) return b->data;
  return "";
}
const std::string& Row::bytes(std::size_t i) const {
  static const std::string empty;
  const Value& v = columns.at(i);
  if (const auto* b = std::get_if<Bytes>(&v)) return b->data;
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return empty;
}
}  // namespace sql

// --- names ---------------------------------------------------------------------------------------

bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

std::string redact_db(const std::string& db) {
  if (!is_postgres_url(db)) return db;
  std::string out = db;
  // userinfo: between "://" and the first "@" before any "/": user[:password]
  const std::size_t start = out.find("://") + 3;
  const std::size_t at = out.find('@', start);
  const std::size_t slash = out.find('/', start);
  if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
    const std::size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  // a password=... query parameter
  for (std::size_t p = out.find("password=", out.find('?') == std::string::npos ? out.size() : out.find('?'));
       p != std::string::npos; p = out.find("password=", p + 1)) {
    if (p > 0 && out[p - 1] != '?' && out[p - 1] != '&') continue;
    const std::size_t end = out.find('&', p);
    out.replace(p + 9, (end == std::string::npos ? out.size() : end) - (p + 9), "***");
  }
  return out;
}

std::string machine_kind(const nlohmann::json& env) {
  auto text = [&](const char* key) {
    const auto it = env.find(key);
    return it != env.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string gpu = text("gpu_name");
  return gpu.empty() ? text("cpu_model") : gpu;
}

std::string run_identity(const nlohmann::json& doc) {
  const auto& pb = doc.at("pairbench");
  if (const auto it = pb.find("run_id"); it != pb.end() && it->is_string() && !it->get<std::string>().empty()) {
    return it->get<std::string>();
  }
  // FNV-1a over the whole run but its history-write note (nlohmann's dump is canonical: sorted
  // keys), so the same run file is the same run whatever its name or formatting.
  nlohmann::json content = doc;
  content["pairbench"].erase("history_write");
  const std::string key = content.dump();
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : key) hash = (hash ^ c) * 0x100000001b3ull;
  char id[40];
  std::snprintf(id, sizeof id, "derived-%016llx", static_cast<unsigned long long>(hash));
  return id;
}

// --- opening -------------------------------------------------------------------------------------

void History::check_path(const std::string& db) {
  if (is_postgres_url(db)) {
    if (const std::string why = sql::postgres_url_problem(db); !why.empty())
      throw NotAHistory(redact_db(db) + ": " + why);
    return;
  }
  sql::check_sqlite_history(db);
}

History::History(const std::string& db, int busy_timeout_ms) : name_(redact_db(db)) {
  if (is_postgres_url(db)) {
    check_path(db);
    db_ = sql::open_postgres(db, busy_timeout_ms);
    open_postgres_schema(*db_);
    return;
  }
  auto opened = sql::open_sqlite_history(db, busy_timeout_ms, [](Connection& c) { migrate(c, 0); });
  db_ = std::move(opened.connection);
  Transaction t(*db_);
  std::int64_t from = schema_version(*db_);  // again inside the lock: another process may have migrated
  if (opened.identity == sql::SqliteIdentity::kLegacy && from == 0) {
    // A history from before the stamp: ours by its tables, which are the first schema's.
    db_->exec("PRAGMA application_id = " + std::to_string(kHistoryApplicationId));
    from = 1;
  }
  if (from < kHistorySchemaVersion) migrate(*db_, from);
  t.commit();
}

History::~History() = default;

bool History::is_postgres() const { return db_->dialect() == Dialect::kPostgres; }

// --- writing -------------------------------------------------------------------------------------

namespace {

// A run's benchmarks as the history stores them: each one's metric, unit and direction (from the
// run's summary) and its values by repetition. Sorted by name: every writer takes row locks in
// the same order.
struct RunBenchmarks {
  struct Bench {
    std::string experiment, arm;
    std::vector<std::pair<std::int64_t, double>> by_repetition;
  };
  std::map<std::string, std::tuple<std::string, std::string, std::string>> metric_of;  // by experiment
  std::map<std::string, Bench> benches;
};

RunBenchmarks run_benchmarks(const nlohmann::json& doc) {
  RunBenchmarks out;
  for (const auto& e : doc.at("pairbench").at("experiments")) {
    out.metric_of[e.at("name")] = {e.at("metric"), e.at("unit"), e.at("better")};
  }
  for (const auto& b : doc.at("benchmarks")) {
    const std::string experiment = b.at("experiment");
    if (!out.metric_of.count(experiment)) continue;
    RunBenchmarks::Bench& bench = out.benches[b.at("name").get<std::string>()];
    bench.experiment = experiment;
    bench.arm = b.at("arm").get<std::string>();
    bench.by_repetition.emplace_back(b.value("repetition_index", 0), b.at("metric_value").get<double>());
  }
  return out;
}

// Names the run's benchmarks the connection has not seen (`known`) in `benchmarks`, once each;
// returns their ids.
std::unordered_map<std::string, std::int64_t> name_benchmarks(
    Connection& db, const RunBenchmarks& run, const std::unordered_map<std::string, std::int64_t>& known) {
  std::vector<std::string> unknown;
  for (const auto& [name, b] : run.benches) {
    if (!known.count(name)) unknown.push_back(name);
  }
  std::unordered_map<std::string, std::int64_t> ids;
  for (std::size_t i = 0; i < unknown.size(); i += kRowsPerStatement) {
    const std::size_t n = std::min(kRowsPerStatement, unknown.size() - i);
    std::string insert = "INSERT INTO benchmarks(name, experiment, arm, metric, unit, better) VALUES";
    std::vector<Value> params;
    for (std::size_t k = 0; k < n; ++k) {
      const std::string& name = unknown[i + k];
      const RunBenchmarks::Bench& b = run.benches.at(name);
      const auto& [metric, unit, better] = run.metric_of.at(b.experiment);
      insert += k ? ",(?,?,?,?,?,?)" : "(?,?,?,?,?,?)";
      for (const std::string& v : {name, b.experiment, b.arm, metric, unit, better}) params.emplace_back(v);
    }
    db.query(insert + " ON CONFLICT(name) DO NOTHING", params);
    std::vector<Value> names(unknown.begin() + i, unknown.begin() + i + n);
    for (const auto& row : db.query("SELECT id, name FROM benchmarks WHERE name IN (" + placeholders(n) + ")", names)) {
      ids[row.text(1)] = row.integer(0);
    }
  }
  return ids;
}

// The run's values and medians, one row per benchmark, and its medians packed in one row.
void store_run_values(Connection& db, std::int64_t run_id, const RunBenchmarks& run,
                      const std::function<std::int64_t(const std::string&)>& id_of) {
  std::vector<std::string> names;
  for (const auto& [name, b] : run.benches) names.push_back(name);
  std::vector<std::tuple<std::int64_t, double, std::int64_t>> medians;  // (benchmark id, median, samples)
  for (std::size_t i = 0; i < names.size(); i += kRowsPerStatement) {
    const std::size_t n = std::min(kRowsPerStatement, names.size() - i);
    std::string insert = "INSERT INTO run_benchmarks(run_id, benchmark_id, median, samples, sample_values) VALUES";
    std::vector<Value> params;
    for (std::size_t k = 0; k < n; ++k) {
      auto reps = run.benches.at(names[i + k]).by_repetition;
      std::stable_sort(reps.begin(), reps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<double> values;
      for (const auto& r : reps) values.push_back(r.second);
      const std::int64_t id = id_of(names[i + k]);
      const double median = stats::median(values);
      insert += k ? ",(?,?,?,?,?)" : "(?,?,?,?,?)";
      params.insert(params.end(), {run_id, id, median, static_cast<std::int64_t>(values.size()), values_json(values)});
      medians.emplace_back(id, median, static_cast<std::int64_t>(values.size()));
    }
    db.query(insert, params);
  }
  std::sort(medians.begin(), medians.end());
  PackedMedians packed;
  for (const auto& [id, median, n] : medians) packed.add(id, median, n);
  packed.store(db, run_id);
}

}  // namespace

std::int64_t History::append_run(const nlohmann::json& doc, const std::string& run_file, bool* stored_before) {
  const auto& pb = doc.at("pairbench");
  const auto& env = pb.at("environment");
  const RunBenchmarks run = run_benchmarks(doc);
  const std::string uid = run_identity(doc);
  const std::string document = doc.dump();
  const Bytes deflated = deflate_text(document);
  const auto claims = pb.find("claims");
  const Value claims_value = claims != pb.end() && claims->is_array() ? Value(claims->dump()) : Value(nullptr);

  Transaction t(*db_);  // takes the write lock up front: concurrent appenders queue here
  // A run already stored is not stored again, even when two writers race: the unique run_uid
  // decides, and the loser finds the winner's row.
  const auto inserted = db_->query(
      "INSERT INTO runs(started_at, git_sha, machine_key, profile, fingerprint, run_file, run_uid, machine_kind, "
      "claims) "
      "VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(run_uid) DO NOTHING RETURNING id",
      {pb.value("started_at", ""), env.value("git_sha", ""), env.value("machine_key", ""), pb.value("profile", ""),
       env.dump(), run_file, uid, machine_kind(env), claims_value});
  if (inserted.empty()) {
    const std::int64_t id = db_->query("SELECT id FROM runs WHERE run_uid = ?", {uid}).at(0).integer(0);
    // Stored before documents were kept: completed now.
    db_->query("INSERT INTO run_documents(run_id, size, document) VALUES(?,?,?) ON CONFLICT(run_id) DO NOTHING",
               {id, static_cast<std::int64_t>(document.size()), deflated});
    t.commit();
    if (stored_before) *stored_before = true;
    return id;
  }
  const std::int64_t run_id = inserted[0].integer(0);
  // Benchmarks are named once; ids this connection has already seen committed are reused.
  const std::unordered_map<std::string, std::int64_t> ids = name_benchmarks(*db_, run, benchmark_ids_);
  store_run_values(*db_, run_id, run, [&](const std::string& name) {
    const auto known = benchmark_ids_.find(name);
    return known != benchmark_ids_.end() ? known->second : ids.at(name);
  });
  db_->query("INSERT INTO run_documents(run_id, size, document) VALUES(?,?,?)",
             {run_id, static_cast<std::int64_t>(document.size()), deflated});
  t.commit();
  benchmark_ids_.insert(ids.begin(), ids.end());
  if (stored_before) *stored_before = false;
  return run_id;
}

// --- reading -------------------------------------------------------------------------------------

std::vector<History::Series> History::series(const std::string& machine_key, const std::string& benchmark,
                                             int last_runs, bool with_values) {
  // The machine's runs in time order (the last `last_runs` of them): each point's place.
  std::vector<Value> params = {machine_key};
  std::string runs_sql = std::string("SELECT ") + kRunColumns + " FROM runs WHERE machine_key = ?";
  runs_sql += last_runs > 0 ? " ORDER BY started_at DESC, id DESC LIMIT " + std::to_string(last_runs)
                            : " ORDER BY started_at, id";
  std::vector<std::shared_ptr<const RunInfo>> runs;
  for (const auto& row : db_->query(runs_sql, params)) runs.push_back(std::make_shared<const RunInfo>(run_info(row)));
  if (last_runs > 0) std::reverse(runs.begin(), runs.end());
  if (runs.empty()) return {};
  std::unordered_map<std::int64_t, std::size_t> order;
  std::int64_t lowest = runs.front()->id;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    order[runs[i]->id] = i;
    lowest = std::min(lowest, runs[i]->id);
  }

  // Each benchmark's points go to their run's place in time (runs without the benchmark stay
  // empty and are dropped at the end): no sort, and no second copy of millions of points.
  std::unordered_map<std::int64_t, Series> by_id;
  std::string bench_sql = "SELECT id, name, metric, unit, better, experiment FROM benchmarks";
  std::vector<Value> bench_params;
  if (!benchmark.empty()) {
    bench_sql += " WHERE name = ?";
    bench_params.emplace_back(benchmark);
  }
  for (const auto& row : db_->query(bench_sql, bench_params)) {
    by_id[row.integer(0)] = {row.text(1), row.text(2), row.text(3), row.text(4), {}, row.text(5)};
  }
  if (by_id.empty()) return {};

  auto place = [&](std::int64_t run_id, std::int64_t benchmark_id, double median, std::int64_t samples) -> RunPoint* {
    const auto at = order.find(run_id);
    if (at == order.end()) return nullptr;
    const auto b = by_id.find(benchmark_id);
    if (b == by_id.end()) return nullptr;
    auto& points = b->second.points;
    if (points.empty()) points.resize(runs.size(), RunPoint{0, nullptr, 0, 0, {}});
    RunPoint& p = points[at->second];
    p = {run_id, runs[at->second], median, static_cast<int>(samples), {}};
    return &p;
  };
  if (!with_values && benchmark.empty()) {
    // Every benchmark's medians: one packed row per run.
    std::string packed_sql =
        "SELECT m.run_id, m.benchmark_ids, m.medians, m.samples FROM run_medians m "
        "JOIN runs r ON r.id = m.run_id WHERE r.machine_key = ?";
    if (last_runs > 0) {
      packed_sql += " AND r.id >= ?";
      params.emplace_back(lowest);
    }
    db_->for_each_row(packed_sql, params, [&](const sql::Row& row) {
      const auto ids = unpack<std::int32_t>(row.bytes(1));
      const auto medians = unpack<double>(row.bytes(2));
      const auto samples = unpack<std::int32_t>(row.bytes(3));
      if (medians.size() != ids.size() || samples.size() != ids.size()) {
        throw std::runtime_error(name_ + ": run " + std::to_string(row.integer(0)) + ": run_medians is corrupt");
      }
      for (std::size_t k = 0; k < ids.size(); ++k) place(row.integer(0), ids[k], medians[k], samples[k]);
    });
  } else {
    std::string sql = std::string("SELECT rb.run_id, rb.benchmark_id, rb.median, rb.samples") +
                      (with_values ? ", rb.sample_values" : "") +
                      " FROM run_benchmarks rb JOIN runs r ON r.id = rb.run_id WHERE r.machine_key = ?";
    if (!benchmark.empty()) {
      sql += " AND rb.benchmark_id = ?";
      params.emplace_back(by_id.begin()->first);
    }
    if (last_runs > 0) {
      sql += " AND r.id >= ?";  // the window's runs, and later ones dropped below
      params.emplace_back(lowest);
    }
    db_->for_each_row(sql, params, [&](const sql::Row& row) {
      RunPoint* p = place(row.integer(0), row.integer(1), row.real(2), row.integer(3));
      if (p && with_values) p->values = nlohmann::json::parse(row.text(4)).get<std::vector<double>>();
    });
  }
  std::vector<Series> out;
  for (auto& [id, series] : by_id) {
    auto& points = series.points;
    points.erase(std::remove_if(points.begin(), points.end(), [](const RunPoint& p) { return !p.run; }), points.end());
    if (!points.empty()) out.push_back(std::move(series));
  }
  std::sort(out.begin(), out.end(), [](const Series& a, const Series& b) { return a.benchmark < b.benchmark; });
  return out;
}

void History::store_change_points(const std::string& benchmark, const std::string& machine_key,
                                  const std::vector<ChangePoint>& points) {
  store_change_points(machine_key, {{benchmark, points}});
}

void History::store_change_points(const std::string& machine_key,
                                  const std::vector<std::pair<std::string, std::vector<ChangePoint>>>& by_benchmark) {
  Transaction t(*db_);
  for (std::size_t i = 0; i < by_benchmark.size(); i += kRowsPerStatement) {
    const std::size_t n = std::min(kRowsPerStatement, by_benchmark.size() - i);
    std::vector<Value> params = {machine_key};
    for (std::size_t k = 0; k < n; ++k) params.emplace_back(by_benchmark[i + k].first);
    db_->query("DELETE FROM change_points WHERE machine_key = ? AND benchmark IN (" + placeholders(n) + ")", params);
  }
  std::vector<std::tuple<std::string, ChangePoint>> rows;
  for (const auto& [benchmark, points] : by_benchmark) {
    for (const auto& p : points) rows.emplace_back(benchmark, p);
  }
  for (std::size_t i = 0; i < rows.size(); i += kRowsPerStatement) {
    const std::size_t n = std::min(kRowsPerStatement, rows.size() - i);
    std::string insert = "INSERT INTO change_points(benchmark, machine_key, run_id, before, after) VALUES";
    std::vector<Value> params;
    for (std::size_t k = 0; k < n; ++k) {
      const auto& [benchmark, p] = rows[i + k];
      insert += k ? ",(?,?,?,?,?)" : "(?,?,?,?,?)";
      params.insert(params.end(), {benchmark, machine_key, p.run_id, p.before, p.after});
    }
    db_->query(insert, params);
  }
  t.commit();
}

std::vector<History::StoredChangePoint> History::change_points() {
  std::vector<StoredChangePoint> out;
  for (const auto& row : db_->query("SELECT c.machine_key, c.benchmark, r.run_uid, c.before, c.after "
                                    "FROM change_points c JOIN runs r ON r.id = c.run_id "
                                    "ORDER BY c.machine_key, c.benchmark, r.started_at, r.id")) {
    out.push_back({row.text(0), row.text(1), row.text(2), row.real(3), row.real(4)});
  }
  return out;
}

void History::set_baseline(const std::string& machine_key, std::int64_t run_id) {
  db_->query(
      "INSERT INTO baselines(machine_key, run_id, updated_at) VALUES(?,?,?) "
      "ON CONFLICT(machine_key) DO UPDATE SET run_id = excluded.run_id, updated_at = excluded.updated_at",
      {machine_key, run_id, utc_stamp("%Y-%m-%dT%H:%M:%SZ")});
}

std::int64_t History::baseline_run(const std::string& machine_key) {
  const auto rows = db_->query("SELECT run_id FROM baselines WHERE machine_key = ?", {machine_key});
  return rows.empty() ? 0 : rows[0].integer(0);
}

std::int64_t History::run_count() { return db_->query("SELECT count(*) FROM runs").at(0).integer(0); }

std::vector<History::Machine> History::machines() {
  std::map<std::string, Machine> by_key;
  for (const auto& row : db_->query("SELECT machine_key, count(*) FROM runs GROUP BY machine_key")) {
    by_key[row.text(0)] = {row.text(0), "", row.integer(1), {}};
  }
  for (const auto& row : db_->query(std::string("SELECT ") + kRunColumns + " FROM (SELECT " + kRunColumns +
                                    ", ROW_NUMBER() OVER (PARTITION BY machine_key ORDER BY started_at DESC, id DESC) "
                                    "AS n FROM runs) AS latest WHERE n = 1")) {
    Machine& m = by_key[row.text(2)];
    m.last_run = run_info(row);
    m.machine_kind = m.last_run.machine_kind;
  }
  std::vector<Machine> out;
  for (auto& [key, m] : by_key) out.push_back(std::move(m));
  return out;
}

std::vector<History::RunInfo> History::latest_runs_of_commit(const std::string& git_sha) {
  std::vector<RunInfo> out;
  // A prefix of hex digits only, so it can carry no LIKE wildcard.
  const bool hex = !git_sha.empty() && std::all_of(git_sha.begin(), git_sha.end(),
                                                   [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (!hex) return out;
  for (const auto& row :
       db_->query(std::string("SELECT ") + kRunColumns + " FROM (SELECT " + kRunColumns +
                      ", ROW_NUMBER() OVER (PARTITION BY machine_key ORDER BY started_at DESC, id DESC) "
                      "AS n FROM runs WHERE git_sha LIKE ?) AS latest WHERE n = 1 ORDER BY machine_key",
                  {git_sha + "%"})) {
    out.push_back(run_info(row));
  }
  return out;
}

std::optional<History::RunInfo> History::run(std::int64_t run_id) {
  const auto rows = db_->query(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?", {run_id});
  if (rows.empty()) return std::nullopt;
  return run_info(rows[0]);
}

std::optional<History::RunInfo> History::run_by_uid(const std::string& run_uid) {
  const auto rows = db_->query(std::string("SELECT ") + kRunColumns + " FROM runs WHERE run_uid = ?", {run_uid});
  if (rows.empty()) return std::nullopt;
  return run_info(rows[0]);
}

std::optional<nlohmann::json> History::run_document(std::int64_t run_id) {
  const auto rows = db_->query("SELECT size, document FROM run_documents WHERE run_id = ?", {run_id});
  if (rows.empty()) return std::nullopt;
  const std::string what = name_ + ": run " + std::to_string(run_id);
  const auto doc =
      nlohmann::json::parse(inflate_text(rows[0].bytes(1), static_cast<std::size_t>(rows[0].integer(0)), what), nullptr,
                            /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw std::runtime_error(what + ": stored run document is not JSON");
  return doc;
}

std::vector<std::pair<History::RunInfo, nlohmann::json>> History::latest_claims() {
  std::vector<std::pair<RunInfo, nlohmann::json>> out;
  for (const auto& row : db_->query(std::string("SELECT ") + kRunColumns + ", claims FROM (SELECT " + kRunColumns +
                                    ", claims, ROW_NUMBER() OVER (PARTITION BY machine_key ORDER BY started_at DESC, "
                                    "id DESC) AS n FROM runs WHERE claims IS NOT NULL) AS latest WHERE n = 1 "
                                    "ORDER BY machine_key")) {
    auto claims = nlohmann::json::parse(row.text(6), nullptr, /*allow_exceptions=*/false);
    if (claims.is_discarded()) claims = nlohmann::json::array();
    out.emplace_back(run_info(row), std::move(claims));
  }
  return out;
}

// --- regressions ---------------------------------------------------------------------------------

namespace {

constexpr const char* kRegressionColumns =
    "id, machine_key, benchmark, instrument, metric, unit, better, state, last_good_sha, last_good_run, "
    "first_bad_sha, first_bad_run, culprit_sha, change, change_low, change_high, threshold, level_before, "
    "level_after, first_seen_at, first_seen_run, last_seen_at, last_seen_run, times_seen, acknowledged_at, "
    "ack_reason, fixed_at, fixed_run, fixed_reason";

Value number_or_null(double x) { return std::isfinite(x) ? Value(x) : Value(nullptr); }
double real_or_nan(const sql::Row& r, std::size_t i) { return r.null(i) ? std::nan("") : r.real(i); }

History::Regression regression_of(const sql::Row& r) {
  History::Regression g;
  g.id = r.integer(0);
  g.machine_key = r.text(1);
  g.benchmark = r.text(2);
  g.instrument = r.text(3);
  g.metric = r.text(4);
  g.unit = r.text(5);
  g.better = r.text(6);
  g.state = r.text(7);
  g.last_good_sha = r.text(8);
  g.last_good_run = r.text(9);
  g.first_bad_sha = r.text(10);
  g.first_bad_run = r.text(11);
  g.culprit_sha = r.text(12);
  g.change = real_or_nan(r, 13);
  g.change_low = real_or_nan(r, 14);
  g.change_high = real_or_nan(r, 15);
  g.threshold = r.real(16);
  g.level_before = real_or_nan(r, 17);
  g.level_after = real_or_nan(r, 18);
  g.first_seen_at = r.text(19);
  g.first_seen_run = r.text(20);
  g.last_seen_at = r.text(21);
  g.last_seen_run = r.text(22);
  g.times_seen = r.integer(23);
  g.acknowledged_at = r.text(24);
  g.ack_reason = r.text(25);
  g.fixed_at = r.text(26);
  g.fixed_run = r.text(27);
  g.fixed_reason = r.text(28);
  return g;
}

}  // namespace

History::RecordedRegression History::record_regression(const Regression& r) {
  Transaction t(*db_);
  // The partial unique index decides between racing recorders: the loser finds the winner's row.
  const auto inserted = db_->query(
      "INSERT INTO regressions(machine_key, benchmark, instrument, metric, unit, better, state, last_good_sha, "
      "last_good_run, first_bad_sha, first_bad_run, culprit_sha, change, change_low, change_high, threshold, "
      "level_before, level_after, first_seen_at, first_seen_run, last_seen_at, last_seen_run, times_seen) "
      "VALUES(?,?,?,?,?,?,'open',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1) "
      "ON CONFLICT(machine_key, benchmark) WHERE state <> 'fixed' DO NOTHING RETURNING id",
      {r.machine_key,
       r.benchmark,
       r.instrument,
       r.metric,
       r.unit,
       r.better,
       r.last_good_sha,
       r.last_good_run,
       r.first_bad_sha,
       r.first_bad_run,
       r.culprit_sha,
       number_or_null(r.change),
       number_or_null(r.change_low),
       number_or_null(r.change_high),
       r.threshold,
       number_or_null(r.level_before),
       number_or_null(r.level_after),
       r.first_seen_at,
       r.first_seen_run,
       r.first_seen_at,
       r.first_seen_run});
  if (!inserted.empty()) {
    t.commit();
    return {inserted[0].integer(0), true};
  }
  const std::int64_t id = db_->query(
                                 "SELECT id FROM regressions WHERE machine_key = ? AND benchmark = ? AND "
                                 "state <> 'fixed'",
                                 {r.machine_key, r.benchmark})
                              .at(0)
                              .integer(0);
  // Seen again: once per run, however often that run's gate is recorded.
  db_->query(
      "UPDATE regressions SET times_seen = times_seen + CASE WHEN last_seen_run = ? THEN 0 ELSE 1 END, "
      "last_seen_at = ?, last_seen_run = ?, culprit_sha = CASE WHEN ? = '' THEN culprit_sha ELSE ? END "
      "WHERE id = ?",
      {r.first_seen_run, r.first_seen_at, r.first_seen_run, r.culprit_sha, r.culprit_sha, id});
  t.commit();
  return {id, false};
}

std::vector<History::Regression> History::regressions(const std::string& machine_key, bool include_fixed) {
  std::string sql = std::string("SELECT ") + kRegressionColumns + " FROM regressions WHERE 1 = 1";
  std::vector<Value> params;
  if (!machine_key.empty()) {
    sql += " AND machine_key = ?";
    params.emplace_back(machine_key);
  }
  if (!include_fixed) sql += " AND state <> 'fixed'";
  std::vector<Regression> out;
  for (const auto& row : db_->query(sql + " ORDER BY machine_key, id", params)) out.push_back(regression_of(row));
  return out;
}

std::optional<History::Regression> History::regression(std::int64_t id) {
  const auto rows = db_->query(std::string("SELECT ") + kRegressionColumns + " FROM regressions WHERE id = ?", {id});
  if (rows.empty()) return std::nullopt;
  return regression_of(rows[0]);
}

bool History::acknowledge_regression(std::int64_t id, const std::string& reason, const std::string& at) {
  return !db_->query(
                 "UPDATE regressions SET state = 'acknowledged', ack_reason = ?, acknowledged_at = ? "
                 "WHERE id = ? AND state <> 'fixed' RETURNING id",
                 {reason, at, id})
              .empty();
}

void History::fix_regression(std::int64_t id, const std::string& at, const std::string& run,
                             const std::string& reason) {
  db_->query(
      "UPDATE regressions SET state = 'fixed', fixed_at = ?, fixed_run = ?, fixed_reason = ? "
      "WHERE id = ? AND state <> 'fixed'",
      {at, run, reason, id});
}

}  // namespace pairbench::harness
