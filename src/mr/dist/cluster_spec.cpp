// The cluster of a multi-worker job from the `cluster` argument, TF_CONFIG or
// a launcher's variables (see cluster_spec.h for the order).
//
// Rules taken from the tools that define these variables:
//  * TF_CONFIG as TensorFlow's TFConfigClusterResolver and
//    multi_worker_util read it: no "cluster" member (or an empty one) means a
//    single-worker job; with a cluster, "task" must say which task this
//    process is; at most one chief; the chief is global id 0 and worker i is
//    i + (number of chiefs). Unlike TensorFlow, an empty TF_CONFIG ("") is
//    read as unset (TensorFlow's json.loads("") raises): `export TF_CONFIG=`
//    is how shells clear a variable. Task types other than chief and worker
//    (ps, evaluator) are refused: mirrored trains synchronously only.
//  * Keras 3's keras.distribution.initialize(): several comma-separated
//    addresses are one per process (their count must equal the number of
//    processes) and the first is the coordinator's; a single address is the
//    coordinator's alone.
//  * Launchers (Slurm, MPI, torchrun, Keras) with a single process describe
//    no cluster: their variables are also set in ordinary one-process jobs
//    (sbatch with one task, mpirun -np 1, torchrun --nproc-per-node 1), which
//    then train as a single worker exactly as without a launcher. TF_CONFIG
//    and the argument describe a cluster explicitly, so a one-worker cluster
//    from them is still a cluster.
//  * A source that is present but describes no cluster (TF_CONFIG "{}", one
//    Slurm task) hands over to the next source, so that e.g. torchrun inside
//    a one-task Slurm allocation is found.
//
// Error messages name where the fault is: the source's variable, or for JSON
// the member's path in R notation (TF_CONFIG$cluster$worker[2] is the second
// entry of the worker list, as R's jsonlite would index it).
#include "dist/cluster_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/json.h"

namespace mr {

std::string WorkerAddress::str() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return port > 0 ? h + ":" + std::to_string(port) : h;
}

namespace {

const char* const kArgumentSource = "cluster argument";
const char* const kTfConfigSource = "TF_CONFIG";

bool from_json_source(const std::string& source) {
  return source == kArgumentSource || source == kTfConfigSource;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_loopback(const std::string& host) {
  const std::string h = lower(host);
  return h.rfind("127.", 0) == 0 || h == "::1" || h == "localhost";
}

// "\"text\"", shortened so that a long value cannot flood a message.
std::string quoted(const std::string& s) {
  constexpr size_t kMax = 80;
  return "\"" + (s.size() > kMax ? s.substr(0, kMax) + "..." : s) + "\"";
}

// A JSON value as its text in messages.
std::string shown(const Json& v) {
  if (v.is_string()) return quoted(v.get<std::string>());
  std::string text = to_json(v);
  if (text.size() > 80) text = text.substr(0, 80) + "...";
  return text;
}

// The value of an environment variable; unset and empty are both "not set"
// (an empty export is how shells clear a variable).
const std::string* lookup(const Environment& env, const char* name) {
  const auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

// A non-negative decimal integer that fits an int; std::nullopt otherwise.
std::optional<int> parse_nonneg(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  for (const char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoi(s);
}

int env_int(const std::string& source, const char* name, const std::string& value) {
  const std::optional<int> v = parse_nonneg(value);
  if (!v)
    fail(ErrorKind::value, source, ": ", name, " must be a non-negative integer, not ",
         quoted(value));
  return *v;
}

// A variable the source needs.
const std::string& required(const Environment& env, const std::string& source, const char* name,
                            const char* why) {
  const std::string* v = lookup(env, name);
  if (v == nullptr) fail(ErrorKind::value, source, ": ", name, " is not set", why);
  return *v;
}

// "host:port", "[v6]:port". Returns the reason it is not one, or "".
std::string read_address(const std::string& text, WorkerAddress* out) {
  std::string host;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) return "an IPv6 host needs its closing ']'";
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') return "the port is missing";
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) return "the port is missing";
    host = text.substr(0, colon);
    if (host.find(':') != std::string::npos)
      return "an IPv6 host must be written in brackets, as [::1]:2222";
    port = text.substr(colon + 1);
  }
  if (host.empty()) return "the host is empty";
  for (const char c : host)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '[' || c == ']' || c == '/')
      return "the host contains " + std::string(std::isspace(static_cast<unsigned char>(c))
                                                    ? "a space"
                                                    : "'" + std::string(1, c) + "'");
  const std::optional<int> p = parse_nonneg(port);
  if (!p || *p < 1 || *p > 65535) return "the port must be a number in 1..65535";
  out->host = host;
  out->port = *p;
  return "";
}

