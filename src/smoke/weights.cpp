#include "smoke/weights.hpp"

#include "shardcheck/registry.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <tuple>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace shardcheck::smoke {

namespace {

// The expert index a fused-source glob ("*.gate_proj.weight", one `*`) captures from `rest` (the
// tensor name below the fused parameter's module), or -1 when it does not match.
std::int64_t captured_index(std::string_view glob, std::string_view rest) {
  const std::size_t star = glob.find('*');
  if (star == std::string_view::npos || glob.find('*', star + 1) != std::string_view::npos) return -1;
  const std::string_view head = glob.substr(0, star), tail = glob.substr(star + 1);
  if (rest.size() < head.size() + tail.size() + 1 || !rest.starts_with(head) || !rest.ends_with(tail)) return -1;
  const std::string_view digits = rest.substr(head.size(), rest.size() - head.size() - tail.size());
  std::int64_t index = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || index > (std::int64_t{1} << 40)) return -1;
    index = index * 10 + (c - '0');
  }
  return index;
}

}  // namespace

WeightReader::WeightReader(CheckpointMeta meta, std::map<std::string, std::string> aliases, std::string base_prefix,
                           std::vector<std::pair<std::string, std::string>> renames,
                           std::map<std::string, std::vector<std::string>> fused)
    : meta_(std::move(meta)),
      aliases_(std::move(aliases)),
      base_prefix_(std::move(base_prefix)),
      renames_(std::move(renames)),
      fused_(std::move(fused)) {}

WeightReader::~WeightReader() {
  for (auto [index, fd] : fds_) ::close(fd);
}

void WeightReader::add_adapter(CheckpointMeta adapter, std::map<std::string, std::string> keys) {
  adapter_ = std::move(adapter);
  adapter_keys_ = std::move(keys);
}

int WeightReader::open_file(const CheckpointMeta& meta, std::uint32_t index) {
  const auto path = meta.dir / meta.files[index].path;
  if (auto it = fds_.find(path.string()); it != fds_.end()) return it->second;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  fds_[path.string()] = fd;
  return fd;
}

WeightReader::Piece WeightReader::piece_of(const CheckpointMeta& meta, const TensorInfo& t) {
  const auto& file = meta.files[t.file];
  return Piece{open_file(meta, t.file), file.path, 8 + file.header_len + t.begin, t.numel()};
}

// The stored tensor behind a parameter: a PEFT adapter's own tensor in the adapter's file; else its
// own name, then without the base-model prefix, then the same for the tensor it is tied to, each also
// with the version's renames undone.
std::pair<const CheckpointMeta*, const TensorInfo*> WeightReader::find_stored(const std::string& param) const {
  if (adapter_)
    if (auto key = adapter_keys_.find(param); key != adapter_keys_.end())
      for (const auto& f : adapter_->files)
        for (const auto& t : f.tensors)
          if (std::string_view(t.name) == key->second) return {&*adapter_, &t};
  std::vector<std::string> candidates{param};
  if (auto alias = aliases_.find(param); alias != aliases_.end()) candidates.push_back(alias->second);
  for (std::size_t c = 0, n = candidates.size(); c < n; ++c)
    if (!base_prefix_.empty() && candidates[c].starts_with(base_prefix_ + "."))
      candidates.push_back(candidates[c].substr(base_prefix_.size() + 1));
  // A rename maps the disk name to the model's; undo it (first occurrence, as the name was built).
  for (std::size_t c = 0, n = candidates.size(); c < n; ++c)
    for (const auto& [disk, model] : renames_)
      if (auto undone = undo_checkpoint_rename(candidates[c], disk, model)) candidates.push_back(std::move(*undone));
  for (const auto& name : candidates)
    for (const auto& f : meta_.files)
      for (const auto& t : f.tensors)
        if (std::string_view(t.name) == name) return {&meta_, &t};
  return {nullptr, nullptr};
}

