#include "smoke/weights.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace shardcheck::smoke {

WeightReader::WeightReader(CheckpointMeta meta, std::map<std::string, std::string> aliases, std::string base_prefix,
                           std::vector<std::pair<std::string, std::string>> renames)
    : meta_(std::move(meta)),
      aliases_(std::move(aliases)),
      base_prefix_(std::move(base_prefix)),
      renames_(std::move(renames)) {}

WeightReader::~WeightReader() {
  for (auto [index, fd] : fds_) ::close(fd);
}

int WeightReader::open_file(std::uint32_t index) {
  if (auto it = fds_.find(index); it != fds_.end()) return it->second;
  const auto path = meta_.dir / meta_.files[index].path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  fds_[index] = fd;
  return fd;
}

bool WeightReader::bind(const UnitLayout& u, std::string& error) {
  bound_.clear();
  width_ = element_bytes(u.dtype);
  for (std::size_t i = 0; i < u.params.size(); ++i) {
    // The parameter's own name, then without the base-model prefix, then the same for the tensor
    // it is tied to.
    std::vector<std::string> candidates{u.params[i]};
    if (auto alias = aliases_.find(u.params[i]); alias != aliases_.end()) candidates.push_back(alias->second);
    for (std::size_t c = 0, n = candidates.size(); c < n; ++c)
      if (!base_prefix_.empty() && candidates[c].starts_with(base_prefix_ + "."))
        candidates.push_back(candidates[c].substr(base_prefix_.size() + 1));
    // A rename maps the disk name to the model's; undo it (first occurrence, as the name was built).
    for (std::size_t c = 0, n = candidates.size(); c < n; ++c)
      for (const auto& [disk, model] : renames_)
        if (auto at = candidates[c].find(model); at != std::string::npos)
          candidates.push_back(std::string(candidates[c]).replace(at, model.size(), disk));
    const TensorInfo* found = nullptr;
    for (const auto& name : candidates) {
      for (const auto& f : meta_.files)
        for (const auto& t : f.tensors)
          if (!found && std::string_view(t.name) == name) found = &t;
    }
    if (!found) {
      error = fmt::format("unit '{}': parameter '{}' is not in the checkpoint at {}", u.path, u.params[i],
                          meta_.dir.string());
      return false;
    }
    if (found->dtype != u.dtype || found->numel() != u.param_numels[i]) {
      error = fmt::format("unit '{}': parameter '{}' is {} x {} in {}, the plan expects {} x {}", u.path,
                          u.params[i], found->numel(), dtype_name(found->dtype), meta_.files[found->file].path,
                          u.param_numels[i], dtype_name(u.dtype));
      return false;
    }
    const auto& file = meta_.files[found->file];
    bound_.push_back(Bound{open_file(found->file), file.path, 8 + file.header_len + found->begin});
  }
  return true;
}

RealBytes WeightReader::source() {
  return [this](int param, std::int64_t param_offset, std::int64_t numel, std::byte* dst) {
    const Bound& b = bound_.at(static_cast<std::size_t>(param));
    std::size_t want = static_cast<std::size_t>(numel * width_);
    off_t at = static_cast<off_t>(b.data_start + static_cast<std::uint64_t>(param_offset * width_));
    while (want > 0) {
      const ssize_t got = ::pread(b.fd, dst, want, at);
      if (got <= 0)
        throw std::runtime_error(fmt::format("short read of {} at byte {}: {}", b.file, at,
                                             got == 0 ? "end of file" : std::strerror(errno)));
      bytes_read_ += got;
      dst += got;
      at += got;
      want -= static_cast<std::size_t>(got);
    }
  };
}

}  // namespace shardcheck::smoke
