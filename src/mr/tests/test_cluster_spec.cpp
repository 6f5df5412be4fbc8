// The cluster of a multi-worker job: every source (argument, TF_CONFIG,
// Slurm, MPI, torchrun, Keras), their precedence, the errors and their
// messages, and Slurm's hostlist syntax. The expected values follow
// TensorFlow's TF_CONFIG rules (chief = global id 0, worker i = i + chiefs),
// Keras' keras.distribution.initialize() and the launchers' documentation.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "dist/cluster_spec.h"

namespace mr {
namespace {

const char* const kTwoWorkers =
    R"({"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]}, "task": {"type": "worker", "index": 1}})";

// The message of the Error(value) that resolving throws; fails the test when
// it throws nothing or another kind.
std::string error_of(const std::string& json, const Environment& env) {
  try {
    resolve_cluster(json, env);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for " << json;
  return "";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(ClusterSpec, NothingDescribesNoCluster) {
  EXPECT_FALSE(resolve_cluster("", {}).has_value());
  EXPECT_FALSE(resolve_cluster("", {{"HOME", "/root"}, {"RANK", "3"}}).has_value());
  // TensorFlow: TF_CONFIG without "cluster" (or with an empty one) is a
  // local job; an empty TF_CONFIG reads as unset.
  EXPECT_FALSE(resolve_cluster("", {{"TF_CONFIG", "{}"}}).has_value());
  EXPECT_FALSE(resolve_cluster("", {{"TF_CONFIG", ""}}).has_value());
  EXPECT_FALSE(resolve_cluster("", {{"TF_CONFIG", " \n"}}).has_value());
  EXPECT_FALSE(resolve_cluster("", {{"TF_CONFIG", R"({"task": {"type": "worker", "index": 0}})"}})
                   .has_value());
  EXPECT_FALSE(resolve_cluster("", {{"TF_CONFIG", R"({"cluster": {}})"}}).has_value());
  // One launched process is a single-worker job.
  EXPECT_FALSE(resolve_cluster("", {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}).has_value());
  EXPECT_FALSE(resolve_cluster("", {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}})
                   .has_value());
  EXPECT_FALSE(resolve_cluster("", {{"RANK", "0"}, {"WORLD_SIZE", "1"}}).has_value());
  EXPECT_FALSE(resolve_cluster("", {{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1"},
                                    {"KERAS_DISTRIBUTION_NUM_PROCESSES", "1"},
                                    {"KERAS_DISTRIBUTION_PROCESS_ID", "0"}})
                   .has_value());
}

TEST(ClusterSpec, TfConfigWorkersOnly) {
  const auto spec = resolve_cluster("", {{"TF_CONFIG", kTwoWorkers}});
  ASSERT_TRUE(spec.has_value());
  ASSERT_EQ(spec->size(), 2);
  EXPECT_EQ(spec->workers[0].host, "10.0.0.1");
  EXPECT_EQ(spec->workers[1].port, 2222);
  EXPECT_EQ(spec->index, 1);
  EXPECT_FALSE(spec->is_chief());
  EXPECT_EQ(spec->task_type, "worker");
  EXPECT_EQ(spec->task_id, 1);
  EXPECT_EQ(spec->local_rank, 0);
  EXPECT_EQ(spec->source, "TF_CONFIG");
  EXPECT_EQ(spec->chief.str(), "10.0.0.1:2222");
  EXPECT_EQ(spec->bind_host, "10.0.0.2");
  // Without a chief entry worker 0 leads but keeps its TF_CONFIG name.
  EXPECT_EQ(spec->describe(0), "worker 0 (10.0.0.1:2222)");
  EXPECT_EQ(spec->describe(1), "worker 1 (10.0.0.2:2222)");
}

TEST(ClusterSpec, TfConfigChiefComesFirst) {
  const std::string cfg =
      R"({"cluster": {"worker": ["localhost:2001", "localhost:2002"], "chief": ["localhost:2000"]},)"
      R"( "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})";
  const auto spec = resolve_cluster("", {{"TF_CONFIG", cfg}});
  ASSERT_TRUE(spec.has_value());
  ASSERT_EQ(spec->size(), 3);
  EXPECT_EQ(spec->workers[0].port, 2000);
  EXPECT_EQ(spec->workers[2].port, 2002);
  EXPECT_EQ(spec->index, 2);  // worker 1 is global id 1 + 1 chief
  EXPECT_EQ(spec->task_id, 1);
  EXPECT_EQ(spec->local_rank, 2);  // two tasks on localhost before it
  EXPECT_EQ(spec->chief.port, 2000);
  EXPECT_EQ(spec->bind_host, "localhost");
  EXPECT_EQ(spec->describe(0), "chief (localhost:2000)");
  EXPECT_EQ(spec->describe(1), "worker 0 (localhost:2001)");
  EXPECT_EQ(spec->describe(2), "worker 1 (localhost:2002)");

  const std::string as_chief =
      R"({"cluster": {"chief": ["localhost:2000"], "worker": ["localhost:2001"]}, "task": {"type": "chief", "index": 0}})";
  const auto chief = resolve_cluster("", {{"TF_CONFIG", as_chief}});
  ASSERT_TRUE(chief.has_value());
  EXPECT_EQ(chief->index, 0);
  EXPECT_TRUE(chief->is_chief());
  EXPECT_EQ(chief->task_type, "chief");
  EXPECT_EQ(chief->describe(0), "chief (localhost:2000)");
  EXPECT_EQ(chief->describe(1), "worker 0 (localhost:2001)");
}

