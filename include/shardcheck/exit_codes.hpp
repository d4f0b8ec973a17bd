#pragma once
// Process exit codes. Every failure class has its own code so a CI job can tell a broken download
// from a bad config without parsing text. The table is printed by `shardcheck --help` and the README.

namespace shardcheck {

enum class ExitCode : int {
  ok = 0,
  findings = 1,                // lint/check found errors (or warnings with --strict)
  usage = 2,                   // bad command line
  io = 3,                      // a file or directory could not be read
  bad_model_config = 4,        // config.json is not valid JSON or lacks a required field
  bad_safetensors = 5,         // a safetensors header violates the format
  truncated_file = 6,          // a safetensors file is shorter or longer than its header says
  bad_index = 7,               // model.safetensors.index.json disagrees with the shards
  bad_rules = 8,               // a file under rules/ is malformed
  model_mismatch = 9,          // checkpoint tensors disagree with the architecture registry
  bad_accelerate_config = 10,  // the accelerate YAML cannot be parsed at all
  unknown_model = 11,          // model_type not in the registry and no checkpoint to infer from
  bad_adapter = 12,            // adapter_config.json is not valid JSON, has a field of the wrong type, or
                               // is for a PEFT method other than LoRA
  bad_module_tree = 13,        // a --module-tree file is not JSON, breaks docs/module-tree.md's schema or
                               // contradicts itself
  // 20-29: `shardcheck smoke` (src/smoke) — a verification failure is distinct from a job that
  // could not run, and each way of not running has its own code.
  smoke_wrong = 20,               // wrong elements after all-gather / reduce-scatter, or --weights bytes differ
  smoke_join_timeout = 21,        // ranks never joined the rendezvous within --timeout
  smoke_rank_lost = 22,           // a rank died or stopped answering during the run
  smoke_world_mismatch = 23,      // ranks disagree on WORLD_SIZE, or the plan is for another world size
  smoke_port_in_use = 24,         // rank 0 cannot listen on MASTER_PORT
  smoke_master_unreachable = 25,  // MASTER_ADDR:MASTER_PORT cannot be resolved or reached
  smoke_bandwidth = 26,           // average busbw below 0.9 x --expect-busbw
  smoke_not_built = 27,           // the shardcheck-smoke binary (LibTorch) is not installed next to shardcheck
  smoke_weights = 28,             // --weights: the checkpoint does not hold the plan's parameters
  smoke_launch = 29,              // bad RANK/WORLD_SIZE/LOCAL_RANK/MASTER_* values, or ranks could not be started
  // 30-39: Hub model ids (org/name[@revision]) — see src/load/hub/hub_diagnostics.cpp.
  hub_offline = 30,       // not local, not in a cache, and HF_HUB_OFFLINE forbids the network
  hub_unreachable = 31,   // connection, DNS or TLS failure
  hub_timeout = 32,       // the server stopped sending (HF_HUB_DOWNLOAD_TIMEOUT)
  hub_unauthorized = 33,  // HTTP 401: gated or private repository, no valid token
  hub_forbidden = 34,     // HTTP 403: the token has no access (gated terms not accepted)
  hub_not_found = 35,     // HTTP 404: repository, revision or file does not exist
  hub_server_error = 36,  // HTTP 429/5xx still failing after retries
  hub_bad_response = 37,  // a reply that breaks HTTP or the Hub's protocol (short body, bad range)
  hub_redirects = 38,     // a redirect loop or too many redirects
  hub_cache = 39,         // a cache directory cannot be written, or a cached snapshot is partial
  internal = 70,          // a bug in shardcheck
};

inline int to_int(ExitCode c) { return static_cast<int>(c); }

}  // namespace shardcheck
