// cpplib.cc: a C++ library of the kind gpurent loads (libcublasLt and the
// driver are C++ inside): a static constructor, thread-local storage, a
// thread of its own and an exception thrown and caught. TestWithoutCgo
// loads it into a CGO_ENABLED=0 program, the configuration gpurent ships.
#include <stdexcept>
#include <string>
#include <thread>

static std::string greeting = std::string("constructed") + " statically";
static thread_local int calls = 0;

extern "C" int cpplib_check(char *out, int len) {
  calls++;
  int seen = 0;
  std::thread t([&] { seen = calls + 100; }); // a fresh thread has its own calls: 0
  t.join();
  int caught = 0;
  try {
    throw std::runtime_error("thrown");
  } catch (const std::exception &e) {
    caught = std::string(e.what()) == "thrown";
  }
  std::string s = greeting + ", calls " + std::to_string(calls) + ", thread " + std::to_string(seen) +
                  ", caught " + std::to_string(caught);
  if ((int)s.size() >= len) return -1;
  s.copy(out, s.size());
  out[s.size()] = 0;
  return (int)s.size();
}

// cpplib_sum16 takes as many arguments as cublasLtMatmul, ten of them on
// the stack, and weighs each by its position so that none can be swapped.
extern "C" long long cpplib_sum16(long long a1, long long a2, long long a3, long long a4, long long a5, long long a6,
                                  long long a7, long long a8, long long a9, long long a10, long long a11, long long a12,
                                  long long a13, long long a14, long long a15, long long a16) {
  long long a[] = {a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16};
  long long s = 0;
  for (int i = 0; i < 16; i++) s += (i + 1) * a[i];
  return s;
}