TEST(ClusterSpec, OneWorkerClusterAndIpv6) {
  const auto one = resolve_cluster(
      "",
      {{"TF_CONFIG",
        R"({"cluster": {"worker": ["[::1]:2222"]}, "task": {"type": "worker", "index": 0.0}})"}});
  ASSERT_TRUE(one.has_value());  // an explicit cluster of one is still a cluster
  EXPECT_EQ(one->size(), 1);
  EXPECT_EQ(one->workers[0].host, "::1");
  EXPECT_EQ(one->workers[0].port, 2222);
  EXPECT_EQ(one->workers[0].str(), "[::1]:2222");
  EXPECT_EQ(one->describe(0), "worker 0 ([::1]:2222)");
  // A chief alone (TensorFlow accepts it) is a one-worker cluster too.
  const auto chief = resolve_cluster(
      "",
      {{"TF_CONFIG", R"({"cluster": {"chief": ["h:1"]}, "task": {"type": "chief", "index": 0}})"}});
  ASSERT_TRUE(chief.has_value());
  EXPECT_EQ(chief->size(), 1);
  EXPECT_EQ(chief->describe(0), "chief (h:1)");
}

TEST(ClusterSpec, ArgumentWinsOverEverything) {
  const std::string arg =
      R"({"cluster": {"worker": ["a:1", "b:2", "c:3"]}, "task": {"type": "worker", "index": 2}})";
  const Environment env = {{"TF_CONFIG", kTwoWorkers},
                           {"SLURM_PROCID", "1"},
                           {"SLURM_NTASKS", "4"},
                           {"SLURM_STEP_NODELIST", "n[1-4]"}};
  const auto spec = resolve_cluster(arg, env);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->source, "cluster argument");
  EXPECT_EQ(spec->size(), 3);
  EXPECT_EQ(spec->index, 2);
  EXPECT_EQ(spec->bind_host, "c");
  // The argument must describe a cluster: it is given on purpose.
  EXPECT_HAS(error_of("{}", env), "cluster describes no cluster");
  EXPECT_HAS(error_of("  ", env), "cluster is blank");
}