// Hosts that already appear earlier in `workers`: the local rank of an entry.
int same_host_before(const std::vector<WorkerAddress>& workers, size_t i) {
  int n = 0;
  const std::string h = lower(workers[i].host);
  for (size_t k = 0; k < i; ++k)
    if (lower(workers[k].host) == h) ++n;
  return n;
}

// Two tasks at one address cannot both listen there.
void check_distinct(const std::vector<WorkerAddress>& workers,
                    const std::vector<std::string>& names, const std::string& source) {
  for (size_t i = 0; i < workers.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (workers[i].port == workers[k].port && lower(workers[i].host) == lower(workers[k].host))
        fail(ErrorKind::value, source, ": ", names[i], " repeats the address of ", names[k], " (",
             workers[i].str(), "): every task needs its own host:port");
}

// --------------------------------------------------------------------------
// TF_CONFIG and the argument.

// One "host:port" string member of a task list.
WorkerAddress json_address(const Json& v, const std::string& path) {
  if (!v.is_string())
    fail(ErrorKind::value, path, " must be a \"host:port\" string, not ", shown(v));
  WorkerAddress a;
  const std::string why = read_address(v.get<std::string>(), &a);
  if (!why.empty())
    fail(ErrorKind::value, path, " must be a \"host:port\" string, not ", shown(v), ": ", why);
  return a;
}

std::vector<WorkerAddress> json_task_list(const Json& v, const std::string& path,
                                          std::vector<std::string>* names) {
  if (!v.is_array())
    fail(ErrorKind::value, path, " must be an array of \"host:port\" strings, not ", shown(v));
  std::vector<WorkerAddress> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string name = path + "[" + std::to_string(i + 1) + "]";
    out.push_back(json_address(v[i], name));
    names->push_back(name);
  }
  return out;
}

int json_index(const Json& v, const std::string& path) {
  double d = -1;
  if (v.is_number_integer())
    d = static_cast<double>(v.get<int64_t>());
  else if (v.is_number_float())
    d = v.get<double>();
  else
    fail(ErrorKind::value, path, " must be a non-negative integer, not ", shown(v));
  if (!(d >= 0) || d != static_cast<double>(static_cast<int64_t>(d)) || d > 1e9)
    fail(ErrorKind::value, path, " must be a non-negative integer, not ", shown(v));
  return static_cast<int>(d);
}

