"""Recurrent layers: RNN, LSTM and GRU (the time loop runs in C++) and their single-step cells."""
import math
import numbers

from ... import _C
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .linear import _factory
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
           "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    """Parameters named and ordered like torch's (weight_ih_l0, ..., weight_hr_l0_reverse);
    forward hands them to the C++ time loop (Note [RNN time loop] in retorch/nn/RNN.cpp)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be an integer greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, \
            proj_size
        kw = _factory(device, dtype)
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                layer_in = input_size if layer == 0 else real_hidden * dirs
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_in)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(_C.empty(shape, **kw)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [self._parameters[n] for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional
                                                                   else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self):
        pass

    def _run(self, input, h0, c0):
        packed = isinstance(input, PackedSequence)
        out, h, c = _C._nn.rnn_forward(
            type(self).__name__, self.mode, tuple(input) if packed else input, h0, c0,
            self._flat_weights, self.input_size, self.hidden_size, self.num_layers, self.bias,
            self.batch_first, self.dropout, self.training, self.bidirectional, self.proj_size)
        return (PackedSequence(*out) if packed else out), h, c

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def forward(self, input, hx=None):
        out, h, _ = self._run(input, hx, None)
        return out, h


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        h0, c0 = hx if hx is not None else (None, None)
        out, h, c = self._run(input, h0, c0)
        return out, (h, c)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        out, h, _ = self._run(input, hx, None)
        return out, h


class RNNCellBase(Module):
    """The parameters of RNNCell, LSTMCell and GRUCell: num_chunks gate blocks of hidden_size
    rows in weight_ih, weight_hh, bias_ih and bias_hh."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(_C.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(_C.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(_C.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(_C.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _gates(self, input, hx):
        return (_C.linear(input, self.weight_ih, self.bias_ih),
                _C.linear(hx, self.weight_hh, self.bias_hh))

    def _batched(self, input, hx, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _C.zeros((input.shape[0], self.hidden_size), dtype=input.dtype)
        elif not batched:
            hx = hx.unsqueeze(0)
        return input, hx, batched

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, hx, batched = self._batched(input, hx, "RNNCell")
        gi, gh = self._gates(input, hx)
        h = (gi + gh).tanh() if self.nonlinearity == "tanh" else (gi + gh).relu()
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        h0, c0 = hx if hx is not None else (None, None)
        input, h0, batched = self._batched(input, h0, "LSTMCell")
        if c0 is None:
            c0 = _C.zeros_like(h0)
        elif not batched:
            c0 = c0.unsqueeze(0)
        gi, gh = self._gates(input, h0)
        i, f, g, o = (gi + gh).chunk(4, 1)
        c = f.sigmoid() * c0 + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, batched = self._batched(input, hx, "GRUCell")
        gi, gh = self._gates(input, hx)
        ir, iz, in_ = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        h = n + z * (hx - n)
        return h if batched else h.squeeze(0)
