// The table of direct kernels (see DirectKernel.h): written while the dispatcher is built,
// read-only afterwards.
#include "retorch/dispatch/DirectKernel.h"

#include <unordered_map>

namespace retorch {

namespace {
struct Key {
  const OperatorHandle* op;
  DispatchKey k;
  bool operator==(const Key& o) const { return op == o.op && k == o.k; }
};
struct KeyHash {
  size_t operator()(const Key& key) const {
    return std::hash<const void*>()(key.op) * 31 + size_t(key.k);
  }
};
std::unordered_map<Key, DirectKernel, KeyHash>& table() {
  static auto* t = new std::unordered_map<Key, DirectKernel, KeyHash>();
  return *t;
}
}  // namespace

void register_direct_kernel(const OperatorHandle& op, DispatchKey k, DirectKernel f) {
  table()[Key{&op, k}] = f;
}

DirectKernel direct_kernel(const OperatorHandle& op, DispatchKey k) {
  auto it = table().find(Key{&op, k});
  return it == table().end() ? nullptr : it->second;
}

}  // namespace retorch