std::optional<ClusterSpec> from_tf_config(const std::string& text, const std::string& root,
                                          const std::string& source) {
  const bool blank =
      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c) != 0; });
  if (blank) {
    if (source == kArgumentSource) fail(ErrorKind::value, root, " is blank: give TF_CONFIG's JSON");
    return std::nullopt;
  }
  Json cfg;
  try {
    JsonLimits limits;
    limits.max_bytes = size_t{1} << 20;
    limits.max_depth = 16;
    cfg = parse_json(text, root, limits);
  } catch (const Error& e) {
    // parse_json's "<root>: invalid JSON at byte 3: ..." -> "at byte 3: ...".
    std::string msg = e.what();
    for (const std::string prefix : {root + ": ", std::string("invalid JSON ")})
      if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    fail(ErrorKind::value, root, " is not valid JSON: ", msg);
  }
  if (!cfg.is_object()) fail(ErrorKind::value, root, " must be a JSON object, not ", shown(cfg));
  const bool argument = source == kArgumentSource;
  const auto cluster_it = cfg.find("cluster");
  const bool empty_cluster =
      cluster_it == cfg.end() || (cluster_it->is_object() && cluster_it->empty());
  if (empty_cluster) {
    // TensorFlow: no cluster is a local, single-worker job. The argument is
    // given on purpose, so describing nothing there is a mistake.
    if (argument)
      fail(ErrorKind::value, root, " describes no cluster: it needs ", root,
           "$cluster$worker (and optionally ", root, "$cluster$chief)");
    return std::nullopt;
  }
  const std::string cpath = root + "$cluster";
  if (!cluster_it->is_object())
    fail(ErrorKind::value, cpath, " must be an object with chief and worker lists, not ",
         shown(*cluster_it));
  for (auto it = cluster_it->begin(); it != cluster_it->end(); ++it) {
    const std::string& key = it.key();
    if (key == "chief" || key == "worker") continue;
    if (key == "ps" || key == "evaluator")
      fail(ErrorKind::value, cpath, "$", key,
           ": mirrored trains synchronously with chief and worker tasks only (no parameter servers "
           "or evaluators)");
    fail(ErrorKind::value, cpath, "$", key,
         " is not a task type of mirrored: use chief and worker");
  }

  std::vector<WorkerAddress> workers;
  std::vector<std::string> names;
  const auto chief_it = cluster_it->find("chief");
  const bool has_chief = chief_it != cluster_it->end();
  if (has_chief) {
    workers = json_task_list(*chief_it, cpath + "$chief", &names);
    if (workers.size() != 1)
      fail(ErrorKind::value, cpath, "$chief must hold exactly one \"host:port\" string, not ",
           workers.size());
  }
  const auto worker_it = cluster_it->find("worker");
  const int n_chief = has_chief ? 1 : 0;
  int n_worker = 0;
  if (worker_it != cluster_it->end()) {
    std::vector<WorkerAddress> w = json_task_list(*worker_it, cpath + "$worker", &names);
    n_worker = static_cast<int>(w.size());
    workers.insert(workers.end(), w.begin(), w.end());
  }
  if (workers.empty())
    fail(ErrorKind::value, cpath, " has no chief and no worker: ", cpath,
         "$worker must list at least one \"host:port\"");
  check_distinct(workers, names, source);

  // Which task this process is: TensorFlow requires both with a cluster.
  const std::string tpath = root + "$task";
  const auto task_it = cfg.find("task");
  if (task_it == cfg.end())
    fail(ErrorKind::value, tpath, " is missing: with a cluster, ", root,
         " must say which task this process is (task$type and task$index)");
  if (!task_it->is_object())
    fail(ErrorKind::value, tpath, " must be an object with type and index, not ", shown(*task_it));
  const auto type_it = task_it->find("type");
  if (type_it == task_it->end())
    fail(ErrorKind::value, tpath, "$type is missing: it must be \"chief\" or \"worker\"");
  if (!type_it->is_string())
    fail(ErrorKind::value, tpath, "$type must be \"chief\" or \"worker\", not ", shown(*type_it));
  const std::string type = type_it->get<std::string>();
  if (type == "ps" || type == "evaluator")
    fail(ErrorKind::value, tpath, "$type is \"", type,
         "\": mirrored trains synchronously with chief and worker tasks only");
  if (type != "chief" && type != "worker")
    fail(ErrorKind::value, tpath, "$type must be \"chief\" or \"worker\", not ", shown(*type_it));
  const auto index_it = task_it->find("index");
  if (index_it == task_it->end())
    fail(ErrorKind::value, tpath, "$index is missing: it must be this task's index in ", cpath, "$",
         type);
  const int task_id = json_index(*index_it, tpath + "$index");
  const int count = type == "chief" ? n_chief : n_worker;
  if (task_id >= count) {
    if (count == 0)
      fail(ErrorKind::value, source, ": task type \"", type, "\" has no entry in ", cpath, "$",
           type);
    fail(ErrorKind::value, source, ": task index ", task_id, " is outside the cluster's ", count,
         " ", type, count == 1 ? "" : "s", " (", tpath, "$index counts from 0)");
  }

  ClusterSpec spec;
  spec.workers = std::move(workers);
  spec.index = type == "chief" ? 0 : task_id + n_chief;
  spec.task_type = type;
  spec.task_id = task_id;
  spec.local_rank = same_host_before(spec.workers, static_cast<size_t>(spec.index));
  spec.source = source;
  spec.chief = spec.workers[0];
  spec.bind_host = spec.workers[static_cast<size_t>(spec.index)].host;
  return spec;
}