TEST(ClusterSpec, PrecedenceOrder) {
  Environment env = {{"TF_CONFIG", kTwoWorkers},
                     {"SLURM_PROCID", "2"},
                     {"SLURM_NTASKS", "3"},
                     {"SLURM_STEP_NODELIST", "n[1-3]"},
                     {"OMPI_COMM_WORLD_RANK", "2"},  // as srun with an MPI plugin: like Slurm's
                     {"OMPI_COMM_WORLD_SIZE", "3"},
                     {"MASTER_ADDR", "m0"},
                     {"RANK", "4"},
                     {"WORLD_SIZE", "5"},
                     {"KERAS_DISTRIBUTION_JOB_ADDRESSES", "k0:1"},
                     {"KERAS_DISTRIBUTION_NUM_PROCESSES", "6"},
                     {"KERAS_DISTRIBUTION_PROCESS_ID", "5"}};
  const char* expected[] = {"TF_CONFIG", "Slurm", "MPI", "torchrun", "Keras"};
  const int sizes[] = {2, 3, 3, 5, 6};
  const char* drop[][3] = {{"TF_CONFIG", "", ""},
                           {"SLURM_PROCID", "", ""},
                           {"OMPI_COMM_WORLD_RANK", "", ""},
                           {"RANK", "WORLD_SIZE", "MASTER_ADDR"}};
  for (int k = 0; k < 5; ++k) {
    const auto spec = resolve_cluster("", env);
    ASSERT_TRUE(spec.has_value()) << k;
    EXPECT_EQ(spec->source, expected[k]);
    EXPECT_EQ(spec->size(), sizes[k]);
    if (k < 4)
      for (const char* name : drop[k]) env.erase(name);
  }
  // A source present without a cluster hands over to the next one.
  const auto next = resolve_cluster("", {{"TF_CONFIG", "{}"},
                                         {"SLURM_PROCID", "0"},
                                         {"SLURM_NTASKS", "1"},
                                         {"RANK", "1"},
                                         {"WORLD_SIZE", "2"},
                                         {"MASTER_ADDR", "127.0.0.1"}});
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->source, "torchrun");
}

TEST(ClusterSpec, Slurm) {
  Environment env = {
      {"SLURM_PROCID", "3"},           {"SLURM_NTASKS", "8"},
      {"SLURM_LOCALID", "1"},          {"SLURM_STEP_NODELIST", "gpu[01-04,07],login2"},
      {"SLURM_JOB_NODELIST", "other"}, {"SLURM_JOB_ID", "123456"}};
  auto spec = resolve_cluster("", env);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->source, "Slurm");
  EXPECT_EQ(spec->size(), 8);
  EXPECT_EQ(spec->index, 3);
  EXPECT_EQ(spec->task_type, "worker");
  EXPECT_EQ(spec->task_id, 3);
  EXPECT_EQ(spec->local_rank, 1);
  EXPECT_EQ(spec->workers[0].host, "gpu01");
  EXPECT_EQ(spec->workers[3].host, "");  // learnt at rendezvous
  EXPECT_EQ(spec->chief.host, "gpu01");
  EXPECT_EQ(spec->chief.port, kDefaultStorePort + 456);  // job id 123456 mod 1000
  EXPECT_EQ(spec->bind_host, "");                        // the chief is not on loopback
  EXPECT_EQ(spec->describe(0), "chief (gpu01:29956)");
  EXPECT_EQ(spec->describe(3), "worker 3");

  env["MASTER_PORT"] = "4000";
  env.erase("SLURM_STEP_NODELIST");  // the job's list comes next
  spec = resolve_cluster("", env);
  EXPECT_EQ(spec->chief.str(), "other:4000");
  env.erase("MASTER_PORT");
  env["SLURM_JOB_ID"] = "abc";
  EXPECT_EQ(resolve_cluster("", env)->chief.port, kDefaultStorePort);
  env.erase("SLURM_JOB_NODELIST");
  env["SLURM_NODELIST"] = "127.0.0.1";
  spec = resolve_cluster("", env);
  EXPECT_EQ(spec->chief.host, "127.0.0.1");
  EXPECT_EQ(spec->bind_host, "127.0.0.1");  // chief on loopback
  env["SLURM_PROCID"] = "0";
  EXPECT_EQ(resolve_cluster("", env)->bind_host, "127.0.0.1");  // its own host
  EXPECT_EQ(resolve_cluster("", env)->describe(0), "chief (127.0.0.1:29500)");
}

