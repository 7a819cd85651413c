// Copies into and out of registered memory that survive a page the program
// has unmapped: each copy arms a recovery point for its thread, and the
// fault handler returns there instead of ending the process.
#include "transport/registered_copy.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

namespace uroce::transport {
namespace {

// Smaller than or equal to every page size Linux uses, so a piece of this
// size, aligned to it, lies within one page.
constexpr std::size_t kPiece = 4096;
const std::uint8_t kZeros[kPiece] = {};

std::atomic<bool> installed{false};
std::atomic<std::uint64_t> faults{0};
struct sigaction segv_before {};
struct sigaction bus_before {};
thread_local sigjmp_buf* recovery = nullptr;

// A fault that is not a guarded copy's goes where it went before. For the
// default action that handler is put back and the fault happens again when
// the instruction runs again (or, if it was sent by kill, is sent again).
void pass_on(int signal, siginfo_t* info, void* context) {
  const struct sigaction& before = signal == SIGSEGV ? segv_before : bus_before;
  if ((before.sa_flags & SA_SIGINFO) != 0 && before.sa_sigaction != nullptr) {
    before.sa_sigaction(signal, info, context);
    return;
  }
  if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    before.sa_handler(signal);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(signal);
}

void on_fault(int signal, siginfo_t* info, void* context) {
  sigjmp_buf* resume = recovery;
  if (resume == nullptr) {
    pass_on(signal, info, context);
    return;
  }
  recovery = nullptr;
  faults.fetch_add(1, std::memory_order_relaxed);
  siglongjmp(*resume, 1);
}

// The handler ran with the fault's signal blocked, and the jump out of it
// does not restore the mask (saving it on every copy would cost a system
// call): unblock both here, on the fault's path only.
void unblock_fault_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGSEGV);
  sigaddset(&signals, SIGBUS);
  pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
}

// One copy with the recovery point armed; false if a page faulted, with an
// unknown part of the copy done. It and store_or_fault repeat their few
// lines on purpose: one template over a lambda for both measured 22 to 29 ns
// a 64-byte copy against these 13 (bench/engine_bench, Copy).
__attribute__((noinline)) bool copy_or_fault(void* to, const void* from, std::size_t length) {
  sigjmp_buf here;
  if (sigsetjmp(here, 0) != 0) {
    unblock_fault_signals();
    return false;
  }
  recovery = &here;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(to, from, length);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  recovery = nullptr;
  return true;
}

__attribute__((noinline)) bool store_or_fault(std::uint64_t* at, std::uint64_t value) {
  sigjmp_buf here;
  if (sigsetjmp(here, 0) != 0) {
    unblock_fault_signals();
    return false;
  }
  recovery = &here;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::atomic_ref<std::uint64_t>(*at).store(value, std::memory_order_release);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  recovery = nullptr;
  return true;
}

std::size_t to_boundary(const void* address) {
  return kPiece - reinterpret_cast<std::uintptr_t>(address) % kPiece;
}

}  // namespace

void copy_registered(void* to, const void* from, std::size_t length) {
  if (length == 0) return;
  if (!installed.load(std::memory_order_relaxed)) {
    std::memcpy(to, from, length);
    return;
  }
  if (copy_or_fault(to, from, length)) return;
  // Piece by piece, none crossing a page of either side: what both sides
  // map is copied, what only the destination maps reads as zeros.
  auto* out = static_cast<std::uint8_t*>(to);
  const auto* in = static_cast<const std::uint8_t*>(from);
  while (length > 0) {
    std::size_t piece = std::min({length, to_boundary(out), to_boundary(in)});
    if (!copy_or_fault(out, in, piece)) copy_or_fault(out, kZeros, piece);
    out += piece;
    in += piece;
    length -= piece;
  }
}

void store_registered(std::uint64_t* at, std::uint64_t value) {
  if (!installed.load(std::memory_order_relaxed)) {
    std::atomic_ref<std::uint64_t>(*at).store(value, std::memory_order_release);
    return;
  }
  store_or_fault(at, value);
}

void guard_registered_copies() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSEGV, &action, &segv_before) != 0) return;
    if (sigaction(SIGBUS, &action, &bus_before) != 0) {
      sigaction(SIGSEGV, &segv_before, nullptr);
      return;
    }
    installed.store(true, std::memory_order_relaxed);
  });
}

std::uint64_t registered_copy_faults() { return faults.load(std::memory_order_relaxed); }

}  // namespace uroce::transport
