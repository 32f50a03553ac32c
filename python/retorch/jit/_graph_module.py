"""What traced and frozen modules share: the forward graph (and its code), calling, and the
module's parameters and buffers as iterators."""


class GraphModuleAccessors:
    """Mixin over self._c (the forward ScriptModule, or None when only other methods were
    traced), self._named_parameters and self._named_buffers."""

    def _forward_c(self):
        if self._c is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'forward'")
        return self._c

    @property
    def graph(self):
        return self._forward_c().graph

    @property
    def code(self):
        return self._forward_c().code

    def __call__(self, *inputs):
        return self.forward(*inputs)

    def named_parameters(self):
        return iter(self._named_parameters)

    def parameters(self):
        return iter(p for _, p in self._named_parameters)

    def named_buffers(self):
        return iter(self._named_buffers)

    def buffers(self):
        return iter(b for _, b in self._named_buffers)
