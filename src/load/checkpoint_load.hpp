#pragma once
// load_checkpoint for a caller that waits on the result from another thread (ModelLoad): the
// load's own scratch memory (the mapped index text and its tables: ~20 MB and 92k rows for
// DeepSeek-V3) is handed over in `scratch` instead of released on return, so that the loading
// thread can publish the checkpoint first and unmap afterwards, while the waiting thread goes on.
// Releasing it had been ~1 ms on the critical path of inspect.

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>

#include "shardcheck/checkpoint.hpp"

namespace shardcheck::detail {

// `observer`, when given, is read before each file is handed over (it may be set while the load
// runs: files read before that are not seen); see FileObserver.
std::optional<CheckpointMeta> load_checkpoint(const std::filesystem::path& dir, DiagnosticSink& sink,
                                              std::shared_ptr<void>& scratch,
                                              const std::atomic<FileObserver*>* observer = nullptr);

}  // namespace shardcheck::detail