// --------------------------------------------------------------------------
// Launchers: a rank, a size and the chief's host; the other hosts are learnt
// at rendezvous.

struct Launch {
  std::string source;
  int rank = 0;
  int size = 0;
  int local_rank = 0;
  std::string chief_host;
  int port = kDefaultStorePort;
};

// Checks the rank against the size; throws naming the variables.
void check_rank(const std::string& source, const char* rank_name, int rank, const char* size_name,
                int size) {
  if (size < 1) fail(ErrorKind::value, source, ": ", size_name, " must be at least 1, not ", size);
  if (rank >= size)
    fail(ErrorKind::value, source, ": ", rank_name, " = ", rank, " is outside the job's ", size,
         " processes (", size_name, " = ", size, "; ranks count from 0)");
}

int store_port(const Environment& env, const std::string& source, int fallback) {
  const std::string* p = lookup(env, "MASTER_PORT");
  if (p == nullptr) return fallback;
  const int port = env_int(source, "MASTER_PORT", *p);
  if (port < 1 || port > 65535)
    fail(ErrorKind::value, source, ": MASTER_PORT must be a port in 1..65535, not ", quoted(*p));
  return port;
}

std::optional<ClusterSpec> launched(const Launch& l) {
  if (l.size == 1) return std::nullopt;  // one process: a single-worker job
  ClusterSpec spec;
  spec.workers.resize(static_cast<size_t>(l.size));
  spec.workers[0].host = l.chief_host;  // rank 0 runs where the store listens
  spec.index = l.rank;
  spec.task_type = "worker";  // as TensorFlow's SlurmClusterResolver names ranks
  spec.task_id = l.rank;
  spec.local_rank = l.local_rank;
  spec.source = l.source;
  spec.chief = WorkerAddress{l.chief_host, l.port};
  if (l.rank == 0)
    spec.bind_host = l.chief_host;
  else if (is_loopback(l.chief_host))
    spec.bind_host = "127.0.0.1";
  return spec;
}

// An MPI launcher's rank, size and local rank (Open MPI, MPICH / Intel MPI
// (Hydra), PMIx), with the name of the variable holding this host's rank
// count; std::nullopt when no MPI launcher started this process.
struct MpiRanks {
  Launch launch;
  const char* local_size_name = nullptr;
};

std::optional<MpiRanks> mpi_ranks(const Environment& env) {
  const char* rank_name = nullptr;
  const char* size_name = nullptr;
  const std::string* rank = nullptr;
  const std::string* size = nullptr;
  if ((rank = lookup(env, "OMPI_COMM_WORLD_RANK")) != nullptr) {
    rank_name = "OMPI_COMM_WORLD_RANK";
    size_name = "OMPI_COMM_WORLD_SIZE";
  } else if ((rank = lookup(env, "PMI_RANK")) != nullptr) {
    rank_name = "PMI_RANK";
    size_name = "PMI_SIZE";
  } else if ((rank = lookup(env, "PMIX_RANK")) != nullptr) {
    rank_name = "PMIX_RANK";
    size_name =
        lookup(env, "OMPI_COMM_WORLD_SIZE") != nullptr ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE";
  } else {
    return std::nullopt;
  }
  Launch l;
  l.source = "MPI";
  size = &required(env, l.source, size_name, (std::string(" (") + rank_name + " is)").c_str());
  l.rank = env_int(l.source, rank_name, *rank);
  l.size = env_int(l.source, size_name, *size);
  check_rank(l.source, rank_name, l.rank, size_name, l.size);
  // This host's ranks: Open MPI's, else Hydra's (MPICH, Intel MPI).
  const char* local_rank_name = "OMPI_COMM_WORLD_LOCAL_RANK";
  const char* local_size_name = "OMPI_COMM_WORLD_LOCAL_SIZE";
  if (lookup(env, local_rank_name) == nullptr && lookup(env, local_size_name) == nullptr) {
    local_rank_name = "MPI_LOCALRANKID";
    local_size_name = "MPI_LOCALNRANKS";
  }
  if (const std::string* v = lookup(env, local_rank_name))
    l.local_rank = env_int(l.source, local_rank_name, *v);
  return MpiRanks{l, local_size_name};
}

