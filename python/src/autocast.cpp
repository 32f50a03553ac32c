// Bindings of autocast's per-thread state (retorch/ops/Autocast.h) for retorch.autocast.
#include "python/src/bindings.h"
#include "retorch/ops/Autocast.h"

namespace retorch::python {

void bind_autocast(py::module_& m) {
  auto type = [](const std::string& device_type) { return Device(device_type).type; };
  m.def("_autocast_is_enabled",
        [type](const std::string& d) { return autocast::is_enabled(type(d)); });
  m.def("_autocast_set_enabled",
        [type](const std::string& d, bool on) { autocast::set_enabled(type(d), on); });
  m.def("_autocast_get_dtype", [type](const std::string& d) { return autocast::get_dtype(type(d)); });
  m.def("_autocast_set_dtype",
        [type](const std::string& d, ScalarType t) { autocast::set_dtype(type(d), t); });
  m.def("is_autocast_cache_enabled", &autocast::is_cache_enabled);
  m.def("set_autocast_cache_enabled", &autocast::set_cache_enabled);
  m.def("clear_autocast_cache", &autocast::clear_cache);
  m.def("autocast_increment_nesting", &autocast::increment_nesting);
  m.def("autocast_decrement_nesting", &autocast::decrement_nesting);
}

}  // namespace retorch::python