TEST(ClusterSpec, SlurmErrors) {
  Environment env = {{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "n1"}};
  std::string msg = error_of("", env);
  EXPECT_HAS(msg, "SLURM_PROCID = 2 is outside the job's 2 processes");
  EXPECT_HAS(msg, "SLURM_NTASKS");
  env["SLURM_PROCID"] = "-1";
  msg = error_of("", env);
  EXPECT_HAS(msg, "Slurm: SLURM_PROCID must be a non-negative integer, not \"-1\"");
  env["SLURM_PROCID"] = "0";
  env["SLURM_NTASKS"] = "two";
  EXPECT_HAS(error_of("", env), "SLURM_NTASKS must be a non-negative integer, not \"two\"");
  env["SLURM_NTASKS"] = "0";
  EXPECT_HAS(error_of("", env), "SLURM_NTASKS must be at least 1, not 0");
  env["SLURM_NTASKS"] = "2";
  env["SLURM_LOCALID"] = "x";
  EXPECT_HAS(error_of("", env), "SLURM_LOCALID must be a non-negative integer, not \"x\"");
  env.erase("SLURM_LOCALID");
  env["SLURM_STEP_NODELIST"] = "n[1-";
  msg = error_of("", env);
  EXPECT_HAS(msg, "SLURM_STEP_NODELIST");
  EXPECT_HAS(msg, "\"n[1-\"");
  env["MASTER_PORT"] = "70000";
  env["SLURM_STEP_NODELIST"] = "n1";
  EXPECT_HAS(error_of("", env), "MASTER_PORT must be a port in 1..65535, not \"70000\"");
  env.erase("MASTER_PORT");
  env.erase("SLURM_STEP_NODELIST");
  EXPECT_HAS(error_of("", env), "SLURM_STEP_NODELIST is not set");
  env["MASTER_ADDR"] = "head";  // the last resort for the chief's host
  EXPECT_EQ(resolve_cluster("", env)->chief.host, "head");
}

TEST(ClusterSpec, Mpi) {
  // Open MPI, every rank on this host: the chief is on loopback.
  Environment env = {{"OMPI_COMM_WORLD_RANK", "1"},
                     {"OMPI_COMM_WORLD_SIZE", "3"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}};
  auto spec = resolve_cluster("", env);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->source, "MPI");
  EXPECT_EQ(spec->size(), 3);
  EXPECT_EQ(spec->index, 1);
  EXPECT_EQ(spec->local_rank, 1);
  EXPECT_EQ(spec->chief.str(), "127.0.0.1:29500");
  EXPECT_EQ(spec->bind_host, "127.0.0.1");
  // Across hosts MASTER_ADDR is needed.
  env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  std::string msg = error_of("", env);
  EXPECT_HAS(msg, "MPI: MASTER_ADDR is not set");
  EXPECT_HAS(msg, "mpirun -x MASTER_ADDR=");
  env["MASTER_ADDR"] = "node7";
  env["MASTER_PORT"] = "1234";
  EXPECT_EQ(resolve_cluster("", env)->chief.str(), "node7:1234");

  // MPICH / Intel MPI (Hydra).
  spec = resolve_cluster(
      "",
      {{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}});
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->size(), 2);
  EXPECT_EQ(spec->bind_host, "127.0.0.1");
  EXPECT_EQ(spec->describe(0), "chief (127.0.0.1:29500)");
  EXPECT_EQ(spec->describe(1), "worker 1");
  // PMIx rank with the size from Open MPI or PMI.
  spec = resolve_cluster("", {{"PMIX_RANK", "2"}, {"PMI_SIZE", "4"}, {"MASTER_ADDR", "h0"}});
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->index, 2);
  EXPECT_EQ(spec->size(), 4);

  // mpirun inside a Slurm allocation: every rank inherits the batch
  // script's SLURM_PROCID = 0, so the MPI variables number the ranks...
  Environment in_slurm = {{"SLURM_PROCID", "0"},
                          {"SLURM_NTASKS", "4"},
                          {"SLURM_JOB_NODELIST", "n[1-2]"},
                          {"OMPI_COMM_WORLD_RANK", "3"},
                          {"OMPI_COMM_WORLD_SIZE", "4"},
                          {"MASTER_ADDR", "n1"}};
  spec = resolve_cluster("", in_slurm);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->source, "MPI");
  EXPECT_EQ(spec->index, 3);
  // ...while srun with an MPI plugin sets both alike and Slurm stays first.
  in_slurm["SLURM_PROCID"] = "3";
  spec = resolve_cluster("", in_slurm);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->source, "Slurm");
  EXPECT_EQ(spec->chief.host, "n1");

  EXPECT_HAS(error_of("", {{"PMI_RANK", "0"}}), "MPI: PMI_SIZE is not set");
  EXPECT_HAS(error_of("", {{"PMIX_RANK", "0"}}), "PMI_SIZE is not set");
  EXPECT_HAS(error_of("", {{"PMI_RANK", "5"}, {"PMI_SIZE", "4"}, {"MASTER_ADDR", "h"}}),
             "PMI_RANK = 5 is outside the job's 4 processes (PMI_SIZE = 4");
  EXPECT_HAS(error_of("", {{"OMPI_COMM_WORLD_RANK", "1.5"}, {"OMPI_COMM_WORLD_SIZE", "4"}}),
             "OMPI_COMM_WORLD_RANK must be a non-negative integer, not \"1.5\"");
}

