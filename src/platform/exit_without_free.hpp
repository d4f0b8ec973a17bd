#pragma once
// The CLI's last big result is left for the process's exit to reclaim, as clang's -disable-free
// does: freeing the ~12,000 modules and ~1,900 units of a LoRA plan of Llama-3.1-405B took 1.2-1.6 ms
// (glibc's free and malloc_consolidate), a tenth of the whole run, and the kernel takes the pages
// back at exit anyway. The object stays reachable from a global, so LeakSanitizer does not report it.
// With SHARDCHECK_NO_TUNING set it is destroyed as usual (platform/tuning.hpp).

#include <memory>
#include <utility>

#include "platform/tuning.hpp"

namespace shardcheck::platform {

namespace detail {
// The kept objects, one per type; reachable, never destroyed.
template <class T>
T*& kept_until_exit() {
  static T* kept = nullptr;
  return kept;
}
}  // namespace detail

// Hands `value` to the process's exit instead of destroying it now (once per type; a second call
// destroys the previous one normally).
template <class T>
void keep_until_exit(T&& value) {
  using U = std::remove_cvref_t<T>;
  if (!tuning_enabled()) return;  // `value` is destroyed by its owner as usual
  std::unique_ptr<U> previous(detail::kept_until_exit<U>());
  detail::kept_until_exit<U>() = new U(std::forward<T>(value));
}

}  // namespace shardcheck::platform