// Slurm's srun. Present when SLURM_PROCID and SLURM_NTASKS are both set.
// Note: an sbatch script itself also carries them (task 0 of the
// allocation); R must be started by srun for every task to run.
std::optional<Launch> from_slurm(const Environment& env) {
  const std::string* procid = lookup(env, "SLURM_PROCID");
  const std::string* ntasks = lookup(env, "SLURM_NTASKS");
  if (procid == nullptr || ntasks == nullptr) return std::nullopt;
  Launch l;
  l.source = "Slurm";
  l.rank = env_int(l.source, "SLURM_PROCID", *procid);
  l.size = env_int(l.source, "SLURM_NTASKS", *ntasks);
  // mpirun inside a Slurm allocation: its ranks inherit the batch script's
  // (or the launch daemons') SLURM_PROCID and SLURM_NTASKS, which do not
  // number them; the MPI launcher's own variables do. srun with an MPI
  // plugin sets both alike, and then Slurm (with its hostlist) stays first.
  if (const std::optional<MpiRanks> mpi = mpi_ranks(env))
    if (mpi->launch.rank != l.rank || mpi->launch.size != l.size) return std::nullopt;
  check_rank(l.source, "SLURM_PROCID", l.rank, "SLURM_NTASKS", l.size);
  if (const std::string* local = lookup(env, "SLURM_LOCALID"))
    l.local_rank = env_int(l.source, "SLURM_LOCALID", *local);
  if (l.size == 1) return l;
  const char* list_name = nullptr;
  for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"})
    if (lookup(env, name) != nullptr) {
      list_name = name;
      break;
    }
  if (list_name != nullptr) {
    try {
      l.chief_host = slurm_first_host(*lookup(env, list_name));
    } catch (const Error& e) {
      fail(ErrorKind::value, l.source, ": ", list_name, ": ", e.what());
    }
  } else if (const std::string* addr = lookup(env, "MASTER_ADDR")) {
    l.chief_host = *addr;
  } else {
    fail(ErrorKind::value, l.source,
         ": SLURM_STEP_NODELIST is not set (nor SLURM_JOB_NODELIST, SLURM_NODELIST or "
         "MASTER_ADDR): the chief's host is unknown; start R with srun");
  }
  // Two jobs sharing a node must not both listen on one port: the default
  // moves with the job id (29500 + id mod 1000).
  int fallback = kDefaultStorePort;
  if (const std::string* job = lookup(env, "SLURM_JOB_ID")) {
    if (const std::optional<int> id = parse_nonneg(*job)) fallback += *id % 1000;
  }
  l.port = store_port(env, l.source, fallback);
  return l;
}

// mpirun as a launcher; the chief's host from MASTER_ADDR.
std::optional<Launch> from_mpi(const Environment& env) {
  std::optional<MpiRanks> ranks = mpi_ranks(env);
  if (!ranks) return std::nullopt;
  Launch& l = ranks->launch;
  const char* local_size_name = ranks->local_size_name;
  if (l.size == 1) return l;
  if (const std::string* addr = lookup(env, "MASTER_ADDR")) {
    l.chief_host = *addr;
  } else {
    const std::string* local_size = lookup(env, local_size_name);
    if (local_size != nullptr && env_int(l.source, local_size_name, *local_size) == l.size) {
      l.chief_host = "127.0.0.1";  // every rank runs on this host
    } else {
      fail(ErrorKind::value, l.source,
           ": MASTER_ADDR is not set and the ranks are not all on this host: export the host of "
           "rank 0 to every rank (mpirun -x MASTER_ADDR=<host of rank 0>)");
    }
  }
  l.port = store_port(env, l.source, kDefaultStorePort);
  return l;
}