TEST(ClusterSpec, Torchrun) {
  Environment env = {{"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", "29400"},
                     {"RANK", "2"},
                     {"WORLD_SIZE", "4"},
                     {"LOCAL_RANK", "2"}};
  auto spec = resolve_cluster("", env);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->source, "torchrun");
  EXPECT_EQ(spec->size(), 4);
  EXPECT_EQ(spec->index, 2);
  EXPECT_EQ(spec->task_id, 2);
  EXPECT_EQ(spec->local_rank, 2);
  EXPECT_EQ(spec->chief.str(), "127.0.0.1:29400");
  EXPECT_EQ(spec->bind_host, "127.0.0.1");
  env.erase("MASTER_PORT");
  EXPECT_EQ(resolve_cluster("", env)->chief.port, kDefaultStorePort);
  // RANK alone is too common a name to mean torchrun.
  EXPECT_FALSE(resolve_cluster("", {{"RANK", "1"}}).has_value());

  EXPECT_HAS(error_of("", {{"WORLD_SIZE", "2"}}), "torchrun: RANK is not set");
  EXPECT_HAS(error_of("", {{"WORLD_SIZE", "2"}, {"RANK", "1"}}),
             "torchrun: MASTER_ADDR is not set");
  EXPECT_HAS(error_of("", {{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "h"}}),
             "RANK = 2 is outside the job's 2 processes (WORLD_SIZE = 2");
  EXPECT_HAS(
      error_of("",
               {{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "h"}, {"LOCAL_RANK", "-1"}}),
      "LOCAL_RANK must be a non-negative integer, not \"-1\"");
  EXPECT_HAS(
      error_of("",
               {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "p"}}),
      "torchrun: MASTER_PORT must be a non-negative integer, not \"p\"");
}

