// Benchmark (not a test): what one flag hand-over costs between two CUDA streams, in one process or in two (a
// monitor and a runner, as the call gate has them), by the way the flags are made. Each round is the gate's window
// with nothing in it: the monitor's stream records a start event, writes go, waits for done, records a stop event;
// the runner's stream waits for go and writes done. Both enqueue every round up front, so no host is in the loop.
// Prints the median and p90 window per variant. Run by scripts/bench_gate_hop.sh (under an MPS daemon, or not).
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kRounds = 1000;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    exit(2);
  }
}
void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    fprintf(stderr, "%s: %s\n", what, s ? s : "?");
    exit(2);
  }
}

__global__ void spin_until(const volatile uint32_t* flag, uint32_t value) {
  while (static_cast<int32_t>(*flag - value) < 0) {
  }
}

struct Variant {
  const char* name;
  bool host_memory;     // flags in pinned host memory (else device memory, shared by CUDA IPC between processes)
  bool wait_by_kernel;  // the monitor waits for done with a one-thread kernel (else cuStreamWaitValue32)
  unsigned wait_flags;  // CU_STREAM_WAIT_VALUE_* besides GEQ
  unsigned write_flags;
};

const Variant kVariants[] = {
    {"device memory, memory operations", false, false, 0, 0},
    {"device memory, monitor waits by kernel", false, true, 0, 0},
    {"host memory, memory operations", true, false, 0, 0},
    {"host memory, monitor waits by kernel", true, true, 0, 0},
};

void wait_op(cudaStream_t s, uint32_t* flag, uint32_t v, unsigned flags, bool by_kernel) {
  if (by_kernel)
    spin_until<<<1, 1, 0, s>>>(flag, v);
  else
    check(cuStreamWaitValue32(s, reinterpret_cast<CUdeviceptr>(flag), v, CU_STREAM_WAIT_VALUE_GEQ | flags), "wait");
}
void write_op(cudaStream_t s, uint32_t* flag, uint32_t v, unsigned flags) {
  check(cuStreamWriteValue32(s, reinterpret_cast<CUdeviceptr>(flag), v, flags), "write");
}

// The runner's side: every round's wait for go and write of done.
void runner_rounds(cudaStream_t s, uint32_t* go, uint32_t* done, const Variant& v, uint32_t base) {
  for (int i = 1; i <= kRounds; ++i) {
    wait_op(s, go, base + i, v.wait_flags, false);
    write_op(s, done, base + i, v.write_flags);
  }
}

// The monitor's side (and, with `runner` given, the runner's in the same loop: a stream takes ~1000 pending
// operations before the host blocks, so one thread must not enqueue all of one side first); returns the windows in
// microseconds once the stream has finished.
std::vector<float> monitor_rounds(cudaStream_t s, uint32_t* go, uint32_t* done, const Variant& v, uint32_t base,
                                  cudaStream_t runner = nullptr) {
  std::vector<cudaEvent_t> ev(2 * kRounds);
  for (auto& e : ev) check(cudaEventCreate(&e), "event");
  for (int i = 1; i <= kRounds; ++i) {
    if (runner) {
      wait_op(runner, go, base + i, v.wait_flags, false);
      write_op(runner, done, base + i, v.write_flags);
    }
    check(cudaEventRecord(ev[2 * (i - 1)], s), "record");
    write_op(s, go, base + i, v.write_flags);
    wait_op(s, done, base + i, v.wait_flags, v.wait_by_kernel);
    check(cudaEventRecord(ev[2 * (i - 1) + 1], s), "record");
  }
  check(cudaStreamSynchronize(s), "sync");
  std::vector<float> us(kRounds);
  for (int i = 0; i < kRounds; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]), "elapsed");
    us[i] = ms * 1000;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return us;
}

void report(const char* where, const Variant& v, std::vector<float> us) {
  std::sort(us.begin() + kRounds / 10, us.end());  // the first tenth is warm-up
  const size_t n = us.size() - kRounds / 10;
  const float* s = us.data() + kRounds / 10;
  printf("| %s | %s | %.2f | %.2f |\n", where, v.name, s[n / 2], s[n * 9 / 10]);
  fflush(stdout);
}