// torchrun (and anything else writing PyTorch's env:// variables). Present
// when WORLD_SIZE is set, or RANK together with MASTER_ADDR (RANK alone is too
// common a name to claim).
std::optional<Launch> from_torchrun(const Environment& env) {
  const bool present = lookup(env, "WORLD_SIZE") != nullptr ||
                       (lookup(env, "RANK") != nullptr && lookup(env, "MASTER_ADDR") != nullptr);
  if (!present) return std::nullopt;
  Launch l;
  l.source = "torchrun";
  l.rank = env_int(l.source, "RANK", required(env, l.source, "RANK", " (WORLD_SIZE is)"));
  l.size = env_int(l.source, "WORLD_SIZE", required(env, l.source, "WORLD_SIZE", " (RANK is)"));
  check_rank(l.source, "RANK", l.rank, "WORLD_SIZE", l.size);
  if (const std::string* v = lookup(env, "LOCAL_RANK"))
    l.local_rank = env_int(l.source, "LOCAL_RANK", *v);
  if (l.size == 1) return l;
  l.chief_host = required(env, l.source, "MASTER_ADDR", ": the chief's host is unknown");
  l.port = store_port(env, l.source, kDefaultStorePort);
  return l;
}

// Keras 3's keras.distribution.initialize() variables.
std::optional<ClusterSpec> from_keras(const Environment& env) {
  const char* const kAddr = "KERAS_DISTRIBUTION_JOB_ADDRESSES";
  const char* const kNum = "KERAS_DISTRIBUTION_NUM_PROCESSES";
  const char* const kId = "KERAS_DISTRIBUTION_PROCESS_ID";
  const std::string* addresses = lookup(env, kAddr);
  const std::string* num = lookup(env, kNum);
  const std::string* id = lookup(env, kId);
  if (addresses == nullptr && num == nullptr && id == nullptr) return std::nullopt;
  const std::string source = "Keras";
  if (addresses == nullptr)
    fail(ErrorKind::value, source, ": ", kAddr, " is not set (", num != nullptr ? kNum : kId,
         " is): it names the coordinator's \"host:port\"");
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t comma = addresses->find(',', start);
    parts.push_back(addresses->substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<WorkerAddress> listed;
  std::vector<std::string> names;
  for (size_t i = 0; i < parts.size(); ++i) {
    WorkerAddress a;
    const std::string why = read_address(parts[i], &a);
    const std::string name = std::string(kAddr) + " entry " + std::to_string(i + 1);
    if (!why.empty())
      fail(ErrorKind::value, source, ": ", name, " must be a \"host:port\", not ", quoted(parts[i]),
           ": ", why);
    listed.push_back(a);
    names.push_back(name);
  }
  const int process_id =
      env_int(source, kId, required(env, source, kId, " (it says which process this is)"));
  int size = 0;
  if (num != nullptr) {
    size = env_int(source, kNum, *num);
    if (listed.size() > 1 && size != static_cast<int>(listed.size()))
      fail(ErrorKind::value, source, ": ", kAddr, " has ", listed.size(), " addresses but ", kNum,
           " is ", size);
  } else if (listed.size() > 1) {
    size = static_cast<int>(listed.size());
  } else {
    required(env, source, kNum, ": with a single (coordinator) address it gives the job's size");
  }
  check_rank(source, kId, process_id, kNum, size);
  if (size == 1) return std::nullopt;
  check_distinct(listed, names, source);

  ClusterSpec spec;
  spec.index = process_id;
  spec.task_type = "worker";
  spec.task_id = process_id;
  spec.source = source;
  spec.chief = listed[0];
  if (listed.size() > 1) {
    spec.workers = listed;
    spec.local_rank = same_host_before(spec.workers, static_cast<size_t>(process_id));
    spec.bind_host = spec.workers[static_cast<size_t>(process_id)].host;
  } else {
    spec.workers.resize(static_cast<size_t>(size));
    spec.workers[0] = listed[0];
    if (process_id == 0)
      spec.bind_host = listed[0].host;
    else if (is_loopback(listed[0].host))
      spec.bind_host = "127.0.0.1";
  }
  return spec;
}

}  // namespace

