// ArrayRef (a non-owning view of a contiguous array) and SmallVector (inline storage for shapes).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <type_traits>
#include <vector>

namespace retorch {

template <typename T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}
  constexpr ArrayRef(const T* data, size_t n) : data_(data), size_(n) {}
  constexpr ArrayRef(const T* b, const T* e) : data_(b), size_(e - b) {}
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
  // Like c10::ArrayRef: valid only until the end of the full-expression holding the list.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  constexpr ArrayRef(const std::initializer_list<T>& l)
      : data_(l.begin() == l.end() ? nullptr : l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
  template <typename Container,
            typename = decltype(std::declval<const Container&>().data()),
            typename = std::enable_if_t<std::is_same_v<
                std::remove_const_t<std::remove_pointer_t<
                    decltype(std::declval<const Container&>().data())>>, T>>>
  ArrayRef(const Container& c) : data_(c.data()), size_(c.size()) {}

  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }
  ArrayRef slice(size_t start, size_t n) const { return ArrayRef(data_ + start, n); }
  ArrayRef slice(size_t start) const { return ArrayRef(data_ + start, size_ - start); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  // A plain loop: std::equal on integers becomes a memcmp call, whose call and setup cost more
  // than the comparison of the few sizes and strides it is used for (7.5% of three small ops).
  bool equals(ArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == o.data_[i])) return false;
    return true;
  }
  bool operator==(ArrayRef o) const { return equals(o); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

using IntArrayRef = ArrayRef<int64_t>;

template <typename T>
std::ostream& operator<<(std::ostream& os, ArrayRef<T> a) {
  os << "[";
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << "]";
}

/// A vector of trivially copyable T that keeps up to N elements inline (no heap).
template <typename T, unsigned N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  using value_type = T;
  SmallVector() = default;
  SmallVector(size_t n, T v = T()) { resize(n, v); }
  SmallVector(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  SmallVector(ArrayRef<T> a) { assign(a.begin(), a.end()); }
  template <typename It>
  SmallVector(It b, It e) { assign(b, e); }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { move_from(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      move_from(o);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  template <typename It>
  void assign(It b, It e) {
    size_t n = std::distance(b, e);
    reserve(n);
    std::copy(b, e, data_);
    size_ = n;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = std::max<size_t>(n, cap_ * 2);
    T* p = static_cast<T*>(std::malloc(cap * sizeof(T)));
    if (size_) std::memcpy(p, data_, size_ * sizeof(T));
    release();
    data_ = p;
    cap_ = cap;
  }
  void resize(size_t n, T v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  void push_back(T v) {
    if (size_ == cap_) reserve(size_ + 1);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void insert(const T* pos, T v) {
    size_t i = pos - data_;
    push_back(v);
    std::memmove(data_ + i + 1, data_ + i, (size_ - 1 - i) * sizeof(T));
    data_[i] = v;
  }
  void erase(const T* pos) {
    size_t i = pos - data_;
    std::memmove(data_ + i, data_ + i + 1, (size_ - 1 - i) * sizeof(T));
    --size_;
  }
  void clear() { size_ = 0; }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  operator ArrayRef<T>() const { return ArrayRef<T>(data_, size_); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool operator==(const SmallVector& o) const { return ArrayRef<T>(*this) == ArrayRef<T>(o); }

 private:
  void release() {
    if (data_ != inline_) std::free(data_);
    data_ = inline_;
    cap_ = N;
  }
  void move_from(SmallVector& o) {
    if (o.data_ == o.inline_) {
      data_ = inline_;
      cap_ = N;
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(T));
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  T* data_ = inline_;
  uint32_t size_ = 0;
  uint32_t cap_ = N;
  T inline_[N];
};

using DimVector = SmallVector<int64_t, 5>;

template <typename T, unsigned N>
std::ostream& operator<<(std::ostream& os, const SmallVector<T, N>& v) {
  return os << ArrayRef<T>(v);
}
template <typename T>
std::ostream& operator<<(std::ostream& os, const std::vector<T>& v) {
  return os << ArrayRef<T>(v);
}

}  // namespace retorch
