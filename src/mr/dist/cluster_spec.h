// Which workers form a multi-worker job and which one this process is. The
// core resolves it (C++ decides, R displays) from, in this order:
//   1. the strategy's `cluster` argument (TF_CONFIG's JSON, as text);
//   2. TF_CONFIG: {"cluster": {"chief": [...]?, "worker": ["host:port", ...]},
//      "task": {"type": "chief"|"worker", "index": i}};
//   3. Slurm's srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the chief's
//      host = the first host of SLURM_STEP_NODELIST (Slurm's compressed
//      hostlist, e.g. "gpu[01-04,07],login2");
//   4. an MPI launcher's rank variables (OMPI_COMM_WORLD_RANK/_SIZE/
//      _LOCAL_RANK/_LOCAL_SIZE, PMI_RANK/PMI_SIZE, PMIX_RANK); mpirun is only
//      the launcher, the chief's address comes from MASTER_ADDR (or loopback
//      when every rank is local);
//   5. torchrun-style MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK;
//   6. Keras 3's KERAS_DISTRIBUTION_JOB_ADDRESSES ("host:port,host:port,...")
//      / _NUM_PROCESSES / _PROCESS_ID.
// For 3-5 the store's port is MASTER_PORT when set, else the default below
// (for Slurm plus SLURM_JOB_ID mod 1000, so that two jobs sharing a node do
// not collide); for 6 it is the port of the first (coordinator's) address.
// Nothing here touches the network: a spec is plain data, checked for
// consistency (Error(value) naming the source and the variable at fault).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mr {

// The store's port when the launcher gives none (torchrun's default too).
constexpr int kDefaultStorePort = 29500;

struct WorkerAddress {
  std::string host;
  int port = 0;             // 0: unknown (launchers that only name hosts)
  std::string str() const;  // "host:port" or "host"
};

struct ClusterSpec {
  // Every worker of the job, in global order: TF_CONFIG's chief first (when
  // it has one), then its workers; a launcher's ranks in rank order. Hosts
  // are known for TF_CONFIG, the argument and Keras' variables when they
  // list every process; for Slurm, MPI, torchrun and Keras' single
  // coordinator address only the chief's host is (the others are filled in
  // at rendezvous), so their entries may have an empty host.
  std::vector<WorkerAddress> workers;
  int index = 0;          // this process's position in `workers`
  std::string task_type;  // "chief" or "worker" (TF_CONFIG's names; launchers: "worker")
  int task_id = 0;        // index within task_type (TF_CONFIG's task.index; a launcher's rank)
  int local_rank = 0;     // among the job's processes on this host (GPU choice)
  std::string source;     // "cluster argument", "TF_CONFIG", "Slurm", "MPI", "torchrun", "Keras"
  WorkerAddress chief;    // where the rendezvous store listens (host:port)
  // The address this worker's collectives bind to: its own entry's host
  // when known, else loopback when the chief is on loopback, else "" (the
  // transport then uses the host name or GLOO_SOCKET_IFNAME).
  std::string bind_host;

  int size() const { return static_cast<int>(workers.size()); }
  bool is_chief() const { return index == 0; }
  // "worker 2 (10.0.0.3:2222)" or "chief (10.0.0.1:2222)": how errors and
  // print() name worker `i`.
  std::string describe(int i) const;
};

// The process environment as name -> value (the glue passes R's
// Sys.getenv(); tests pass their own).
using Environment = std::map<std::string, std::string>;

// The cluster from `cluster_json` (the argument; "" = none) or else the
// environment, in the order above; std::nullopt when nothing describes a
// cluster (a single-worker job). Throws Error(value) for a malformed
// TF_CONFIG / argument, a task index outside the cluster, a task type that
// is neither chief nor worker, inconsistent launcher variables (rank >=
// size, size < 1, non-numbers), or a launcher without the chief's address.
std::optional<ClusterSpec> resolve_cluster(const std::string& cluster_json, const Environment& env);

// The first host of a Slurm hostlist ("gpu[01-04,07],login2" -> "gpu01");
// Error(value) naming the text when it cannot be read.
std::string slurm_first_host(const std::string& hostlist);

}  // namespace mr