// transformers 5.x core_model_loading.py (MergeModulelist(dim=0) then Concatenate(dim=1)): per
// expert index, the tensor of each glob in turn, stacked by index. Checkpoint names are matched the
// way from_pretrained renames them (the version's renames applied, the base-model prefix added).
bool WeightReader::bind_fused(const UnitLayout& u, std::size_t i, const std::vector<std::string>& globs,
                              std::int64_t expected, Bound& out, std::string& error) {
  // Under its name in the model the checkpoint belongs to (a PeftModel's base parameter has another).
  const auto alias = aliases_.find(u.params[i]);
  const std::string& param = alias == aliases_.end() ? u.params[i] : alias->second;
  const std::string module = param.substr(0, param.rfind('.') == std::string::npos ? 0 : param.rfind('.'));
  struct Source {
    std::int64_t index;
    std::size_t glob;
    const TensorInfo* tensor;
  };
  std::vector<Source> sources;
  for (const auto& f : meta_.files)
    for (const auto& t : f.tensors) {
      std::string name(t.name);
      for (const auto& [disk, model] : renames_) apply_checkpoint_rename(name, disk, model);
      if (!base_prefix_.empty() && !name.starts_with(module + ".") && module.starts_with(base_prefix_ + "."))
        name = base_prefix_ + "." + name;
      if (!name.starts_with(module + ".")) continue;
      const std::string_view rest = std::string_view(name).substr(module.size() + 1);
      for (std::size_t g = 0; g < globs.size(); ++g)
        if (const std::int64_t index = captured_index(globs[g], rest); index >= 0) {
          sources.push_back({index, g, &t});
          break;
        }
    }
  std::sort(sources.begin(), sources.end(),
            [](const Source& a, const Source& b) { return std::tie(a.index, a.glob) < std::tie(b.index, b.glob); });
  std::int64_t numel = 0;
  for (const Source& s : sources) {
    if (s.tensor->dtype != u.dtype) {
      error = fmt::format("unit '{}': '{}' fuses '{}', which is {} in {}; the plan expects {}", u.path, param,
                          std::string(s.tensor->name), dtype_name(s.tensor->dtype), meta_.files[s.tensor->file].path,
                          dtype_name(u.dtype));
      return false;
    }
    numel += s.tensor->numel();
    out.push_back(piece_of(meta_, *s.tensor));
  }
  if (sources.empty() || numel != expected) {
    error = fmt::format("unit '{}': '{}' fuses {} checkpoint tensors ({}) with {} elements, the plan expects {}",
                        u.path, param, sources.size(), fmt::join(globs, ", "), numel, expected);
    return false;
  }
  return true;
}

bool WeightReader::bind(const UnitLayout& u, std::string& error) {
  bound_.clear();
  bound_tp_.clear();
  width_ = element_bytes(u.dtype);
  for (std::size_t i = 0; i < u.params.size(); ++i) {
    Bound b;
    // A TP piece is read from the whole stored tensor.
    const auto tp = tp_pieces_.find(u.params[i]);
    std::int64_t expected = u.param_numels[i];
    if (tp != tp_pieces_.end()) {
      expected = 1;
      for (const std::int64_t d : tp->second.full_shape) expected *= d;
    }
    if (const auto [meta, found] = find_stored(u.params[i]); found) {
      if (found->dtype != u.dtype || found->numel() != expected) {
        error = fmt::format("unit '{}': parameter '{}' is {} x {} in {}, the plan expects {} x {}", u.path, u.params[i],
                            found->numel(), dtype_name(found->dtype), meta->files[found->file].path, expected,
                            dtype_name(u.dtype));
        return false;
      }
      b.push_back(piece_of(*meta, *found));
    } else if (auto fused = fused_.find(u.params[i]); fused != fused_.end()) {
      if (!bind_fused(u, i, fused->second, expected, b, error)) return false;
    } else {
      error = fmt::format("unit '{}': parameter '{}' is not in the checkpoint at {}", u.path, u.params[i],
                          meta_.dir.string());
      return false;
    }
    bound_.push_back(std::move(b));
    bound_tp_.push_back(tp == tp_pieces_.end() ? nullptr : &tp->second);
  }
  return true;
}

