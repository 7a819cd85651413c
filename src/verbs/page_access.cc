// pages_accessible: madvise's populate advice over the pages of a range.
#include "verbs/page_access.h"

#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace uroce::verbs {

bool pages_accessible(std::uint64_t start, std::uint64_t length, bool write) {
  if (length == 0) return true;
  static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (length > UINT64_MAX - start || start + length > UINT64_MAX - page) return false;
  std::uint64_t first = start & ~(page - 1);
  std::uint64_t end = (start + length + page - 1) & ~(page - 1);
  void* pages = reinterpret_cast<void*>(static_cast<std::uintptr_t>(first));
  return ::madvise(pages, end - first, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0;
}

}  // namespace uroce::verbs