// Flags for the variant: two words of device memory (IPC handle written to `ipc`) or of the shared host page.
struct Flags {
  uint32_t *go = nullptr, *done = nullptr;
};

Flags host_flags(uint32_t* page) {
  check(cudaHostRegister(page, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable), "host register");
  void* d = nullptr;
  check(cudaHostGetDevicePointer(&d, page, 0), "host device pointer");
  return {static_cast<uint32_t*>(d), static_cast<uint32_t*>(d) + 32};
}

void one_process(const Variant& v, uint32_t* page) {
  cudaStream_t mon, run;
  check(cudaStreamCreateWithFlags(&mon, cudaStreamNonBlocking), "stream");
  check(cudaStreamCreateWithFlags(&run, cudaStreamNonBlocking), "stream");
  Flags f;
  if (v.host_memory) {
    f = host_flags(page);
  } else {
    check(cudaMalloc(&f.go, 256), "malloc");
    check(cudaMemset(f.go, 0, 256), "memset");
    f.done = f.go + 32;
  }
  check(cudaDeviceSynchronize(), "sync");
  report("one process", v, monitor_rounds(mon, f.go, f.done, v, 0, run));
  check(cudaDeviceSynchronize(), "sync");
  if (v.host_memory)
    cudaHostUnregister(page);
  else
    cudaFree(f.go);
  cudaStreamDestroy(mon), cudaStreamDestroy(run);
}

// Two processes: the parent is the monitor; the child (forked before CUDA starts) the runner.
void two_processes(const Variant& v, uint32_t* page) {
  int to_child[2], to_parent[2];
  if (pipe(to_child) || pipe(to_parent)) exit(2);
  memset(page, 0, 4096);
  pid_t child = fork();
  if (child == 0) {
    cudaStream_t run;
    check(cudaStreamCreateWithFlags(&run, cudaStreamNonBlocking), "stream");
    Flags f;
    if (v.host_memory) {
      f = host_flags(page);
    } else {
      cudaIpcMemHandle_t h;
      if (read(to_child[0], &h, sizeof h) != sizeof h) _exit(2);
      void* p = nullptr;
      check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "ipc open");
      f = {static_cast<uint32_t*>(p), static_cast<uint32_t*>(p) + 32};
    }
    char ok = 1;
    if (write(to_parent[1], &ok, 1) != 1) _exit(2);  // ready: the rounds are enqueued while the monitor's run
    runner_rounds(run, f.go, f.done, v, 0);
    check(cudaStreamSynchronize(run), "runner sync");
    _exit(0);
  }
  cudaStream_t mon;
  check(cudaStreamCreateWithFlags(&mon, cudaStreamNonBlocking), "stream");
  Flags f;
  if (v.host_memory) {
    f = host_flags(page);
  } else {
    check(cudaMalloc(&f.go, 2 << 20), "malloc");
    check(cudaMemset(f.go, 0, 256), "memset");
    check(cudaDeviceSynchronize(), "sync");
    f.done = f.go + 32;
    cudaIpcMemHandle_t h;
    check(cudaIpcGetMemHandle(&h, f.go), "ipc handle");
    if (write(to_child[1], &h, sizeof h) != sizeof h) exit(2);
  }
  char ok = 0;
  if (read(to_parent[0], &ok, 1) != 1) exit(2);  // the runner has its flags
  report("two processes", v, monitor_rounds(mon, f.go, f.done, v, 0));
  int status = 0;
  waitpid(child, &status, 0);
  if (v.host_memory)
    cudaHostUnregister(page);
  else
    cudaFree(f.go);
  cudaStreamDestroy(mon);
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "two";
  auto* page = static_cast<uint32_t*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));  // shared across fork
  if (mode == "two") {
    printf("| where | flags | median us | p90 us |\n|---|---|---|---|\n");
    for (const Variant& v : kVariants) {  // each in a fresh pair of processes: CUDA must start after the fork
      pid_t p = fork();
      if (p == 0) {
        two_processes(v, page);
        _exit(0);
      }
      waitpid(p, nullptr, 0);
    }
  } else {
    for (const Variant& v : kVariants) one_process(v, page);
  }
  return 0;
}