TEST(ClusterSpec, Keras) {
  // Several addresses: one per process, the first the coordinator's.
  Environment env = {
      {"KERAS_DISTRIBUTION_JOB_ADDRESSES", "10.0.0.1:1234,10.0.0.2:2345,10.0.0.2:2346"},
      {"KERAS_DISTRIBUTION_PROCESS_ID", "2"}};
  auto spec = resolve_cluster("", env);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->source, "Keras");
  EXPECT_EQ(spec->size(), 3);
  EXPECT_EQ(spec->index, 2);
  EXPECT_EQ(spec->local_rank, 1);
  EXPECT_EQ(spec->chief.str(), "10.0.0.1:1234");
  EXPECT_EQ(spec->bind_host, "10.0.0.2");
  EXPECT_EQ(spec->describe(0), "chief (10.0.0.1:1234)");
  EXPECT_EQ(spec->describe(2), "worker 2 (10.0.0.2:2346)");
  env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "2";
  std::string msg = error_of("", env);
  EXPECT_HAS(
      msg,
      "KERAS_DISTRIBUTION_JOB_ADDRESSES has 3 addresses but KERAS_DISTRIBUTION_NUM_PROCESSES is 2");

  // One address: the coordinator's alone.
  spec = resolve_cluster("", {{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "localhost:1234"},
                              {"KERAS_DISTRIBUTION_NUM_PROCESSES", "2"},
                              {"KERAS_DISTRIBUTION_PROCESS_ID", "1"}});
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->size(), 2);
  EXPECT_EQ(spec->workers[0].str(), "localhost:1234");
  EXPECT_EQ(spec->workers[1].str(), "");
  EXPECT_EQ(spec->bind_host, "127.0.0.1");
  EXPECT_EQ(spec->describe(1), "worker 1");

  EXPECT_HAS(error_of("", {{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1"},
                           {"KERAS_DISTRIBUTION_PROCESS_ID", "0"}}),
             "KERAS_DISTRIBUTION_NUM_PROCESSES is not set");
  EXPECT_HAS(error_of("", {{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1,g:2"}}),
             "KERAS_DISTRIBUTION_PROCESS_ID is not set");
  EXPECT_HAS(error_of("", {{"KERAS_DISTRIBUTION_PROCESS_ID", "0"}}),
             "KERAS_DISTRIBUTION_JOB_ADDRESSES is not set");
  EXPECT_HAS(error_of("", {{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1,h"},
                           {"KERAS_DISTRIBUTION_PROCESS_ID", "0"}}),
             "KERAS_DISTRIBUTION_JOB_ADDRESSES entry 2 must be a \"host:port\", not \"h\"");
  EXPECT_HAS(error_of("", {{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1,h:1"},
                           {"KERAS_DISTRIBUTION_PROCESS_ID", "0"}}),
             "entry 2 repeats the address of KERAS_DISTRIBUTION_JOB_ADDRESSES entry 1");
  EXPECT_HAS(error_of("", {{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1,g:1"},
                           {"KERAS_DISTRIBUTION_PROCESS_ID", "2"}}),
             "KERAS_DISTRIBUTION_PROCESS_ID = 2 is outside the job's 2 processes");
}

TEST(ClusterSpec, TfConfigErrors) {
  const auto err = [](const std::string& cfg) { return error_of("", {{"TF_CONFIG", cfg}}); };
  std::string msg = err(R"({"cluster": {"worker": ["a:1",]}})");
  EXPECT_HAS(msg, "TF_CONFIG is not valid JSON: at byte");
  EXPECT_HAS(err("[1]"), "TF_CONFIG must be a JSON object, not [1]");
  EXPECT_HAS(err(R"({"cluster": ["a:1"]})"), "TF_CONFIG$cluster must be an object");
  EXPECT_HAS(err(R"({"cluster": {"worker": "a:1"}, "task": {"type": "worker", "index": 0}})"),
             "TF_CONFIG$cluster$worker must be an array of \"host:port\" strings, not \"a:1\"");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1", 5]}, "task": {"type": "worker", "index": 0}})"),
             "TF_CONFIG$cluster$worker[2] must be a \"host:port\" string, not 5");
  EXPECT_HAS(
      err(R"({"cluster": {"worker": ["a:1", "b"]}})"),
      "TF_CONFIG$cluster$worker[2] must be a \"host:port\" string, not \"b\": the port is missing");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:0"]}})"), "port must be a number in 1..65535");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:65536"]}})"), "port must be a number in 1..65535");
  EXPECT_HAS(err(R"({"cluster": {"worker": [":80"]}})"), "the host is empty");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["::1:80"]}})"), "in brackets");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["[::1:80"]}})"), "closing ']'");
  EXPECT_HAS(err(R"({"cluster": {"worker": []}})"), "TF_CONFIG$cluster has no chief and no worker");
  EXPECT_HAS(
      err(R"({"cluster": {"worker": ["a:1"], "ps": ["b:1"]}})"),
      "TF_CONFIG$cluster$ps: mirrored trains synchronously with chief and worker tasks only");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"], "evaluator": ["b:1"]}})"),
             "TF_CONFIG$cluster$evaluator");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"], "master": ["b:1"]}})"),
             "TF_CONFIG$cluster$master is not a task type of mirrored");
  EXPECT_HAS(err(R"({"cluster": {"chief": ["a:1", "b:1"], "worker": ["c:1"]}})"),
             "TF_CONFIG$cluster$chief must hold exactly one \"host:port\" string, not 2");
  EXPECT_HAS(
      err(R"({"cluster": {"chief": ["a:1"], "worker": ["b:2", "A:1"]}, "task": {"type": "worker", "index": 0}})"),
      "TF_CONFIG: TF_CONFIG$cluster$worker[2] repeats the address of TF_CONFIG$cluster$chief[1] "
      "(A:1)");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}})"), "TF_CONFIG$task is missing");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})"),
             "TF_CONFIG$task$type is missing");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}})"),
             "TF_CONFIG$task$index is missing");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "boss", "index": 0}})"),
             "TF_CONFIG$task$type must be \"chief\" or \"worker\", not \"boss\"");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator", "index": 0}})"),
             "TF_CONFIG$task$type is \"evaluator\"");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}})"),
             "task type \"chief\" has no entry in TF_CONFIG$cluster$chief");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})"),
             "TF_CONFIG$task$index must be a non-negative integer, not -1");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}})"),
             "TF_CONFIG$task$index must be a non-negative integer, not \"0\"");
  EXPECT_HAS(err(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0.5}})"),
             "TF_CONFIG$task$index must be a non-negative integer, not 0.5");
  EXPECT_HAS(
      err(R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 3}})"),
      "TF_CONFIG: task index 3 is outside the cluster's 2 workers");
  // The argument names itself, not TF_CONFIG.
  msg = error_of(
      R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}})", {});
  EXPECT_HAS(msg, "cluster argument: task index 2 is outside the cluster's 2 workers");
  EXPECT_HAS(error_of("{oops", {}), "cluster is not valid JSON");
}