std::map<std::string, TpPiece> tp_pieces(const TensorParallelLayout& layout, int tp_rank) {
  std::map<std::string, TpPiece> out;
  for (const TpPlacement& p : layout.params) {
    if (!p.dim) continue;
    const auto d = static_cast<std::size_t>(*p.dim);
    TpPiece piece;
    piece.dim = *p.dim;
    piece.blocks = p.blocks;
    // The pieces of all TP ranks, in rank order, make up the whole dimension.
    std::int64_t before = 0, total = 0;
    for (std::size_t k = 0; k < p.shapes.size(); ++k) {
      if (static_cast<int>(k) < tp_rank) before += p.shapes[k][d];
      total += p.shapes[k][d];
    }
    piece.full_shape = p.shapes[0];
    piece.full_shape[d] = total;
    piece.start = before / piece.blocks;
    piece.length = p.shapes[static_cast<std::size_t>(tp_rank)][d] / piece.blocks;
    out[p.fqn] = std::move(piece);
  }
  return out;
}

void for_tp_runs(const TpPiece& piece, std::int64_t local_offset, std::int64_t numel,
                 const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& read) {
  // Row-major: elements after the split dimension form `inner` runs; `n` is the full dimension, each
  // block of n / blocks holds this rank's `length` indices from `start`; the local dimension is
  // blocks * length.
  std::int64_t inner = 1;
  for (std::size_t k = static_cast<std::size_t>(piece.dim) + 1; k < piece.full_shape.size(); ++k)
    inner *= piece.full_shape[k];
  const std::int64_t n = piece.full_shape[static_cast<std::size_t>(piece.dim)];
  const std::int64_t block = n / piece.blocks, local_dim = piece.blocks * piece.length;
  std::int64_t k = local_offset, done = 0;
  while (done < numel) {
    const std::int64_t outer = k / (local_dim * inner);
    const std::int64_t i = (k / inner) % local_dim, in = k % inner;
    const std::int64_t b = i / piece.length, within = i % piece.length;
    const std::int64_t full = (outer * n + b * block + piece.start + within) * inner + in;
    const std::int64_t run = std::min(numel - done, (piece.length - within) * inner - in);
    read(full, run, done);
    done += run;
    k += run;
  }
}

RealBytes WeightReader::source() {
  return [this](int param, std::int64_t param_offset, std::int64_t numel, std::byte* dst) {
    const TpPiece* tp = bound_tp_.at(static_cast<std::size_t>(param));
    if (!tp) {
      read_stored(param, param_offset, numel, dst);
      return;
    }
    for_tp_runs(*tp, param_offset, numel, [&](std::int64_t full, std::int64_t run, std::int64_t at) {
      read_stored(param, full, run, dst + at * width_);
    });
  };
}

void WeightReader::read_stored(int param, std::int64_t param_offset, std::int64_t numel, std::byte* dst) {
  const Bound& pieces = bound_.at(static_cast<std::size_t>(param));
  std::int64_t skip = param_offset;  // elements before the wanted range, over the pieces in order
  for (const Piece& p : pieces) {
    if (numel == 0) break;
    if (skip >= p.numel) {
      skip -= p.numel;
      continue;
    }
    const std::int64_t take = std::min(numel, p.numel - skip);
    std::size_t want = static_cast<std::size_t>(take * width_);
    off_t at = static_cast<off_t>(p.data_start + static_cast<std::uint64_t>(skip * width_));
    while (want > 0) {
      const ssize_t got = ::pread(p.fd, dst, want, at);
      if (got <= 0)
        throw std::runtime_error(fmt::format("short read of {} at byte {}: {}", p.file, at,
                                             got == 0 ? "end of file" : std::strerror(errno)));
      bytes_read_ += got;
      dst += got;
      at += got;
      want -= static_cast<std::size_t>(got);
    }
    numel -= take;
    skip = 0;
  }
  if (numel > 0) throw std::runtime_error(fmt::format("read past the end of parameter #{}", param));
}

}  // namespace shardcheck::smoke
