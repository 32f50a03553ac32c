// intrusive_ptr: a single-allocation refcounted pointer for TensorImpl and StorageImpl.
#pragma once
#include <atomic>
#include <cstdint>
#include <utility>

namespace retorch {

/// Base for intrusively refcounted objects. The count starts at 0; intrusive_ptr owns it.
class intrusive_target {
 public:
  intrusive_target() = default;
  intrusive_target(const intrusive_target&) : refcount_(0) {}
  intrusive_target& operator=(const intrusive_target&) { return *this; }
  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 protected:
  ~intrusive_target() = default;

 private:
  template <typename T> friend class intrusive_ptr;
  mutable std::atomic<uint32_t> refcount_{0};
};

template <typename T>
class intrusive_ptr {
 public:
  intrusive_ptr() = default;
  intrusive_ptr(std::nullptr_t) {}
  /// Takes ownership of a fresh object (refcount 0) or adds a reference to a live one.
  explicit intrusive_ptr(T* p) : p_(p) { retain(); }
  intrusive_ptr(const intrusive_ptr& o) : p_(o.p_) { retain(); }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  ~intrusive_ptr() { reset(); }
  intrusive_ptr& operator=(const intrusive_ptr& o) {
    intrusive_ptr(o).swap(*this);
    return *this;
  }
  intrusive_ptr& operator=(intrusive_ptr&& o) noexcept {
    intrusive_ptr(std::move(o)).swap(*this);
    return *this;
  }
  void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }
  void reset() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const intrusive_ptr& o) const { return p_ == o.p_; }
  uint32_t use_count() const { return p_ ? p_->use_count() : 0; }

  template <typename... Args>
  static intrusive_ptr make(Args&&... args) {
    return intrusive_ptr(new T(std::forward<Args>(args)...));
  }

 private:
  void retain() {
    if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  T* p_ = nullptr;
};

template <typename T, typename... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>::make(std::forward<Args>(args)...);
}

}  // namespace retorch
