#include "load/padded_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "platform/huge_pages.hpp"
#include "platform/mapped_reads.hpp"

namespace shardcheck::detail {
namespace {

// Closes a descriptor on every return path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// From this size on the buffer takes huge pages (platform/huge_pages.hpp): DeepSeek-V3's 8.9 MB index
// then costs 5 faults instead of 2,200. Below it, the first touch of a huge page (zeroing 2 MiB)
// would cost more than the small pages it saves.
constexpr std::size_t kHugeFrom = std::size_t{1} << 20;

}  // namespace

// The file's own pages, when the padding fits in the rest of its last page: the kernel fills the
// bytes of that page past the end of the file with zeros, and a byte beyond that page would be
// SIGBUS. Otherwise (about one file in 64) nullopt, and the caller copies.
std::optional<PaddedFile> PaddedFile::map(int fd, std::size_t size) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t tail = size % page;
  if (tail == 0 || tail + kJsonPadding > page) return std::nullopt;
  const std::size_t mapped = size + kJsonPadding;
  void* memory = ::mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (memory == MAP_FAILED) return std::nullopt;  // e.g. a file system without mmap
  return PaddedFile(static_cast<char*>(memory), size, mapped, Memory::file_map);
}

std::optional<PaddedFile> PaddedFile::read(const std::filesystem::path& path) {
  const Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size >= kHugeFrom && platform::mapped_reads_allowed())
    if (auto out = map(file.fd, size)) return out;
  const std::size_t mapped = size + kJsonPadding;
  // Anonymous pages start zeroed, which is the padding the scan wants after the text.
  void* memory = nullptr;
  const Memory kind = mapped >= kHugeFrom ? Memory::huge_copy : Memory::small_copy;
  if (kind == Memory::huge_copy) {
    memory = platform::map_huge(mapped);
  } else {
    memory = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (memory == MAP_FAILED) memory = nullptr;
  }
  if (!memory) return std::nullopt;
  PaddedFile out(static_cast<char*>(memory), size, mapped, kind);
  for (std::size_t done = 0; done < size;) {
    const ssize_t got = ::pread(file.fd, out.data_ + done, size - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;  // an error, or the file shrank while being read
    done += static_cast<std::size_t>(got);
  }
  return out;
}

PaddedFile::PaddedFile(PaddedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      memory_(other.memory_) {}

PaddedFile& PaddedFile::operator=(PaddedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    memory_ = other.memory_;
  }
  return *this;
}

PaddedFile::~PaddedFile() { release(); }

void PaddedFile::release() {
  if (!data_) return;
  if (memory_ == Memory::huge_copy)
    platform::unmap_huge(data_, mapped_);
  else
    ::munmap(data_, mapped_);
  data_ = nullptr;
}

}  // namespace shardcheck::detail