std::string ClusterSpec::describe(int i) const {
  if (i < 0 || i >= size()) return "worker " + std::to_string(i);
  // TF_CONFIG's chief entry leaves the process's index one above its task
  // id; a launcher's rank 0 is always the chief.
  const bool chief_entry = !from_json_source(source) || task_type == "chief" || index != task_id;
  if (i == 0 && chief_entry) return "chief (" + chief.str() + ")";
  const WorkerAddress& w = workers[static_cast<size_t>(i)];
  const int id = from_json_source(source) && chief_entry ? i - 1 : i;
  std::string out = "worker " + std::to_string(id);
  if (!w.host.empty()) out += " (" + w.str() + ")";
  return out;
}

std::optional<ClusterSpec> resolve_cluster(const std::string& cluster_json,
                                           const Environment& env) {
  if (!cluster_json.empty()) return from_tf_config(cluster_json, "cluster", kArgumentSource);
  if (const std::string* tf = lookup(env, "TF_CONFIG"))
    if (auto spec = from_tf_config(*tf, "TF_CONFIG", kTfConfigSource)) return spec;
  for (auto from : {from_slurm, from_mpi, from_torchrun})
    if (const std::optional<Launch> l = from(env))
      if (auto spec = launched(*l)) return spec;
  return from_keras(env);
}

// --------------------------------------------------------------------------
// Slurm hostlists: comma-separated entries, each a name with bracketed
// groups of numbers and ranges ("gpu[01-04,07]", "rack[1-2]-n[01-08]");
// numbers keep their zero padding.
std::string slurm_first_host(const std::string& hostlist) {
  const auto bad = [&](const std::string& why) {
    fail(ErrorKind::value, "the Slurm hostlist ", quoted(hostlist), " cannot be read: ", why);
  };
  if (hostlist.empty()) bad("it is empty");
  std::string first;
  bool in_first = true;
  bool in_bracket = false;
  bool first_range_item = false;  // inside a group, before its first ',' or '-'
  bool group_has_digit = false;
  bool item_has_digit = false;
  std::string lo;
  std::string hi;
  bool in_hi = false;
  size_t entry_len = 0;
  const auto close_item = [&]() {
    if (!item_has_digit) bad("a bracketed group has an empty item");
    if (in_hi) {
      if (hi.empty()) bad("a range has no upper end");
      if (std::stoull(hi) < std::stoull(lo)) bad("the range " + lo + "-" + hi + " runs backwards");
    }
    lo.clear();
    hi.clear();
    in_hi = false;
    item_has_digit = false;
  };
  for (size_t i = 0; i < hostlist.size(); ++i) {
    const char c = hostlist[i];
    if (in_bracket) {
      if (c >= '0' && c <= '9') {
        (in_hi ? hi : lo) += c;
        if (lo.size() > 18 || hi.size() > 18) bad("a number is too long");
        item_has_digit = true;
        group_has_digit = true;
        if (in_first && first_range_item) first += c;
      } else if (c == '-') {
        if (in_hi || lo.empty()) bad("a range needs a number on each side of '-'");
        in_hi = true;
        first_range_item = false;
      } else if (c == ',') {
        close_item();
        first_range_item = false;
      } else if (c == ']') {
        close_item();
        if (!group_has_digit) bad("a bracketed group is empty");
        in_bracket = false;
      } else {
        bad(std::string("'") + c + "' inside brackets (only numbers, '-' and ',')");
      }
      continue;
    }
    if (c == '[') {
      if (entry_len == 0) bad("a host name starts with '['");
      in_bracket = true;
      first_range_item = true;
      group_has_digit = false;
    } else if (c == ']') {
      bad("']' without '['");
    } else if (c == ',') {
      if (entry_len == 0) bad("it has an empty host name");
      in_first = false;
      entry_len = 0;
      continue;
    } else if (std::isspace(static_cast<unsigned char>(c)) ||
               !std::isprint(static_cast<unsigned char>(c))) {
      bad("it contains a space or a control character");
    } else if (in_first) {
      first += c;
    }
    ++entry_len;
  }
  if (in_bracket) bad("a '[' is not closed");
  if (entry_len == 0) bad("it ends with an empty host name");
  return first;
}

}  // namespace mr
