// retorch::Error and the RT_CHECK family: every bad input becomes an exception naming op, shapes, dtypes.
#pragma once
#include <exception>
#include <sstream>
#include <string>

namespace retorch {

/// Which Python exception an Error maps to (kOutOfMemory: retorch.OutOfMemoryError, a
/// RuntimeError, as torch.OutOfMemoryError / torch.cuda.OutOfMemoryError).
enum class ErrorKind { kRuntime, kIndex, kType, kValue, kNotImplemented, kOutOfMemory };

class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string msg) : kind_(kind), msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return msg_; }

 private:
  ErrorKind kind_;
  std::string msg_;
};

namespace detail {
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] void throw_error(ErrorKind kind, const std::string& msg);
}  // namespace detail

}  // namespace retorch

#define RT_ERROR_KIND(kind, ...) \
  ::retorch::detail::throw_error(kind, ::retorch::detail::str_cat(__VA_ARGS__))
#define RT_CHECK_KIND(cond, kind, ...)      \
  do {                                      \
    if (__builtin_expect(!(cond), 0)) {     \
      RT_ERROR_KIND(kind, __VA_ARGS__);     \
    }                                       \
  } while (0)
#define RT_ERROR(...) RT_ERROR_KIND(::retorch::ErrorKind::kRuntime, __VA_ARGS__)
#define RT_CHECK(cond, ...) RT_CHECK_KIND(cond, ::retorch::ErrorKind::kRuntime, __VA_ARGS__)
#define RT_CHECK_INDEX(cond, ...) RT_CHECK_KIND(cond, ::retorch::ErrorKind::kIndex, __VA_ARGS__)
#define RT_CHECK_TYPE(cond, ...) RT_CHECK_KIND(cond, ::retorch::ErrorKind::kType, __VA_ARGS__)
#define RT_CHECK_VALUE(cond, ...) RT_CHECK_KIND(cond, ::retorch::ErrorKind::kValue, __VA_ARGS__)
#define RT_INTERNAL_ASSERT(cond) \
  RT_CHECK(cond, "internal assert failed at ", __FILE__, ":", __LINE__, ": " #cond)
