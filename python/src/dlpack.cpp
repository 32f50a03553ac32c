// DLPack export (Tensor.__dlpack__) and import: zero-copy exchange with numpy, torch, ...
#include <dlpack/dlpack.h>

#include "python/src/bindings.h"

namespace retorch::python {

namespace {

// DLPack 0.8 added a bool type code; Debian's header (0.6) predates it. numpy >= 1.25 and
// torch >= 2.1 use this value, so bool tensors travel as bool rather than as uint8.
constexpr uint8_t kDLBoolCode = 6;

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

DLDataType to_dl_dtype(ScalarType t) {
  DLDataType dt{0, uint8_t(element_size(t) * 8), 1};
  switch (t) {
    case kBool: dt.code = kDLBoolCode; break;
    case kByte: dt.code = kDLUInt; break;
    case kChar: case kShort: case kInt: case kLong: dt.code = kDLInt; break;
    case kHalf: case kFloat: case kDouble: dt.code = kDLFloat; break;
    case kBFloat16: dt.code = kDLBfloat; break;
    default: RT_ERROR("__dlpack__: dtype ", t, " has no DLPack equivalent");
  }
  return dt;
}

ScalarType from_dl_dtype(DLDataType dt) {
  RT_CHECK(dt.lanes == 1, "from_dlpack: vector types (lanes=", dt.lanes,
                ") are not supported");
  auto pick = [&](std::initializer_list<std::pair<int, ScalarType>> table) -> ScalarType {
    for (auto& [bits, t] : table)
      if (dt.bits == bits) return t;
    RT_ERROR("from_dlpack: unsupported DLPack dtype (code ", int(dt.code), ", bits ",
                  int(dt.bits), ")");
  };
  switch (dt.code) {
    case kDLInt: return pick({{8, kChar}, {16, kShort}, {32, kInt}, {64, kLong}});
    case kDLUInt: return pick({{8, kByte}});
    case kDLFloat: return pick({{16, kHalf}, {32, kFloat}, {64, kDouble}});
    case kDLBfloat: return pick({{16, kBFloat16}});
    case kDLBoolCode: return pick({{8, kBool}});
    default:
      RT_ERROR("from_dlpack: unsupported DLPack dtype (code ", int(dt.code), ", bits ",
                    int(dt.bits), "); retorch reads bool, uint8, int8/16/32/64, float16/32/64 and "
                    "bfloat16");
  }
}

// Note [DLPack lifetime]
// The exported DLManagedTensor owns a retorch Tensor (a reference to its TensorImpl and storage)
// plus the shape/stride arrays; the consumer calls `deleter` when it is done, from any thread
// and possibly without the GIL, which is fine because nothing here touches Python. An imported
// tensor owns the producer's DLManagedTensor through its storage deleter, which takes the GIL
// because producers such as numpy drop Python references in their deleters.
struct ExportCtx {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

py::capsule to_dlpack(const Tensor& self, const py::object& stream) {
  RT_CHECK_TYPE(stream.is_none() || py::isinstance<py::int_>(stream),
                "__dlpack__: stream must be None or an int, got ",
                std::string(py::str(py::type::of(stream))));
  RT_CHECK(!self.requires_grad(), "Can't export tensors that require gradient, use "
           "tensor.detach()");
  RT_CHECK(self.is_cpu(), "__dlpack__: only CPU tensors can be exported, got a tensor on ",
                self.device());
  auto* ctx = new ExportCtx{self, self.sizes().vec(), self.strides().vec(), {}};
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = self.data_ptr();  // already includes the storage offset, as torch exports it
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = int32_t(self.dim());
  dl.dtype = to_dl_dtype(self.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](DLManagedTensor* m) { delete static_cast<ExportCtx*>(m->manager_ctx); };
  // An unconsumed capsule frees the export; a consumer renames it and owns the DLManagedTensor.
  PyObject* cap = PyCapsule_New(&ctx->managed, kCapsuleName, [](PyObject* c) {
    if (!PyCapsule_IsValid(c, kCapsuleName)) return;  // consumed ("used_dltensor")
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, kCapsuleName));
    if (m && m->deleter) m->deleter(m);
    PyErr_Restore(type, value, tb);
  });
  if (!cap) {
    delete ctx;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

void call_producer_deleter(DLManagedTensor* m) {
  if (!m->deleter) return;
  // At interpreter shutdown the GIL cannot be taken; leaking the buffer is the safe choice.
  if (!Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  m->deleter(m);
}

Tensor from_dlpack_capsule(const py::object& obj) {
  PyObject* cap = obj.ptr();
  RT_CHECK_TYPE(PyCapsule_CheckExact(cap), "from_dlpack: expected an object with __dlpack__ or "
                "a DLPack capsule, got ", std::string(py::str(py::type::of(obj))));
  RT_CHECK(!PyCapsule_IsValid(cap, kUsedCapsuleName),
                 "from_dlpack: this DLPack capsule was already consumed; a capsule can be "
                 "imported once");
  RT_CHECK(PyCapsule_IsValid(cap, kCapsuleName), "from_dlpack: expected a capsule named "
                 "'dltensor', got '", PyCapsule_GetName(cap) ? PyCapsule_GetName(cap) : "", "'");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, kCapsuleName));
  if (!m) throw py::error_already_set();
  const DLTensor& dl = m->dl_tensor;
  // Validate before taking ownership: on error the capsule still owns the producer's memory.
  RT_CHECK(dl.device.device_type == kDLCPU || dl.device.device_type == kDLCUDAHost,
                "from_dlpack: unsupported device type ", int(dl.device.device_type),
                " (retorch imports CPU memory only)");
  ScalarType dtype = from_dl_dtype(dl.dtype);
  RT_CHECK(dl.ndim >= 0, "from_dlpack: negative ndim ", dl.ndim);
  std::vector<int64_t> sizes(dl.shape, dl.shape + dl.ndim);
  std::vector<int64_t> strides(sizes.size());
  if (dl.strides) {
    std::copy(dl.strides, dl.strides + dl.ndim, strides.begin());
  } else {
    DimVector c = contiguous_strides(sizes);
    std::copy(c.begin(), c.end(), strides.begin());
  }
  int64_t numel = 1;
  for (int32_t d = 0; d < dl.ndim; ++d) {
    RT_CHECK(sizes[size_t(d)] >= 0, "from_dlpack: negative size in dim ", d);
    numel *= sizes[size_t(d)];
  }
  for (int32_t d = 0; d < dl.ndim; ++d)
    RT_CHECK(strides[size_t(d)] >= 0 || numel == 0 || sizes[size_t(d)] == 1,
                   "from_dlpack: negative strides are not supported (dim ", d, " has stride ",
                   strides[size_t(d)], "); copy the array first");
  if (numel == 0) {
    // Nothing to share; the producer's buffer may even be null.
    PyCapsule_SetName(cap, kUsedCapsuleName);
    call_producer_deleter(m);
    return make_empty(sizes, dtype);
  }
  for (int64_t& s : strides)
    if (s < 0) s = 0;  // a size-1 dim's stride is never used
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  if (PyCapsule_SetName(cap, kUsedCapsuleName) != 0) throw py::error_already_set();
  // See Note [DLPack lifetime].
  return from_blob(data, sizes, strides, dtype, [m](void*) { call_producer_deleter(m); });
}

}  // namespace

void bind_dlpack(py::module_& m, py::class_<Tensor>& cls) {
  cls.def("__dlpack__", &to_dlpack, py::arg("stream") = py::none(),
          "A DLPack capsule sharing this tensor's memory (zero-copy)");
  cls.def("__dlpack_device__", [](const Tensor& t) {
    RT_CHECK(t.is_cpu(), "__dlpack_device__: only CPU tensors can be exported, got ",
                  t.device());
    return py::make_tuple(int(kDLCPU), 0);
  });
  m.def("_to_dlpack", [](const Tensor& t) { return to_dlpack(t, py::none()); },
        "A DLPack capsule sharing the tensor's memory");
  m.def("_from_dlpack_capsule", &from_dlpack_capsule, py::arg("capsule"),
        "A tensor sharing the memory described by a 'dltensor' capsule (which gets consumed)");
}

}  // namespace retorch::python