TEST(ClusterSpec, SlurmFirstHost) {
  EXPECT_EQ(slurm_first_host("n1"), "n1");
  EXPECT_EQ(slurm_first_host("gpu[01-04,07],login2"), "gpu01");
  EXPECT_EQ(slurm_first_host("a-b[003-005]"), "a-b003");
  EXPECT_EQ(slurm_first_host("x[1,3]-ib"), "x1-ib");
  EXPECT_EQ(slurm_first_host("rack[2-3]-n[08-09],z"), "rack2-n08");
  EXPECT_EQ(slurm_first_host("login2,gpu[01-02]"), "login2");
  for (const char* garbage :
       {"", "[1-2]", "gpu[", "gpu[]", "gpu[a-b]", "gpu[3-1]", "gpu[1-]", "gpu[-1]", "gpu[1,,2]",
        "gpu]1", ",n1", "n1,", "n1,,n2", "n 1", "gpu[1-2", "n1,m[2"}) {
    try {
      slurm_first_host(garbage);
      ADD_FAILURE() << "accepted " << garbage;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::value);
      EXPECT_HAS(std::string(e.what()), "the Slurm hostlist \"" + std::string(garbage) + "\"");
    }
  }
}

TEST(ClusterSpec, DescribeOutOfRange) {
  const auto spec = resolve_cluster("", {{"TF_CONFIG", kTwoWorkers}});
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->describe(7), "worker 7");
  EXPECT_EQ(spec->describe(-1), "worker -1");
}

}  // namespace
}  // namespace mr
