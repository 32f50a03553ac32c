// Python bindings of retorch::distributed (_C._distributed): the default process group's
// functions, wrapped torch-style by retorch/distributed.py.
#include "python/src/bindings.h"
#include "retorch/distributed/ProcessGroup.h"

namespace retorch::python {

void bind_distributed(py::module_& m) {
  namespace d = retorch::distributed;
  py::module_ c = m.def_submodule("_distributed", "the process group behind retorch.distributed");
  c.def("init_process_group", &d::init_process_group, py::arg("backend"), py::arg("rank") = 0,
        py::arg("world_size") = 1);
  c.def("is_initialized", &d::is_initialized);
  c.def("destroy_process_group", &d::destroy_process_group);
  c.def("get_rank", &d::get_rank);
  c.def("get_world_size", &d::get_world_size);
  c.def("get_backend", [] { return d::default_group().backend(); });
  // op: 0 SUM, 1 PRODUCT, 2 MAX, 3 MIN, 4 AVG (ReduceOp's order)
  c.def("all_reduce", [](const Tensor& t, int op) {
    RT_CHECK_VALUE(op >= 0 && op <= 4, "all_reduce: unknown op ", op);
    d::all_reduce(t, d::ReduceOp(op));
  });
  c.def("broadcast", &d::broadcast);
  c.def("barrier", &d::barrier);
  c.def("is_nccl_available", &d::is_nccl_available);
}

}  // namespace retorch::python
