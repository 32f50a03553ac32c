// retorch._C._data: C++ datasets, transforms and the DataLoader for Python (see retorch/data.py).
#include "python/src/bindings.h"
#include "retorch/data/DataLoader.h"
#include "retorch/data/Idx.h"
#include "retorch/data/Mnist.h"
#include "retorch/data/Transforms.h"

namespace retorch::python {

namespace {

using namespace retorch::data;

/// A Python iterator over one epoch; holds the C++ iterator (and so the epoch's workers).
struct PyLoaderIter {
  DataLoader::Iterator it;
  bool started = false;
};

py::tuple as_tuple(const Example& e) { return py::make_tuple(e.data, e.target); }

}  // namespace

void bind_data(py::module_& m) {
  py::module_ d = m.def_submodule("_data", "datasets and DataLoader (see retorch.data)");
  d.def("read_idx", &read_idx, py::arg("path"), py::call_guard<py::gil_scoped_release>());

  py::class_<Dataset, std::shared_ptr<Dataset>>(d, "Dataset")
      .def("__len__", &Dataset::size)
      .def("__getitem__", [](const Dataset& ds, int64_t i) {
        if (i < 0) i += ds.size();
        return as_tuple(ds.get(i));
      })
      .def("map", &Dataset::map, py::arg("transform"));
  py::class_<TensorDataset, Dataset, std::shared_ptr<TensorDataset>>(d, "TensorDataset")
      .def(py::init<Tensor, Tensor>(), py::arg("data"), py::arg("targets"))
      .def_property_readonly("data", &TensorDataset::data)
      .def_property_readonly("targets", &TensorDataset::targets);
  py::class_<MNIST, TensorDataset, std::shared_ptr<MNIST>>(d, "MNIST")
      .def(py::init<const std::string&, bool>(), py::arg("root"), py::arg("train") = true,
           py::call_guard<py::gil_scoped_release>());
  py::class_<FashionMNIST, MNIST, std::shared_ptr<FashionMNIST>>(d, "FashionMNIST")
      .def(py::init<const std::string&, bool>(), py::arg("root") = FashionMNIST::kDefaultRoot,
           py::arg("train") = true, py::call_guard<py::gil_scoped_release>());

  py::class_<Transform, std::shared_ptr<Transform>>(d, "Transform")
      .def("__call__", [](const Transform& t, const Tensor& x, uint64_t seed) {
        Generator g(seed);
        return t.apply(x, g);
      }, py::arg("x"), py::arg("seed") = 0)
      .def("__repr__", &Transform::name);
  py::class_<Normalize, Transform, std::shared_ptr<Normalize>>(d, "Normalize")
      .def(py::init<std::vector<double>, std::vector<double>>(), py::arg("mean"), py::arg("std"));
  py::class_<RandomCrop, Transform, std::shared_ptr<RandomCrop>>(d, "RandomCrop")
      .def(py::init<int64_t, int64_t, int64_t>(), py::arg("height"), py::arg("width"),
           py::arg("padding") = 0);
  py::class_<RandomHorizontalFlip, Transform, std::shared_ptr<RandomHorizontalFlip>>(
      d, "RandomHorizontalFlip")
      .def(py::init<double>(), py::arg("p") = 0.5);
  py::class_<Compose, Transform, std::shared_ptr<Compose>>(d, "Compose")
      .def(py::init<std::vector<std::shared_ptr<Transform>>>(), py::arg("transforms"));

  py::class_<PyLoaderIter>(d, "_LoaderIter")
      .def("__iter__", [](PyLoaderIter& self) -> PyLoaderIter& { return self; })
      .def("__next__", [](PyLoaderIter& self) {
        Example batch;
        {
          py::gil_scoped_release no_gil;  // waiting for a worker must not block other threads
          if (self.started && self.it != DataLoader::Iterator()) ++self.it;
          self.started = true;
          if (self.it != DataLoader::Iterator()) batch = *self.it;
        }
        if (!batch.data.defined()) throw py::stop_iteration();
        return as_tuple(batch);
      });
  py::class_<DataLoader>(d, "DataLoader")
      .def(py::init([](std::shared_ptr<Dataset> ds, int64_t batch_size, bool shuffle,
                       bool drop_last, int64_t num_workers, int64_t prefetch, uint64_t seed) {
             return DataLoader(std::move(ds), DataLoaderOptions(batch_size)
                                                  .shuffle(shuffle)
                                                  .drop_last(drop_last)
                                                  .num_workers(num_workers)
                                                  .prefetch(prefetch)
                                                  .seed(seed));
           }),
           py::arg("dataset"), py::arg("batch_size") = 1, py::arg("shuffle") = false,
           py::arg("drop_last") = false, py::arg("num_workers") = 0, py::arg("prefetch") = 2,
           py::arg("seed") = 0)
      .def("__len__", &DataLoader::size)
      .def("set_epoch", &DataLoader::set_epoch, py::arg("epoch"))
      .def_property_readonly("epoch", &DataLoader::epoch)
      .def("__iter__", [](DataLoader& l) { return PyLoaderIter{l.begin(), false}; },
           py::keep_alive<0, 1>());
}

}  // namespace retorch::python
