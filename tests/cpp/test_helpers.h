// Small helpers shared by the C++ tests: reading values out, catching retorch::Error.
#pragma once
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "retorch/dispatch/Dispatcher.h"
#include "retorch/retorch.h"

namespace retorch::testing {

/// A fresh directory (under the system temp dir, named prefix_pid_n) removed with its contents
/// at the end of the test.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "retorch") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// The elements of t in row-major order, as doubles.
inline std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

/// The sizes of t as a vector (for EXPECT_EQ).
inline std::vector<int64_t> shape(const Tensor& t) {
  return t.sizes().vec();
}
inline std::vector<int64_t> strides(const Tensor& t) {
  return t.strides().vec();
}

/// The address of the storage t looks into (equal for views of the same base).
inline const void* storage_ptr(const Tensor& t) {
  return t.impl()->storage()->data();
}

/// Element-wise |a - b| <= atol + rtol * |b|, with a message naming the first mismatch.
inline ::testing::AssertionResult all_close(const Tensor& a, const Tensor& b, double rtol = 1e-5,
                                            double atol = 1e-6) {
  if (a.sizes().vec() != b.sizes().vec())
    return ::testing::AssertionFailure()
           << "shape mismatch: " << a.toString() << " vs " << b.toString();
  auto va = values(a), vb = values(b);
  for (size_t i = 0; i < va.size(); ++i) {
    if (!(std::abs(va[i] - vb[i]) <= atol + rtol * std::abs(vb[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << va[i] << " vs " << vb[i] << "\n"
             << a.toString() << "\nvs\n"
             << b.toString();
  }
  return ::testing::AssertionSuccess();
}

/// Runs f, which must throw retorch::Error; returns the error (or a dummy after a failure).
inline Error catch_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected retorch::Error, got std::exception: " << e.what();
    return Error(ErrorKind::kRuntime, "<not a retorch::Error>");
  }
  ADD_FAILURE() << "expected retorch::Error, but nothing was thrown";
  return Error(ErrorKind::kRuntime, "<nothing thrown>");
}

/// Whether msg contains every one of the parts (reports the message if not).
inline ::testing::AssertionResult contains(const std::string& msg,
                                           std::initializer_list<std::string> parts) {
  for (const auto& p : parts)
    if (msg.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message does not contain \"" << p << "\": " << msg;
  return ::testing::AssertionSuccess();
}

/// Options for a float leaf that requires grad.
inline TensorOptions rg(ScalarType t = kFloat) { return TensorOptions(t).requires_grad(true); }

/// The registered operator `name` ("mul.Tensor", "relu"); a test failure when it is unknown.
inline const OperatorHandle& op(const char* name) {
  OperatorHandle* h = Dispatcher::singleton().find(name);
  EXPECT_NE(h, nullptr) << name;
  return *h;
}

}  // namespace retorch::testing
