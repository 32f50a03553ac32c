// OrderedDict: a string-keyed map that keeps insertion order (state dicts, parameters, modules).
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "retorch/core/Error.h"

namespace retorch {

/// Insertion-ordered map from string keys to values, like torch::OrderedDict.
template <typename V>
class OrderedDict {
 public:
  struct Item {
    std::string key;
    V value;
  };

  OrderedDict() = default;
  explicit OrderedDict(std::string key_description) : what_(std::move(key_description)) {}

  /// Adds a new key; a duplicate key is an error naming the key.
  V& insert(std::string key, V value) {
    RT_CHECK(index_.count(key) == 0, what_, " '", key, "' already defined");
    index_.emplace(key, items_.size());
    items_.push_back({std::move(key), std::move(value)});
    return items_.back().value;
  }
  /// Adds or replaces.
  V& insert_or_assign(const std::string& key, V value) {
    auto it = index_.find(key);
    if (it == index_.end()) return insert(key, std::move(value));
    return items_[it->second].value = std::move(value);
  }

  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  const V* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value;
  }
  V* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value;
  }
  const V& operator[](const std::string& key) const {
    const V* v = find(key);
    RT_CHECK(v != nullptr, "no ", what_, " named '", key, "'");
    return *v;
  }
  V& operator[](const std::string& key) {
    V* v = find(key);
    RT_CHECK(v != nullptr, "no ", what_, " named '", key, "'");
    return *v;
  }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const std::vector<Item>& items() const { return items_; }
  std::vector<Item>& items() { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& it : items_) out.push_back(it.key);
    return out;
  }
  std::vector<V> values() const {
    std::vector<V> out;
    for (const auto& it : items_) out.push_back(it.value);
    return out;
  }
  void clear() {
    items_.clear();
    index_.clear();
  }

 private:
  std::string what_ = "key";
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace retorch
